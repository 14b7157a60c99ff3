// kiln's pass order, in one place, and the pass runner.
#include "passes/pipeline.h"

#include <fmt/format.h>

#include <chrono>
#include <ostream>

#include "ir/error.h"
#include "ir/printer.h"
#include "ir/verifier.h"
#include "passes/channels_last.h"
#include "passes/common_subexpression_elimination.h"
#include "passes/dead_code_elimination.h"
#include "passes/einsum_to_matmul.h"
#include "passes/fold_batch_norm.h"
#include "passes/fold_constants.h"
#include "passes/fuse_kernels.h"
#include "passes/fuse_siblings.h"
#include "passes/hoist_narrowing_casts.h"
#include "passes/matmul_add_to_gemm.h"
#include "passes/merge_sibling_gemms.h"
#include "passes/mixed_precision.h"
#include "passes/recognize_activations.h"
#include "passes/recognize_layer_norm.h"
#include "passes/recognize_softmax.h"
#include "passes/remove_identity.h"
#include "passes/simplify_reshape_transpose.h"
#include "passes/space_to_depth_stem.h"

namespace kiln::passes {
namespace {

struct PassEntry {
  const char* name;
  std::unique_ptr<Pass> (*make)();
  Stage stage;  // the first stage whose graph this pass has run on
};

template <class P>
std::unique_ptr<Pass> make() {
  return std::make_unique<P>();
}

// The pipeline order. Canonicalization (stage "optimized") comes first; mixed precision and
// fusion (stage "fused") follow.
const std::vector<PassEntry>& pipeline_entries() {
  static const std::vector<PassEntry> entries = {
      {RemoveIdentity::kName, make<RemoveIdentity>, Stage::kOptimized},
      // Before folding, which folds the transposes and reshapes it puts on constant operands;
      // before matmul-add-to-gemm and merge-sibling-gemms, which take the matmuls it makes.
      {EinsumToMatmul::kName, make<EinsumToMatmul>, Stage::kOptimized},
      {FoldConstants::kName, make<FoldConstants>, Stage::kOptimized},
      {RecognizeActivations::kName, make<RecognizeActivations>, Stage::kOptimized},
      {RecognizeSoftmax::kName, make<RecognizeSoftmax>, Stage::kOptimized},
      {RecognizeLayerNorm::kName, make<RecognizeLayerNorm>, Stage::kOptimized},
      {MatmulAddToGemm::kName, make<MatmulAddToGemm>, Stage::kOptimized},
      {FoldBatchNorm::kName, make<FoldBatchNorm>, Stage::kOptimized},
      {MergeSiblingGemms::kName, make<MergeSiblingGemms>, Stage::kOptimized},
      {SimplifyReshapeTranspose::kName, make<SimplifyReshapeTranspose>, Stage::kOptimized},
      {CommonSubexpressionElimination::kName, make<CommonSubexpressionElimination>,
       Stage::kOptimized},
      {DeadCodeElimination::kName, make<DeadCodeElimination>, Stage::kOptimized},
      {MixedPrecision::kName, make<MixedPrecision>, Stage::kFused},
      // After mixed precision, which decides the convs that run in 16 bits; before channels-last,
      // which moves the space-to-depth input to NHWC in the same kernel as the graph input.
      {SpaceToDepthStem::kName, make<SpaceToDepthStem>, Stage::kFused},
      // After mixed precision, which decides the convs that run in 16 bits; before fusion, so
      // the transposes it leaves fuse with their neighbours.
      {ChannelsLast::kName, make<ChannelsLast>, Stage::kFused},
      // After the passes that insert casts and transposes; before fusion, so each narrowing
      // lands in its producer's kernel.
      {HoistNarrowingCasts::kName, make<HoistNarrowingCasts>, Stage::kFused},
      {FuseKernels::kName, make<FuseKernels>, Stage::kFused},
      {FuseSiblings::kName, make<FuseSiblings>, Stage::kFused},
  };
  return entries;
}

}  // namespace

std::vector<std::string> pass_names() {
  std::vector<std::string> names;
  for (const PassEntry& entry : pipeline_entries()) names.emplace_back(entry.name);
  return names;
}

std::unique_ptr<Pass> make_pass(const std::string& name) {
  std::string known;
  for (const PassEntry& entry : pipeline_entries()) {
    if (name == entry.name) return entry.make();
    known += std::string(known.empty() ? "" : ", ") + entry.name;
  }
  throw InputError("unknown pass '" + name + "' (passes: " + known + ")");
}

Stage parse_stage(const std::string& name) {
  if (name == "imported") return Stage::kImported;
  if (name == "optimized") return Stage::kOptimized;
  if (name == "fused") return Stage::kFused;
  throw InputError("unknown stage '" + name + "' (stages: imported, optimized, fused)");
}

std::vector<std::unique_ptr<Pass>> default_pipeline(Stage stage) {
  std::vector<std::unique_ptr<Pass>> passes;
  for (const PassEntry& entry : pipeline_entries()) {
    if (entry.stage <= stage) passes.push_back(entry.make());
  }
  return passes;
}

bool run_passes(Graph& graph, const std::vector<std::unique_ptr<Pass>>& passes,
                PassContext& context) {
  for (const std::string& name : context.disabled) make_pass(name);  // rejects unknown names
  for (const std::string& name : context.print_after) {
    if (name != "all") make_pass(name);
  }
  bool changed = false;
  for (const std::unique_ptr<Pass>& pass : passes) {
    const std::string name(pass->name());
    if (context.disabled.count(name)) continue;
    const auto start = std::chrono::steady_clock::now();
    const bool pass_changed = pass->run(graph, context);
    changed = pass_changed || changed;
    const double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    if (context.verify_each) {
      try {
        verify_graph(graph);
      } catch (const InputError& error) {
        throw InternalError("pass " + name + " left an invalid graph: " + error.what());
      }
    }
    if (context.dump && context.time_passes) {
      *context.dump << fmt::format("// pass {}: {:.3f} ms\n", name, ms);
    }
    // A pass named in --print-after prints the graph; "all" prints it after each pass that
    // changed it, and names the others.
    if (context.dump && context.print_after.count(name)) {
      *context.dump << "// ----- IR after " << name << "\n" << print_graph(graph);
    } else if (context.dump && context.print_after.count("all")) {
      *context.dump << "// ----- IR after " << name
                    << (pass_changed ? "\n" + print_graph(graph) : ": unchanged\n");
    }
  }
  return changed;
}

}  // namespace kiln::passes
