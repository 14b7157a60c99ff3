// The pass options the commands share (--stage, --print-after, --disable-pass, --time-passes,
// --explain-refusals, --explain-fusion, and the mixed-precision options --precision,
// --io-precision, --keep-fp32), as the driver's PipelineOptions (kiln/compiler.h); dumps and
// refusals go to stderr.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "kiln/compiler.h"

namespace CLI {
class App;
}

namespace kiln::tools {

// --precision fp32|tf32|fp16|bf16, --io-precision declared|fp16|bf16, --keep-fp32 OP,...: what
// the mixed-precision pass does (passes/precision_policy.h).
struct PrecisionOptions {
  std::string precision = "fp32";
  std::string io_precision = "declared";
  std::vector<std::string> keep_fp32;

  // Whether any of them differs from its default, so the mixed-precision pass has work.
  bool requested() const;
  // Sets the pipeline's precision fields and checks them (check_pipeline_options): throws
  // InputError on an op name kiln does not have or an io precision without a 16-bit precision.
  void apply(PipelineOptions& pipeline) const;
};

void add_precision_options(CLI::App& command, PrecisionOptions& options);

struct PassOptions {
  std::vector<std::string> print_after;
  std::vector<std::string> disabled;
  bool time_passes = false;
  bool explain_refusals = false;  // every pass's refusals
  bool explain_fusion = false;    // only fuse-kernels' and fuse-siblings'
  PrecisionOptions precision;

  // The driver's options for these (passes print and time to stderr); throws as apply does.
  PipelineOptions pipeline() const;
  // The first of these options given ("--print-after", ...), or "" for none.
  std::string first_given() const;
  // Prints the refusals these options ask for to stderr: all with --explain-refusals, the
  // fusion passes' with --explain-fusion.
  void print_refusals(const std::vector<std::string>& refusals) const;
};

void add_pass_options(CLI::App& command, PassOptions& options);

// --stage: which graph a command works on. "imported": as the importer built it; "optimized":
// canonicalized; "fused": after the whole pipeline (passes/pipeline.cc). Left empty it means
// "imported", or "fused" when precision or pass options (--print-after, --explain-fusion, ...)
// are given: they act on passes. Pass options with --stage imported are an InputError.
struct StageOptions {
  std::string stage;
  PassOptions pass_options;
};

void add_stage_options(CLI::App& command, StageOptions& options);
// Runs the default pipeline on `graph` when the stage asks for it. Throws InputError when
// precision options come with --stage imported or optimized.
void apply_stage(Graph& graph, const StageOptions& options);

}  // namespace kiln::tools
