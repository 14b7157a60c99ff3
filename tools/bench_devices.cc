// kiln bench --devices (bench_devices.h).
#include "tools/bench_devices.h"

#include <fmt/format.h>

#include <algorithm>

#include "ir/error.h"
#include "runtime/concurrent_timing.h"
#include "runtime/device_list.h"
#include "runtime/session.h"
#include "runtime/timing_stats.h"

namespace kiln::tools {
namespace {

int64_t batch_of(const Program& program) {
  if (program.inputs.empty()) return 1;
  const Shape& shape = program.buffers[program.inputs[0]].type.shape;
  return shape.empty() ? 1 : shape[0];
}

}  // namespace

std::vector<int> bench_device_list(const std::string& spec) {
  try {
    return parse_device_list(spec, cuda_device_names());
  } catch (const InputError& error) {
    throw InputError(std::string("--devices: ") + error.what());
  }
}

nlohmann::json bench_devices(const Program& program, const std::vector<int>& devices,
                             const std::vector<Tensor>& inputs, const OutputMismatch& mismatch_of,
                             int iterations, int warmup) {
  std::vector<Session> sessions;
  std::vector<Session*> all;
  nlohmann::json per_device = nlohmann::json::array();
  for (const int device : devices) {
    sessions.push_back(Session::load(program, {.device = device}));
    nlohmann::json entry = {{"device", device},
                            {"description", sessions.back().device_description()}};
    if (const std::string mismatch = mismatch_of(sessions.back().run(inputs)); !mismatch.empty()) {
      entry["mismatch"] = mismatch;
    }
    per_device.push_back(std::move(entry));
  }
  for (Session& session : sessions) all.push_back(&session);
  const ConcurrentTiming alone = time_concurrently({all[0]}, iterations, warmup);
  const ConcurrentTiming together =
      all.size() > 1 ? time_concurrently(all, iterations, warmup) : alone;
  for (size_t i = 0; i < all.size(); ++i) {
    per_device[i]["median_ms"] = percentile(together.milliseconds[i], 0.5);
    per_device[i]["p90_ms"] = percentile(together.milliseconds[i], 0.9);
  }
  const double batch = static_cast<double>(batch_of(program));
  const double one = batch * iterations / alone.wall_seconds;
  const double every = batch * iterations * static_cast<double>(all.size()) / together.wall_seconds;
  return {{"batch", batch_of(program)},
          {"iterations", iterations},
          {"per_device", std::move(per_device)},
          {"one_device_inferences_per_s", one},
          {"inferences_per_s", every},
          {"scaling", every / one}};
}

std::string devices_table(const std::string& variant, const nlohmann::json& figures) {
  const nlohmann::json& per_device = figures["per_device"];
  std::string table = fmt::format(
      "{} on {} device{} at once (one Session and host thread each), batch {}, {} replays each\n",
      variant, per_device.size(), per_device.size() == 1 ? "" : "s",
      figures["batch"].get<int64_t>(), figures["iterations"].get<int>());
  table += fmt::format("{:<48} {:>10} {:>10}\n", "device", "median ms", "p90 ms");
  for (const nlohmann::json& device : per_device) {
    table += fmt::format("{:<48} {:>10.4f} {:>10.4f}\n",
                         device["description"].get<std::string>(),
                         device["median_ms"].get<double>(), device["p90_ms"].get<double>());
    if (device.contains("mismatch")) {
      table += fmt::format("{:<48} MISMATCH with the CPU reference: {}\n", "",
                           device["mismatch"].get<std::string>());
    }
  }
  table += fmt::format("{:<48} {:>10.1f} inferences/s\n",
                       "one device (" + per_device[0]["description"].get<std::string>() + ")",
                       figures["one_device_inferences_per_s"].get<double>());
  if (per_device.size() > 1) {
    table += fmt::format("{:<48} {:>10.1f} inferences/s ({:.2f}x one device)\n",
                         fmt::format("{} devices at once", per_device.size()),
                         figures["inferences_per_s"].get<double>(),
                         figures["scaling"].get<double>());
  }
  return table;
}

}  // namespace kiln::tools
