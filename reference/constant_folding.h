// Evaluating a node whose operands are all constants, with its reference kernel. The ONNX importer
// folds this way as it builds the graph (what makes exporters' Shape -> Gather -> Concat ->
// Reshape chains static), and so does the fold-constants pass (passes/fold_constants.h).
#pragma once

#include <cstdint>
#include <vector>

#include "ir/graph.h"
#include "ir/tensor.h"

namespace kiln {

// Results larger than this many elements stay nodes, so folding never bloats the model with big
// computed weights.
inline constexpr int64_t kMaxFoldedElements = int64_t{1} << 20;

// Whether `node` can be evaluated now: every operand is a constant with data and no result
// exceeds kMaxFoldedElements.
bool can_fold(const Node& node);
// The node's results, computed with its reference kernel.
std::vector<Tensor> fold_node(const Node& node);

}  // namespace kiln
