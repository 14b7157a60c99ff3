// Building blocks shared by the elementwise op family (ir/ops/elementwise*.cc): dtype sets and
// the checks and shape functions built on them, and the kernel templates that run one scalar
// lambda over every element (converting each operand once into its compute type: float for
// f32/f16/bf16, double for f64, int64_t for integers and bool) so each op's math is written
// once, in one small lambda.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include "ir/error.h"
#include "ir/graph.h"
#include "ir/op_registry.h"
#include "ir/ops/op_helpers.h"
#include "ir/tensor.h"

namespace kiln {

// ---- The sub-families, registered by register_elementwise_ops ----------------------------------
void register_elementwise_unary_ops(OpRegistry& registry);   // relu, exp, clip, is_nan, not, ...
void register_elementwise_binary_ops(OpRegistry& registry);  // add, pow, max, equal, and, where
void register_elementwise_cast_ops(OpRegistry& registry);    // cast, identity

// ---- DType sets ---------------------------------------------------------------------------------
using DTypeMask = uint32_t;
constexpr DTypeMask dtype_bit(DType dtype) { return 1u << static_cast<unsigned>(dtype); }

inline constexpr DTypeMask kFloat32LikeTypes =
    dtype_bit(DType::kF32) | dtype_bit(DType::kF16) | dtype_bit(DType::kBF16);
inline constexpr DTypeMask kFloatTypes = kFloat32LikeTypes | dtype_bit(DType::kF64);
inline constexpr DTypeMask kSignedIntTypes =
    dtype_bit(DType::kI64) | dtype_bit(DType::kI32) | dtype_bit(DType::kI8);
inline constexpr DTypeMask kIntTypes = kSignedIntTypes | dtype_bit(DType::kU8);
inline constexpr DTypeMask kSignedNumericTypes = kFloatTypes | kSignedIntTypes;
inline constexpr DTypeMask kNumericTypes = kFloatTypes | kIntTypes;
inline constexpr DTypeMask kBoolTypes = dtype_bit(DType::kBool);
inline constexpr DTypeMask kAllTypes = kNumericTypes | kBoolTypes;

// Throws InputError unless operand i's dtype is in `allowed`, naming the operand.
void require_dtype_in(const Node& node, size_t i, DTypeMask allowed);
// Throws InputError unless every operand has operand 0's dtype.
void require_all_same_dtype(const Node& node);
// The numpy-style broadcast of every operand's shape.
Shape broadcast_all_operands(const Node& node);

// ---- Shape functions ----------------------------------------------------------------------------
// One operand of an allowed dtype; the result has its type (or is bool, for predicates).
template <DTypeMask kTypes>
std::vector<TensorType> infer_unary(const Node& node) {
  require_dtype_in(node, 0, kTypes);
  return {operand_type(node, 0)};
}
template <DTypeMask kTypes>
std::vector<TensorType> infer_unary_predicate(const Node& node) {
  require_dtype_in(node, 0, kTypes);
  return {{DType::kBool, operand_type(node, 0).shape}};
}
// Operands of one allowed dtype, broadcast together; the result has their dtype (or is bool).
template <DTypeMask kTypes>
std::vector<TensorType> infer_broadcast(const Node& node) {
  require_dtype_in(node, 0, kTypes);
  require_all_same_dtype(node);
  return {{operand_type(node, 0).dtype, broadcast_all_operands(node)}};
}
template <DTypeMask kTypes>
std::vector<TensorType> infer_broadcast_predicate(const Node& node) {
  require_dtype_in(node, 0, kTypes);
  require_all_same_dtype(node);
  return {{DType::kBool, broadcast_all_operands(node)}};
}

// ---- Compute types ------------------------------------------------------------------------------
// Calls visit(T{}) with the compute type of `dtype`. kTypes (the dtypes the op accepts) prunes the
// instantiations an op can never need, so float-only lambdas need not compile for int64_t.
template <DTypeMask kTypes, class Visitor>
void visit_compute_type(DType dtype, Visitor&& visit) {
  if constexpr ((kTypes & kFloat32LikeTypes) != 0) {
    if (dtype_bit(dtype) & kFloat32LikeTypes) return visit(float{});
  }
  if constexpr ((kTypes & dtype_bit(DType::kF64)) != 0) {
    if (dtype == DType::kF64) return visit(double{});
  }
  if constexpr ((kTypes & (kIntTypes | kBoolTypes)) != 0) {
    if (dtype_bit(dtype) & (kIntTypes | kBoolTypes)) return visit(int64_t{});
  }
  throw InternalError("elementwise kernel called with unsupported dtype " +
                      std::string(dtype_name(dtype)));
}

// Every element of `tensor`, converted to the compute type T.
template <class T>
std::vector<T> load_values(const Tensor& tensor) {
  if constexpr (std::is_same_v<T, float>) {
    if (tensor.dtype() == DType::kF32) {
      const float* data = tensor.data<float>();
      return std::vector<float>(data, data + tensor.num_elements());
    }
    return tensor.to_floats();
  } else if constexpr (std::is_same_v<T, double>) {
    return tensor.to_doubles();
  } else {
    return tensor.to_ints();
  }
}

// Stores one computed value (float, double, int64_t or bool) into element i of `out`.
template <class T>
void store_value(Tensor& out, int64_t i, T value) {
  if constexpr (std::is_same_v<T, float>) {
    out.set_float(i, value);
  } else if constexpr (std::is_same_v<T, double>) {
    out.set_double(i, value);
  } else {
    out.set_int(i, static_cast<int64_t>(value));
  }
}

// Converts a bound given as a double (a float attribute) into the compute type T; integer types
// saturate, so an infinite bound means "none".
template <class T>
T bound_from_double(double value) {
  if constexpr (std::is_floating_point_v<T>) {
    return static_cast<T>(value);
  } else {
    if (std::isnan(value)) return 0;
    if (value <= -0x1p63) return std::numeric_limits<int64_t>::min();
    if (value >= 0x1p63) return std::numeric_limits<int64_t>::max();
    return static_cast<int64_t>(value);
  }
}

// One operand of a broadcasting op, converted once, read by the output's flat index.
template <class T>
class BroadcastInput {
 public:
  BroadcastInput(const Tensor& tensor, const Shape& out_shape)
      : values_(load_values<T>(tensor)), single_(values_.size() == 1) {
    if (!single_ && tensor.shape() != out_shape) {
      index_ = broadcast_index_map(tensor.shape(), out_shape);
    }
  }
  T operator[](int64_t i) const {
    if (single_) return values_[0];
    return index_.empty() ? values_[i] : values_[index_[i]];
  }

 private:
  std::vector<T> values_;
  bool single_;                 // one element (a scalar, say): read without an index map
  std::vector<int64_t> index_;  // empty when the shapes agree or the operand is single
};

// ---- Kernel templates ---------------------------------------------------------------------------
// out[i] = value_at(i) for every element; value_at returns float, double, int64_t or bool.
template <class ValueAt>
void write_elements(Tensor& out, ValueAt&& value_at) {
  const int64_t count = out.num_elements();
  using Result = decltype(value_at(int64_t{0}));
  if constexpr (std::is_same_v<Result, float>) {
    if (out.dtype() == DType::kF32) {
      float* data = out.data<float>();
      for (int64_t i = 0; i < count; ++i) data[i] = value_at(i);
      return;
    }
  }
  for (int64_t i = 0; i < count; ++i) store_value(out, i, value_at(i));
}

// out[i] = fn(in[i]) with in converted to T; fn returns T or bool.
template <class T, class Fn>
void map_unary(const Tensor& in, Tensor& out, Fn&& fn) {
  const std::vector<T> values = load_values<T>(in);
  write_elements(out, [&](int64_t i) { return fn(values[i]); });
}

// out[i] = fn(a[i], b[i]) over the broadcast output shape, a converted to A and b to B.
template <class A, class B, class Fn>
void map_binary(const Tensor& a, const Tensor& b, Tensor& out, Fn&& fn) {
  const BroadcastInput<A> x(a, out.shape());
  const BroadcastInput<B> y(b, out.shape());
  write_elements(out, [&](int64_t i) { return fn(x[i], y[i]); });
}

// Left fold of every input over the broadcast output: out = fn(fn(in0, in1), in2)..., computed
// in T without intermediate rounding; `finish` maps the folded value before it is stored.
template <class T, class Fn, class Finish>
void fold_operands(std::span<const Tensor* const> inputs, Tensor& out, Fn&& fn, Finish&& finish) {
  const int64_t count = out.num_elements();
  std::vector<T> acc(static_cast<size_t>(count));
  const BroadcastInput<T> first(*inputs[0], out.shape());
  for (int64_t i = 0; i < count; ++i) acc[i] = first[i];
  for (size_t k = 1; k < inputs.size(); ++k) {
    const BroadcastInput<T> next(*inputs[k], out.shape());
    for (int64_t i = 0; i < count; ++i) acc[i] = fn(acc[i], next[i]);
  }
  write_elements(out, [&](int64_t i) { return finish(acc[i]); });
}

}  // namespace kiln
