// Import-time constant folding: evaluating a node whose operands are all known constants with
// the op table's reference kernel (this is what makes exporters' Shape -> Gather -> Concat ->
// Reshape chains static).
#pragma once

#include <vector>

#include "ir/graph.h"

namespace kiln::onnx_import {

// Results larger than this many elements stay nodes, so folding never bloats the model with big
// computed weights.
inline constexpr int64_t kMaxFoldedElements = int64_t{1} << 20;

// Whether `node` can be evaluated now: its op has a reference kernel, every operand is a
// constant with data, and no result exceeds kMaxFoldedElements.
bool can_fold(const Node& node);

// The node's results, computed with its reference kernel.
std::vector<Tensor> evaluate_node(const Node& node);

}  // namespace kiln::onnx_import
