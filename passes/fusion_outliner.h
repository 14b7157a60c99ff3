// The fusion outliner: turns each planned group (passes/fusion_planner.h) into one fusion node
// whose body holds the group's nodes. Values the group reads from outside become the node's
// operands (in order of first use), except constants of at most kMaxInlinedConstantElements
// elements, which are copied into the body so a kernel can hold them as literals. Values the
// rest of the graph (or its outputs) reads become the node's results, keeping their names,
// except a reshape of another such value: it stays outside, a free view of that result.
#pragma once

#include <vector>

#include "passes/fusion_planner.h"

namespace kiln::passes {

inline constexpr int64_t kMaxInlinedConstantElements = 16;

// Replaces every group by a fusion node and restores topological order.
void outline_fusions(Graph& graph, const std::vector<FusionGroup>& groups);

}  // namespace kiln::passes
