// Pass options shared by kiln opt, dump-ir and run.
#include "tools/pass_options.h"

#include <CLI/CLI.hpp>
#include <iostream>

#include "passes/pipeline.h"

namespace kiln::tools {

void add_pass_options(CLI::App& command, PassOptions& options) {
  command
      .add_option("--print-after", options.print_after,
                  "Print the IR to stderr after these passes (or 'all')")
      ->delimiter(',');
  command.add_option("--disable-pass", options.disabled, "Skip these passes")->delimiter(',');
  command.add_flag("--time-passes", options.time_passes, "Report each pass's time on stderr");
  command.add_flag("--explain-refusals", options.explain_refusals,
                   "Print why passes refused rewrites (pass: node: reason) on stderr");
}

void add_stage_options(CLI::App& command, StageOptions& options) {
  command
      .add_option("--stage", options.stage,
                  "imported (as imported, the default), optimized (canonicalized) or fused (after "
                  "the whole pass pipeline: mixed precision and fusion too)")
      ->check(CLI::IsMember({"imported", "optimized", "fused"}));
  add_pass_options(command, options.pass_options);
}

void apply_stage(Graph& graph, const StageOptions& options) {
  const passes::Stage stage = passes::parse_stage(options.stage);
  if (stage != passes::Stage::kImported) {
    run_pipeline(graph, passes::default_pipeline(stage), options.pass_options);
  }
}

void run_pipeline(Graph& graph, const std::vector<std::unique_ptr<passes::Pass>>& pipeline,
                  const PassOptions& options) {
  passes::PassContext context;
  context.disabled = {options.disabled.begin(), options.disabled.end()};
  context.print_after = {options.print_after.begin(), options.print_after.end()};
  context.time_passes = options.time_passes;
  context.verify_each = true;
  context.dump = &std::cerr;
  passes::run_passes(graph, pipeline, context);
  if (options.explain_refusals) {
    for (const std::string& refusal : context.refusals) std::cerr << refusal << "\n";
  }
}

}  // namespace kiln::tools
