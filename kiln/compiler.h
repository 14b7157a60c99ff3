// The compiler driver: the one way from a model file or a Graph to a runnable Program. The kiln
// command, applications (kiln/kiln.h) and tests all call these functions; nothing else assembles
// the pipeline (frontend -> passes -> codegen -> NVRTC -> memory plan).
//
//   load_model   .onnx (imported) or .kir (kiln IR text) to a Graph
//   optimize     the pass pipeline up to a stage: imported, optimized (canonicalized) or fused
//                (mixed precision and fusion too); run_passes runs a named list instead
//   compile      a model file or Graph through the pipeline to the fused stage, lowered to CUDA
//                kernels for the target, compiled by NVRTC (through the kernel cache), its
//                intermediates placed by the memory planner
//   compile_fused  the same from a graph already at the fused stage
//   (tactics: for --arch native each contraction's tiling is chosen by timing the candidates on
//   the GPU, kiln/autotune.h, remembered in the tactic cache beside the kernel cache)
//
// Errors: InputError (bad model, options or arch; "no CUDA device" for native without one),
// UnsupportedError (ops or kernels kiln does not handle, listed at once), InternalError.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <ostream>
#include <set>
#include <string>
#include <vector>

#include "codegen/compile_program.h"
#include "kiln/autotune.h"
#include "ir/graph.h"
#include "passes/pipeline.h"
#include "passes/precision_policy.h"
#include "runtime/memory_plan.h"
#include "runtime/program.h"
#include "target/target.h"

namespace kiln {

using passes::Precision;
using passes::Stage;

// What the pass pipeline does.
struct PipelineOptions {
  // Mixed precision (passes/precision_policy.h): the precision, the dtype of float graph inputs
  // and outputs (unset: as declared), ops kept in f32 beyond the policy.
  Precision precision = Precision::kFP32;
  std::optional<DType> io_dtype;
  std::set<std::string> keep_fp32;
  // False: without fuse-kernels and fuse-siblings (one kernel per op).
  bool fusion = true;
  std::set<std::string> disabled_passes;
  // Print the graph after these passes ("all" for every one), and each pass's time, to `dump`.
  std::set<std::string> print_after;
  bool time_passes = false;
  std::ostream* dump = nullptr;
};

struct CompileOptions {
  // The GPUs to compile for: archs ("sm_80", "sm_90a", ...; a CUBIN for each, PTX for the
  // newest, the kernels generated for the newest), or {"native"}: this machine's GPU, with its
  // own figures.
  std::vector<std::string> archs = {"sm_80", "sm_90"};
  PipelineOptions pipeline;
  // Concats as views (codegen/output_placement.h): each operand's producer writes its slice of
  // the concat's buffer where it can. Off (or pipeline.fusion off): a copy kernel a concat.
  bool concat_views = true;
  // The compiled-kernel cache; empty: $KILN_CACHE_DIR, $XDG_CACHE_HOME/kiln or ~/.cache/kiln.
  std::string cache_dir;
  int threads = 0;  // kernels compiled at once; 0: one per hardware thread
  // Called after each (kernel, arch) compiled or read from the cache: done so far, total.
  std::function<void(size_t done, size_t total)> on_progress;
  // Sees the program after lowering and before NVRTC (its kernels' sources are final).
  std::function<void(const Program&)> on_lowered;
  // When set, unbound symbolic input dims become 1, with a note to it (load_model).
  std::function<void(const std::string&)> on_defaulted_dims;
  // Tactics chosen by measurement on this machine's GPU (kiln/autotune.h). Unset: measured
  // when compiling for archs {"native"}, else the heuristics choose; true: measured, an
  // InputError for other archs; false: the heuristics choose.
  std::optional<bool> autotune;
  // When not empty: every node with several tactics takes the first whose name contains this
  // text (neither measured nor the heuristic's), the others the heuristic's; for examining and
  // testing one tactic (kiln compile --tactic).
  std::string forced_tactic;
  // Library tactics (cuBLASLt) among the candidates; false: kiln's own kernels only.
  bool library_tactics = true;
};

struct CompiledModel {
  Program program;
  Target target;                // what the kernels were generated for
  codegen::CompileStats stats;  // NVRTC compilations, cache hits, seconds
  MemoryFigures memory;         // the arena against the naive sum and the lower bound
  // Why passes refused rewrites, one line each, "pass: node: reason" (--explain-refusals), then
  // why concats stayed copy kernels ("concat-views: <concat>: <why>").
  std::vector<std::string> refusals;
  int concat_views = 0;     // concats that launch no kernel (codegen/output_placement.h)
  AutotuneReport autotune;  // how the tactics were chosen
};

// Throws InputError for a keep_fp32 name the op table lacks, or an io dtype without a 16-bit
// precision. Every function taking PipelineOptions checks them first.
void check_pipeline_options(const PipelineOptions& options);

// .onnx: imported, with `input_shapes` binding symbolic input dims; .kir: parsed (shapes are in
// the text). Anything else is an InputError.
// With `on_defaulted_dims` set, symbolic input dims that `input_shapes` leaves unbound are bound
// to 1 and it is called with a note saying so (onnx_import::ImportOptions::on_defaulted_dims).
std::unique_ptr<Graph> load_model(
    const std::string& path, const std::map<std::string, Shape>& input_shapes = {},
    const std::function<void(const std::string&)>& on_defaulted_dims = {});

// Runs the default pipeline up to `stage` on `graph` (in place), verifying after each pass;
// returns the passes' refusals.
std::vector<std::string> optimize(Graph& graph, Stage stage, const PipelineOptions& options);

// Runs the named passes in order (kiln opt); returns their refusals. Throws InputError for an
// unknown pass, listing the known ones.
std::vector<std::string> run_passes(Graph& graph, const std::vector<std::string>& pass_names,
                                    const PipelineOptions& options);

// Loads, optimizes to the fused stage and compiles. For archs {"native"} the driver query runs
// beside loading and optimizing (it takes ~0.4 s on an H100 host); its error comes first.
CompiledModel compile(const std::string& model_path, const CompileOptions& options,
                      const std::map<std::string, Shape>& input_shapes = {});
// Optimizes `graph` to the fused stage (in place) and compiles it.
CompiledModel compile(Graph& graph, const CompileOptions& options);
// Compiles a graph already at the fused stage.
CompiledModel compile_fused(const Graph& fused_graph, const CompileOptions& options);

}  // namespace kiln
