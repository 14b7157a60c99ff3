// Broadcasting, axis and checked-arithmetic helpers for op shape functions and kernels.
#include "ir/ops/op_helpers.h"

#include <algorithm>

#include "ir/error.h"

namespace kiln {

int64_t checked_mul(int64_t a, int64_t b, const std::string& what) {
  int64_t result;
  if (__builtin_mul_overflow(a, b, &result)) throw InputError(what + " overflows int64");
  return result;
}

int64_t checked_add(int64_t a, int64_t b, const std::string& what) {
  int64_t result;
  if (__builtin_add_overflow(a, b, &result)) throw InputError(what + " overflows int64");
  return result;
}

int64_t checked_sub(int64_t a, int64_t b, const std::string& what) {
  int64_t result;
  if (__builtin_sub_overflow(a, b, &result)) throw InputError(what + " overflows int64");
  return result;
}

void check_element_count(const Shape& shape, const std::string& what, int64_t limit) {
  int64_t count = 1;
  for (int64_t dim : shape) {
    if (dim < 0) {
      throw InputError(what + " [" + shape_to_string(shape) + "] has a negative dimension");
    }
    if (dim > 1 && count > limit / dim) {
      throw InputError(what + " [" + shape_to_string(shape) + "] has more than " +
                       std::to_string(limit) + " elements");
    }
    count *= std::max<int64_t>(dim, 1);
  }
}

Shape broadcast_shapes(const Shape& a, const Shape& b) {
  const size_t rank = std::max(a.size(), b.size());
  Shape out(rank);
  for (size_t i = 0; i < rank; ++i) {
    const int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    const int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (da != db && da != 1 && db != 1) {
      throw InputError("shapes [" + shape_to_string(a) + "] and [" + shape_to_string(b) +
                       "] do not broadcast");
    }
    out[i] = da == 1 ? db : da;
  }
  return out;
}

int64_t normalize_axis(int64_t axis, int64_t rank, const std::string& what) {
  if (axis < -rank || axis >= rank) {
    throw InputError(what + " " + std::to_string(axis) + " is out of range for rank " +
                     std::to_string(rank));
  }
  return axis < 0 ? axis + rank : axis;
}

std::vector<int64_t> broadcast_index_map(const Shape& in_shape, const Shape& out_shape) {
  const size_t rank = out_shape.size();
  const size_t offset = rank - in_shape.size();
  const std::vector<int64_t> in_strides = row_major_strides(in_shape);
  const int64_t total = num_elements(out_shape);
  std::vector<int64_t> map(static_cast<size_t>(total));
  std::vector<int64_t> index(rank, 0);
  for (int64_t flat = 0; flat < total; ++flat) {
    int64_t source = 0;
    for (size_t d = offset; d < rank; ++d) {
      if (in_shape[d - offset] != 1) source += index[d] * in_strides[d - offset];
    }
    map[flat] = source;
    for (int64_t d = static_cast<int64_t>(rank) - 1; d >= 0; --d) {
      if (++index[d] < out_shape[d]) break;
      index[d] = 0;
    }
  }
  return map;
}

int64_t product(const Shape& shape, size_t begin, size_t end) {
  int64_t result = 1;
  for (size_t i = begin; i < end && i < shape.size(); ++i) result *= shape[i];
  return result;
}

void require_same_dtype(const Node& node, size_t i, size_t j) {
  const DType a = operand_type(node, i).dtype;
  const DType b = operand_type(node, j).dtype;
  if (a != b) {
    throw InputError("operand " + std::to_string(i) + " is " + std::string(dtype_name(a)) +
                     " but operand " + std::to_string(j) + " is " + std::string(dtype_name(b)));
  }
}

}  // namespace kiln
