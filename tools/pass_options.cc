// Pass options shared by kiln opt, dump-ir, run (and the precision options of test-onnx).
#include "tools/pass_options.h"

#include <CLI/CLI.hpp>
#include <iostream>

#include "ir/error.h"
#include "passes/fuse_kernels.h"
#include "passes/fuse_siblings.h"
#include "passes/pipeline.h"

namespace kiln::tools {

bool PrecisionOptions::requested() const {
  return precision != "fp32" || io_precision != "declared" || !keep_fp32.empty();
}

void PrecisionOptions::apply(PipelineOptions& pipeline) const {
  pipeline.precision = passes::parse_precision(precision);
  pipeline.io_dtype = passes::parse_io_precision(io_precision);
  pipeline.keep_fp32 = {keep_fp32.begin(), keep_fp32.end()};
  check_pipeline_options(pipeline);
}

PipelineOptions PassOptions::pipeline() const {
  PipelineOptions pipeline;
  precision.apply(pipeline);
  pipeline.disabled_passes = {disabled.begin(), disabled.end()};
  pipeline.print_after = {print_after.begin(), print_after.end()};
  pipeline.time_passes = time_passes;
  pipeline.dump = &std::cerr;
  return pipeline;
}

void PassOptions::print_refusals(const std::vector<std::string>& refusals) const {
  for (const std::string& refusal : refusals) {
    const bool from_fusion = refusal.starts_with(std::string(passes::FuseKernels::kName) + ":") ||
                             refusal.starts_with(std::string(passes::FuseSiblings::kName) + ":") ||
                             refusal.starts_with("concat-views:");
    if (explain_refusals || (explain_fusion && from_fusion)) std::cerr << refusal << "\n";
  }
}

void add_precision_options(CLI::App& command, PrecisionOptions& options) {
  command
      .add_option("--precision", options.precision,
                  "fp32 (default), tf32 (conv and matrix products round their operands to TF32), "
                  "fp16 or bf16 (conv and matrix products in 16 bits, normalizations, softmax, "
                  "reductions and exp/log/pow/erf in f32); applied by the mixed-precision pass "
                  "at the fused stage")
      ->check(CLI::IsMember({"fp32", "tf32", "fp16", "bf16"}));
  command
      .add_option("--io-precision", options.io_precision,
                  "declared (default: graph inputs and outputs keep their dtypes), fp16 or bf16 "
                  "(f32 inputs and outputs take that dtype; inputs must then be given in it); "
                  "needs --precision fp16 or bf16")
      ->check(CLI::IsMember({"declared", "fp16", "bf16"}));
  command
      .add_option("--keep-fp32", options.keep_fp32,
                  "Keep these kiln ops in f32 whatever the precision: OP,OP (e.g. matmul,gelu)")
      ->delimiter(',');
}

void add_pass_options(CLI::App& command, PassOptions& options) {
  command
      .add_option("--print-after", options.print_after,
                  "Print the IR to stderr after these passes (or 'all': after each pass "
                  "that changed it, naming the others)")
      ->delimiter(',');
  command.add_option("--disable-pass", options.disabled, "Skip these passes")->delimiter(',');
  command.add_flag("--time-passes", options.time_passes, "Report each pass's time on stderr");
  command.add_flag("--explain-refusals", options.explain_refusals,
                   "Print why passes refused rewrites (pass: node: reason) on stderr");
  command.add_flag("--explain-fusion", options.explain_fusion,
                   "Print why the fusion passes refused to fuse (consumer, producer, reason) on "
                   "stderr");
  add_precision_options(command, options.precision);
}

void add_stage_options(CLI::App& command, StageOptions& options) {
  command
      .add_option("--stage", options.stage,
                  "imported (as imported, the default), optimized (canonicalized) or fused (after "
                  "the whole pass pipeline: mixed precision and fusion too; the default when "
                  "--precision, --io-precision, --keep-fp32 or an option about passes is given)")
      ->check(CLI::IsMember({"imported", "optimized", "fused"}));
  add_pass_options(command, options.pass_options);
}

std::string PassOptions::first_given() const {
  if (!print_after.empty()) return "--print-after";
  if (!disabled.empty()) return "--disable-pass";
  if (time_passes) return "--time-passes";
  if (explain_refusals) return "--explain-refusals";
  if (explain_fusion) return "--explain-fusion";
  return "";
}

void apply_stage(Graph& graph, const StageOptions& options) {
  const bool precision = options.pass_options.precision.requested();
  // Options about passes act only where passes run: without --stage they take the whole pipeline.
  const std::string pass_option = options.pass_options.first_given();
  const passes::Stage stage = !options.stage.empty() ? passes::parse_stage(options.stage)
                              : precision || !pass_option.empty() ? passes::Stage::kFused
                                                                  : passes::Stage::kImported;
  if (!pass_option.empty() && stage == passes::Stage::kImported) {
    throw InputError(pass_option +
                     " acts on the pass pipeline, which --stage imported does not run; use "
                     "--stage optimized or fused, or leave --stage out (fused)");
  }
  if (precision && stage != passes::Stage::kFused) {
    throw InputError(
        "--precision, --io-precision and --keep-fp32 act at --stage fused (through "
        "the mixed-precision pass), not at --stage " +
        options.stage + "; leave --stage out or use --stage fused");
  }
  const PassOptions& pass_options = options.pass_options;
  pass_options.print_refusals(optimize(graph, stage, pass_options.pipeline()));
}

}  // namespace kiln::tools
