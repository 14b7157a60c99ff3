// Small helpers shared by the layout ops' shape functions and kernels: index operands,
// index resolution and list formatting for error messages.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ir/error.h"
#include "ir/ops/op_helpers.h"

namespace kiln {

// "[1,2,3]", for error messages.
inline std::string ints_to_string(const std::vector<int64_t>& values) {
  return "[" + shape_to_string(values) + "]";
}

// Throws InputError unless operand i (an index tensor) is i64 or i32.
inline void require_index_operand(const Node& node, size_t i) {
  const DType dtype = operand_type(node, i).dtype;
  if (dtype != DType::kI64 && dtype != DType::kI32) {
    throw InputError("operand " + std::to_string(i) + " (indices) must be i64 or i32, got " +
                     std::string(dtype_name(dtype)));
  }
}

// Maps an index in [-dim, dim) to [0, dim); throws InputError (at run time) otherwise.
inline int64_t resolve_index(int64_t index, int64_t dim) {
  if (index < -dim || index >= dim) {
    throw InputError("index " + std::to_string(index) + " is out of range for an axis of size " +
                     std::to_string(dim));
  }
  return index < 0 ? index + dim : index;
}

}  // namespace kiln
