// Helpers shared by the neural-network op family: dtype checks for shape functions, and the
// compute-type dispatch and bulk element conversion the reference kernels use.
//
// Kernels compute in one of three types: float (f32, f16, bf16), double (f64) or int64_t
// (integers and bool). visit_compute_type() calls a generic lambda with a value of that type, so
// a kernel is written once as a template; read_values()/write_values() convert a whole tensor at
// once (a plain copy when the tensor already holds the compute type).
//
// The reference kernels are the oracle of every GPU test, so they must never be less exact than
// the kernels they judge: whatever sums many terms (reductions, statistics, dot products) sums
// float values in double (Accumulator), and the result is rounded once, when it is stored.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "ir/dtype.h"
#include "ir/error.h"
#include "ir/graph.h"
#include "ir/ops/op_helpers.h"
#include "ir/tensor.h"

namespace kiln::nn {

template <class F>
decltype(auto) visit_compute_type(DType dtype, F&& visitor) {
  if (dtype == DType::kF64) return visitor(double{});
  if (is_float(dtype)) return visitor(float{});
  return visitor(int64_t{});
}

// The type sums of compute-type T values accumulate in: double for float, so that a sum of 2^25
// f32 values keeps its low bits (an f32 running sum of ones stops at 2^24); T itself for double,
// and for int64_t, whose sums wrap around as the integer dtypes do.
template <class T>
using Accumulator = std::conditional_t<std::is_same_v<T, float>, double, T>;

// visit_compute_type for kernels of float-only ops (their shape functions reject other dtypes).
template <class F>
decltype(auto) visit_float_compute_type(DType dtype, F&& visitor) {
  if (dtype == DType::kF64) return visitor(double{});
  if (!is_float(dtype)) {
    throw InternalError("float-only kernel called on " + std::string(dtype_name(dtype)));
  }
  return visitor(float{});
}

// The DType whose storage is exactly T (f32 for float, f64 for double, i64 for int64_t).
template <class T>
constexpr DType native_dtype() {
  if constexpr (std::is_same_v<T, float>) return DType::kF32;
  if constexpr (std::is_same_v<T, double>) return DType::kF64;
  return DType::kI64;
}

// Every element of `tensor` in the compute type T.
template <class T>
std::vector<T> read_values(const Tensor& tensor) {
  if (tensor.dtype() == native_dtype<T>()) {
    std::vector<T> values(static_cast<size_t>(tensor.num_elements()));
    if (!values.empty()) std::memcpy(values.data(), tensor.bytes(), tensor.num_bytes());
    return values;
  }
  if constexpr (std::is_same_v<T, float>) return tensor.to_floats();
  if constexpr (std::is_same_v<T, double>) return tensor.to_doubles();
  if constexpr (std::is_same_v<T, int64_t>) return tensor.to_ints();
}

// Stores `values` (one per element) into `tensor`, rounding to its dtype.
template <class T>
void write_values(Tensor& tensor, const std::vector<T>& values) {
  if (static_cast<int64_t>(values.size()) != tensor.num_elements()) {
    throw InternalError("write_values: " + std::to_string(values.size()) + " values for " +
                        type_to_string(tensor.type()));
  }
  if (tensor.dtype() == native_dtype<T>()) {
    if (!values.empty()) std::memcpy(tensor.bytes(), values.data(), tensor.num_bytes());
    return;
  }
  const int64_t count = tensor.num_elements();
  for (int64_t i = 0; i < count; ++i) {
    if constexpr (std::is_same_v<T, float>) tensor.set_float(i, values[i]);
    if constexpr (std::is_same_v<T, double>) tensor.set_double(i, values[i]);
    if constexpr (std::is_same_v<T, int64_t>) tensor.set_int(i, values[i]);
  }
}

// Dtype groups that ONNX ops accept.
inline bool is_float_dtype(DType dtype) { return is_float(dtype); }
inline bool is_numeric_dtype(DType dtype) { return dtype != DType::kBool; }
inline bool is_float_or_wide_int_dtype(DType dtype) {
  return is_float(dtype) || dtype == DType::kI32 || dtype == DType::kI64;
}

// Throws InputError unless operand `index` has a dtype `accepts` allows; `expected` names the
// accepted group ("a float tensor"), `role` names the operand ("X").
void require_operand_dtype(const Node& node, size_t index, bool (*accepts)(DType),
                           const std::string& role, const std::string& expected);

// Throws InputError unless operand `index` has rank `rank`.
void require_operand_rank(const Node& node, size_t index, int64_t rank, const std::string& role);

// An ints attribute that may be left empty to mean `count` copies of `fill`; throws InputError
// naming the attribute when its length is neither 0 nor `count`.
std::vector<int64_t> ints_attr_or_fill(const Node& node, const std::string& name, size_t count,
                                       int64_t fill);

// The mean of values[0, count) and 1 / sqrt(variance + epsilon), the variance taken around the
// mean in a second pass: the statistics of the normalization ops, in double whatever the dtype.
std::pair<double, double> mean_and_inv_std(const double* values, int64_t count, double epsilon);

// The slices along `axis` of a row-major `shape`: outer · inner of them, each of `count`
// elements `inner` apart; slice (o, i) starts at element o·count·inner + i.
struct AxisSlices {
  AxisSlices(const Shape& shape, int64_t axis)
      : outer(product(shape, 0, axis)),
        count(shape[axis]),
        inner(product(shape, axis + 1, shape.size())) {}

  // Calls visit(start) with the first element of every slice, in order.
  template <class Visit>
  void for_each_start(Visit&& visit) const {
    for (int64_t o = 0; o < outer; ++o) {
      for (int64_t i = 0; i < inner; ++i) visit(o * count * inner + i);
    }
  }

  int64_t outer, count, inner;
};

// Whether `from` broadcasts (numpy rules, one direction) to exactly `to`.
bool broadcasts_to(const Shape& from, const Shape& to);

// `values` viewed as [outer, p, q] rearranged to [outer, q, p]: channels-last [N, D, C] to
// channels-first [N, C, D] with p = D, q = C, and back with p = C, q = D (the channels-last
// forms of conv and the windowed pools run their channels-first kernels between the two).
template <class T>
void swap_inner_blocks(std::vector<T>& values, int64_t outer, int64_t p, int64_t q) {
  if (p == 1 || q == 1) return;
  std::vector<T> swapped(values.size());
  for (int64_t o = 0; o < outer; ++o) {
    const T* from = values.data() + o * p * q;
    T* to = swapped.data() + o * p * q;
    for (int64_t i = 0; i < p; ++i) {
      for (int64_t j = 0; j < q; ++j) to[j * p + i] = from[i * q + j];
    }
  }
  values = std::move(swapped);
}

}  // namespace kiln::nn
