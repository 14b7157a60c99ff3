// The tactic flags and their report (see the header).
#include "tools/tactic_options.h"

#include <fmt/format.h>

namespace kiln::tools {

std::optional<bool> TacticOptions::setting() const {
  if (autotune) return true;
  if (no_autotune) return false;
  return std::nullopt;
}

void add_tactic_options(CLI::App& command, TacticOptions& options) {
  CLI::Option* on = command.add_flag(
      "--autotune", options.autotune,
      "Choose each kernel's tactic (a contraction's tile, stages and split-K; attention's query "
      "rows a block; a depthwise conv's channels and columns a thread) by timing the candidates "
      "on this GPU, remembered in the tactic cache beside the kernel cache (the default with "
      "--arch native; needs it)");
  CLI::Option* off = command.add_flag("--no-autotune", options.no_autotune,
                                      "Let the heuristics choose every tactic (no GPU runs)");
  on->excludes(off);
  command
      .add_option("--tactic", options.forced,
                  "Make every kernel with several tactics take the one named TEXT, else the "
                  "first whose name contains TEXT (e.g. '128x64', 'split 2', 'mma.sync'; "
                  "--explain-tactics lists them), the others the heuristic's: no measuring")
      ->excludes(on);
  command.add_flag("--no-library-tactics", options.no_library,
                   "Offer only kiln's own kernels, not cuBLASLt (which measurement may choose "
                   "for a matmul, gemm or 1x1 conv whose epilogue it expresses: a bias, an "
                   "added tensor, ReLU)");
  command.add_flag("--explain-tactics", options.explain,
                   "Print each problem's candidate tactics, the chosen marked, with their times "
                   "where they were measured");
}

std::string tactic_summary(const AutotuneReport& report) {
  std::string text;
  if (!report.measured) {
    text = "tactics: " + report.note;
  } else if (report.sites.empty()) {
    text = "tactics: no kernel has more than one";
  } else {
    int nodes = 0;
    for (const TunedSite& site : report.sites) nodes += site.nodes;
    const size_t measured = report.sites.size() - static_cast<size_t>(report.from_cache);
    text = fmt::format("tactics: {} nodes of {} problems", nodes, report.sites.size());
    if (measured > 0) {
      text += fmt::format(
          ", {} measured in {} rounds ({:.2f} s: lowering {:.2f} s, compiling {:.2f} s, measuring "
          "{:.2f} s, waiting for compilation {:.2f} s)",
          measured, report.rounds, report.seconds, report.lower_seconds, report.compile_seconds,
          report.measure_seconds, report.wait_seconds);
    }
    if (report.from_cache > 0) text += fmt::format(", {} from the tactic cache", report.from_cache);
  }
  if (!report.whole_program.empty()) text += "\n" + report.whole_program;
  for (const std::string& warning : report.warnings) text += "\nwarning: " + warning;
  return text;
}

std::string tactic_table(const AutotuneReport& report) {
  std::string text;
  for (const TunedSite& site : report.sites) {
    text += fmt::format("{} ({} node{}{}):\n", site.label, site.nodes, site.nodes == 1 ? "" : "s",
                        site.from_cache ? ", from the tactic cache" : "");
    for (size_t t = 0; t < site.tactics.size(); ++t) {
      const double ms = site.ms[t];
      const std::string time = ms < 0 ? "not run" : fmt::format("{:.4f} ms", ms);
      text += fmt::format("  {} {:<34} {}{}\n", static_cast<int>(t) == site.chosen ? "*" : " ",
                          site.tactics[t], time, t == 0 ? "  (heuristic)" : "");
    }
    for (const std::string& note : site.notes) text += "    (" + note + ")\n";
  }
  return text;
}

}  // namespace kiln::tools
