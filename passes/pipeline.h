// The pass pipeline: kiln's pass order, passes by name, and the runner that prints, times,
// verifies and skips passes as the PassContext asks.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "passes/pass.h"

namespace kiln::passes {

// How far a graph goes through the pipeline: as imported, canonicalized ("optimized": folding,
// cleanup, pattern recognition), or all the way ("fused": mixed precision and fusion too).
enum class Stage { kImported, kOptimized, kFused };
// "imported", "optimized" or "fused" to a Stage; throws InputError on anything else.
Stage parse_stage(const std::string& name);

// Every pass kiln has, by name, in pipeline order.
std::vector<std::string> pass_names();
// A new instance of the named pass; throws InputError listing the known names.
std::unique_ptr<Pass> make_pass(const std::string& name);
// The passes that take an imported graph to `stage`, in order.
std::vector<std::unique_ptr<Pass>> default_pipeline(Stage stage = Stage::kFused);

// Runs `passes` in order on `graph`. Returns whether any changed the graph.
bool run_passes(Graph& graph, const std::vector<std::unique_ptr<Pass>>& passes,
                PassContext& context);

}  // namespace kiln::passes
