// Helpers shared by the op families' shape functions and reference kernels.
#pragma once

#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include "ir/graph.h"
#include "ir/tensor.h"

namespace kiln {

// The most elements one result of a shape function may have (zero dims counted as 1), 2^40:
// far beyond any real model, and small enough that element offsets, byte sizes and the kernels'
// index arithmetic stay clear of int64 overflow and the interpreter never attempts an absurd
// allocation. The op table checks every shape function's results against it.
inline constexpr int64_t kMaxResultElements = int64_t{1} << 40;

// a * b, a + b and a - b; throw InputError "<what> overflows int64" when the exact result does
// not fit. For arithmetic on dims and attribute values in shape functions.
int64_t checked_mul(int64_t a, int64_t b, const std::string& what);
int64_t checked_add(int64_t a, int64_t b, const std::string& what);
int64_t checked_sub(int64_t a, int64_t b, const std::string& what);

// Throws InputError naming `what` (e.g. "result 0") unless every dim of `shape` is non-negative
// and the product of its non-zero dims is at most `limit`.
void check_element_count(const Shape& shape, const std::string& what,
                         int64_t limit = kMaxResultElements);

// Numpy-style multidirectional broadcast of two shapes; throws InputError if incompatible.
Shape broadcast_shapes(const Shape& a, const Shape& b);

// Maps a possibly negative axis into [0, rank); throws InputError naming `what` if out of range.
int64_t normalize_axis(int64_t axis, int64_t rank, const std::string& what = "axis");

// For each element of `out_shape`, the flat index into a tensor of `in_shape` broadcast to it.
std::vector<int64_t> broadcast_index_map(const Shape& in_shape, const Shape& out_shape);

// The product of shape[begin, end) (1 for an empty range).
int64_t product(const Shape& shape, size_t begin, size_t end);

// Throws InputError unless operands i and j have the same dtype.
void require_same_dtype(const Node& node, size_t i, size_t j);

// Type of operand i.
inline const TensorType& operand_type(const Node& node, size_t i) {
  return node.operand(i)->type();
}

// ---- Scalar math shared by the kernels -------------------------------------------------------

// Integer arithmetic that wraps like two's complement (plain math for floats).
template <class T>
T wrapping_add(T a, T b) {
  if constexpr (std::is_integral_v<T>) {
    return static_cast<T>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
  } else {
    return a + b;
  }
}
template <class T>
T wrapping_sub(T a, T b) {
  if constexpr (std::is_integral_v<T>) {
    return static_cast<T>(static_cast<uint64_t>(a) - static_cast<uint64_t>(b));
  } else {
    return a - b;
  }
}
template <class T>
T wrapping_mul(T a, T b) {
  if constexpr (std::is_integral_v<T>) {
    return static_cast<T>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b));
  } else {
    return a * b;
  }
}

// NaN test that also compiles for integer compute types (always false there).
template <class T>
bool is_nan_value(T x) {
  return x != x;
}

// max/min that propagate NaN, as numpy.maximum/minimum (and so the ONNX reference) do.
template <class T>
T max_keep_nan(T a, T b) {
  return (is_nan_value(a) || a > b) ? a : b;
}
template <class T>
T min_keep_nan(T a, T b) {
  return (is_nan_value(a) || a < b) ? a : b;
}

}  // namespace kiln
