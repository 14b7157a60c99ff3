// The per-launch profile table of kiln bench --profile (see the header).
#include "tools/profile_report.h"

#include <fmt/format.h>

#include <algorithm>
#include <vector>

namespace kiln::tools {
namespace {

std::string geometry(const nlohmann::json& dims) {
  return fmt::format("{}x{}x{}", dims[0].get<uint32_t>(), dims[1].get<uint32_t>(),
                     dims[2].get<uint32_t>());
}

}  // namespace

std::string profile_table(const std::string& variant, const nlohmann::json& launches, int count) {
  std::string text;
  double total = 0;
  for (const auto& launch : launches) total += launch["ms"].get<double>();
  const size_t shown = std::min(launches.size(), static_cast<size_t>(count));
  text += fmt::format("\n{}: the {} slowest of {} launches (sum of launches {:.4f} ms)\n",
                      variant, shown, launches.size(), total);
  text += fmt::format("{:>5} {:>9} {:>6} {:>8} {:>7}  {:<34} {:>12} {:>9} {:>6}  {}\n", "step",
                      "ms", "share", "TFLOP/s", "GB/s", "kernel", "grid", "block", "smem",
                      "ONNX nodes of the kernel (all its launches); its tactic");
  for (size_t i = 0; i < shown; ++i) {
    const nlohmann::json& launch = launches[i];
    const auto nodes = launch["nodes"].get<std::vector<std::string>>();
    std::string covered;
    for (size_t n = 0; n < nodes.size() && n < 3; ++n) covered += (n ? ", " : "") + nodes[n];
    if (nodes.size() > 3) covered += fmt::format(" (+{})", nodes.size() - 3);
    const double ms = launch["ms"].get<double>();
    const auto flops = launch["flops"].get<int64_t>();
    const std::string rate = flops > 0 && ms > 0 ? fmt::format("{:.1f}", flops / ms / 1e9) : "-";
    const auto bytes = launch.value("bytes", int64_t{0});
    const std::string traffic = bytes > 0 && ms > 0 ? fmt::format("{:.0f}", bytes / ms / 1e6) : "-";
    const auto tactic = launch["tactic"].get<std::string>();
    if (!tactic.empty()) covered += "; " + tactic;
    text += fmt::format("{:>5} {:>9.4f} {:>5.1f}% {:>8} {:>7}  {:<34} {:>12} {:>9} {:>6}  {}\n",
                        launch["step"].get<size_t>(), ms, total > 0 ? 100 * ms / total : 0.0, rate,
                        traffic, launch["kernel"].get<std::string>(), geometry(launch["grid"]),
                        geometry(launch["block"]), launch["shared_bytes"].get<uint32_t>(), covered);
  }
  return text;
}

}  // namespace kiln::tools
