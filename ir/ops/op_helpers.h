// Helpers shared by the op families' shape functions and reference kernels.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "ir/tensor.h"

namespace kiln {

// Numpy-style multidirectional broadcast of two shapes; throws InputError if incompatible.
Shape broadcast_shapes(const Shape& a, const Shape& b);

// Maps a possibly negative axis into [0, rank); throws InputError naming `what` if out of range.
int64_t normalize_axis(int64_t axis, int64_t rank, const std::string& what = "axis");

// For each element of `out_shape`, the flat index into a tensor of `in_shape` broadcast to it.
std::vector<int64_t> broadcast_index_map(const Shape& in_shape, const Shape& out_shape);

// Throws InputError unless operands i and j have the same dtype.
void require_same_dtype(const Node& node, size_t i, size_t j);

// Type of operand i.
inline const TensorType& operand_type(const Node& node, size_t i) {
  return node.operand(i)->type();
}

}  // namespace kiln
