// The CPU reference interpreter: runs any ir::Graph node by node with the op table's reference
// kernels. It is kiln's correctness oracle: deterministic, and rounding f16/bf16 on every store
// exactly where the GPU will.
#pragma once

#include <vector>

#include "ir/graph.h"
#include "ir/tensor.h"

namespace kiln {

// Runs `graph` on `inputs` (one per graph input, in order). Throws InputError if an input's
// count, dtype or shape differs from the graph's signature, naming the input.
std::vector<Tensor> run_reference(const Graph& graph, const std::vector<Tensor>& inputs);

// Runs one node with its reference kernel on the given operand tensors; returns its results.
// Errors name the node.
std::vector<Tensor> run_node(const Node& node, const std::vector<const Tensor*>& operands);

// Checks `inputs` against the graph's signature (count, dtype, shape); throws InputError.
void check_inputs(const Graph& graph, const std::vector<Tensor>& inputs);

}  // namespace kiln
