// The pass options the commands share (--stage, --print-after, --disable-pass, --time-passes,
// --explain-refusals) and running a pipeline with them; dumps and refusals go to stderr.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "passes/pass.h"

namespace CLI {
class App;
}

namespace kiln::tools {

struct PassOptions {
  std::vector<std::string> print_after;
  std::vector<std::string> disabled;
  bool time_passes = false;
  bool explain_refusals = false;
};

void add_pass_options(CLI::App& command, PassOptions& options);

// --stage: which graph a command works on. "imported": as the importer built it; "optimized":
// canonicalized; "fused": after the whole pipeline (passes/pipeline.cc).
struct StageOptions {
  std::string stage = "imported";
  PassOptions pass_options;
};

void add_stage_options(CLI::App& command, StageOptions& options);
// Runs the default pipeline on `graph` when the stage asks for it.
void apply_stage(Graph& graph, const StageOptions& options);

// Runs `pipeline` on `graph`, verifying after each pass.
void run_pipeline(Graph& graph, const std::vector<std::unique_ptr<passes::Pass>>& pipeline,
                  const PassOptions& options);

}  // namespace kiln::tools
