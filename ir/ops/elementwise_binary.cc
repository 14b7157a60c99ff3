// Broadcasting elementwise ops: arithmetic (add, sub, mul, div, mod, pow, prelu), the variadic
// max/min/sum/mean, comparisons, boolean logic, bitwise logic and shifts, and where. Operands
// broadcast numpy-style; integer arithmetic wraps like two's complement, and integer division by
// zero gives 0.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "ir/ops/elementwise_helpers.h"

namespace kiln {
namespace {

// Types Pow accepts for its base (its exponent may be any numeric type).
constexpr DTypeMask kPowBaseTypes = kFloatTypes | dtype_bit(DType::kI64) | dtype_bit(DType::kI32);
// Types PRelu accepts that kiln has.
constexpr DTypeMask kPReluTypes = kFloatTypes | dtype_bit(DType::kI64) | dtype_bit(DType::kI32);

// ---- Scalar math with ONNX's integer semantics --------------------------------------------------
// Division truncating toward zero for integers (C++ semantics, as ONNX specifies).
template <class T>
T divide(T a, T b) {
  if constexpr (std::is_integral_v<T>) {
    if (b == 0) return 0;
    if (b == -1) return wrapping_sub(T(0), a);  // INT64_MIN / -1 wraps
    return a / b;
  } else {
    return a / b;
  }
}

// Remainder with the sign of the dividend (C fmod; Mod with fmod=1).
template <class T>
T remainder_truncated(T a, T b) {
  if constexpr (std::is_integral_v<T>) {
    return b == 0 || b == -1 ? T(0) : a % b;
  } else {
    return std::fmod(a, b);
  }
}

// Remainder with the sign of the divisor (Python's %, numpy.mod; Mod with fmod=0).
template <class T>
T remainder_floored(T a, T b) {
  T r = remainder_truncated(a, b);
  if constexpr (std::is_floating_point_v<T>) {
    if (b == 0) return r;  // NaN
    if (r == 0) return std::copysign(T(0), b);
  }
  if (r != 0 && ((r < 0) != (b < 0))) r = wrapping_add(r, b);
  return r;
}

// Integer power by squaring, wrapping on overflow; a negative exponent truncates 1/base^-e.
int64_t integer_power(int64_t base, int64_t exponent) {
  if (exponent < 0) {
    if (base == 1) return 1;
    if (base == -1) return exponent % 2 == 0 ? 1 : -1;
    return 0;
  }
  int64_t result = 1;
  while (exponent > 0) {
    if (exponent & 1) result = wrapping_mul(result, base);
    base = wrapping_mul(base, base);
    exponent >>= 1;
  }
  return result;
}

// base ** exponent in the base's compute type B, as numpy.power(...).astype(base dtype).
template <class B, class E>
B power(B base, E exponent) {
  if constexpr (std::is_floating_point_v<B>) {
    return std::pow(base, static_cast<B>(exponent));
  } else if constexpr (std::is_integral_v<E>) {
    return integer_power(base, exponent);
  } else {
    return bound_from_double<int64_t>(std::pow(static_cast<double>(base), exponent));
  }
}

// ---- Kernels and registration helpers -----------------------------------------------------------
template <DTypeMask kTypes, class Fn>
void binary_kernel(const Node& node, std::span<const Tensor* const> inputs,
                   std::span<Tensor> outputs) {
  visit_compute_type<kTypes>(inputs[0]->dtype(), [&](auto zero) {
    using T = decltype(zero);
    map_binary<T, T>(*inputs[0], *inputs[1], outputs[0], [](T a, T b) { return Fn{}(a, b); });
  });
}

// Two operands of one dtype; the result has that dtype.
template <DTypeMask kTypes, class Fn>
OpInfo binary_op(std::string name, Fn) {
  return {.name = std::move(name),
          .category = OpCategory::kBroadcast,
          .attrs = {},
          .min_operands = 2,
          .max_operands = 2,
          .infer = &infer_broadcast<kTypes>,
          .reference = &binary_kernel<kTypes, Fn>};
}

// Two operands of one dtype; the result is bool.
template <DTypeMask kTypes, class Fn>
OpInfo binary_predicate(std::string name, Fn) {
  return {.name = std::move(name),
          .category = OpCategory::kBroadcast,
          .attrs = {},
          .min_operands = 2,
          .max_operands = 2,
          .infer = &infer_broadcast_predicate<kTypes>,
          .reference = &binary_kernel<kTypes, Fn>};
}

template <DTypeMask kTypes, class Fn, bool kMean>
void fold_kernel(const Node& node, std::span<const Tensor* const> inputs,
                 std::span<Tensor> outputs) {
  visit_compute_type<kTypes>(inputs[0]->dtype(), [&](auto zero) {
    using T = decltype(zero);
    const T count = static_cast<T>(inputs.size());
    fold_operands<T>(inputs, outputs[0], Fn{}, [&](T value) {
      if constexpr (kMean) {
        return value / count;
      } else {
        return value;
      }
    });
  });
}

// One or more operands of one dtype, folded left to right over their broadcast shape; with
// kMean the folded sum is divided by the operand count.
template <DTypeMask kTypes, bool kMean = false, class Fn>
OpInfo variadic_op(std::string name, Fn) {
  return {.name = std::move(name),
          .category = OpCategory::kBroadcast,
          .attrs = {},
          .max_operands = OpInfo::kVariadic,
          .infer = &infer_broadcast<kTypes>,
          .reference = &fold_kernel<kTypes, Fn, kMean>};
}

// ---- mod: fmod=0 takes the divisor's sign (Python %), fmod=1 the dividend's (C fmod) ---------
std::vector<TensorType> infer_mod(const Node& node) {
  const int64_t fmod = node.int_attr("fmod");
  if (fmod != 0 && fmod != 1) {
    throw InputError("attribute 'fmod' must be 0 or 1, got " + std::to_string(fmod));
  }
  return infer_broadcast<kNumericTypes>(node);
}

void mod_kernel(const Node& node, std::span<const Tensor* const> inputs,
                std::span<Tensor> outputs) {
  const bool truncated = node.int_attr("fmod") == 1;
  visit_compute_type<kNumericTypes>(inputs[0]->dtype(), [&](auto zero) {
    using T = decltype(zero);
    map_binary<T, T>(*inputs[0], *inputs[1], outputs[0], [&](T a, T b) {
      return truncated ? remainder_truncated(a, b) : remainder_floored(a, b);
    });
  });
}

// ---- pow: the exponent's dtype may differ from the base's; the result has the base's ---------
std::vector<TensorType> infer_pow(const Node& node) {
  require_dtype_in(node, 0, kPowBaseTypes);
  require_dtype_in(node, 1, kNumericTypes);
  return {{operand_type(node, 0).dtype,
           broadcast_shapes(operand_type(node, 0).shape, operand_type(node, 1).shape)}};
}

void pow_kernel(const Node& node, std::span<const Tensor* const> inputs,
                std::span<Tensor> outputs) {
  visit_compute_type<kPowBaseTypes>(inputs[0]->dtype(), [&](auto base_zero) {
    using B = decltype(base_zero);
    visit_compute_type<kNumericTypes>(inputs[1]->dtype(), [&](auto exponent_zero) {
      using E = decltype(exponent_zero);
      map_binary<B, E>(*inputs[0], *inputs[1], outputs[0],
                       [](B base, E exponent) { return power(base, exponent); });
    });
  });
}

// ---- prelu: the slope broadcasts to the input's shape (unidirectionally) ------------------------
std::vector<TensorType> infer_prelu(const Node& node) {
  require_dtype_in(node, 0, kPReluTypes);
  require_same_dtype(node, 0, 1);
  const Shape& input = operand_type(node, 0).shape;
  const Shape& slope = operand_type(node, 1).shape;
  if (broadcast_shapes(input, slope) != input) {
    throw InputError("slope shape [" + shape_to_string(slope) +
                     "] does not broadcast to the input shape [" + shape_to_string(input) + "]");
  }
  return {operand_type(node, 0)};
}

void prelu_kernel(const Node& node, std::span<const Tensor* const> inputs,
                  std::span<Tensor> outputs) {
  visit_compute_type<kPReluTypes>(inputs[0]->dtype(), [&](auto zero) {
    using T = decltype(zero);
    map_binary<T, T>(*inputs[0], *inputs[1], outputs[0],
                     [](T x, T slope) { return x < 0 ? wrapping_mul(slope, x) : x; });
  });
}

// ---- bit_shift: shifts x left or right by y bits (direction "LEFT" or "RIGHT") ----------------
// Computed in int64_t and truncated to the operand's width on store, which gives BitShift-28's
// results for every width kiln has: bits moved past the width vanish, a right shift of a signed
// value extends its sign, and a shift by a negative amount or by the full width or more gives
// -1 for a right shift of a negative value and 0 otherwise.
std::vector<TensorType> infer_bit_shift(const Node& node) {
  const std::string& direction = node.string_attr("direction");
  if (direction != "LEFT" && direction != "RIGHT") {
    throw InputError("attribute 'direction' must be \"LEFT\" or \"RIGHT\", got \"" + direction +
                     "\"");
  }
  return infer_broadcast<kIntTypes>(node);
}

int64_t shift_bits(int64_t x, int64_t amount, bool left) {
  if (amount < 0 || amount >= 64) return !left && x < 0 ? -1 : 0;
  if (left) return static_cast<int64_t>(static_cast<uint64_t>(x) << amount);
  return x >> amount;  // arithmetic for negative x (C++20)
}

void bit_shift_kernel(const Node& node, std::span<const Tensor* const> inputs,
                      std::span<Tensor> outputs) {
  const bool left = node.string_attr("direction") == "LEFT";
  map_binary<int64_t, int64_t>(*inputs[0], *inputs[1], outputs[0],
                               [&](int64_t x, int64_t y) { return shift_bits(x, y, left); });
}

// ---- where: picks x where the condition holds, else y; any dtype, copied bytewise ---------------
std::vector<TensorType> infer_where(const Node& node) {
  require_dtype_in(node, 0, kBoolTypes);
  require_same_dtype(node, 1, 2);
  return {{operand_type(node, 1).dtype, broadcast_all_operands(node)}};
}

void where_kernel(const Node& node, std::span<const Tensor* const> inputs,
                  std::span<Tensor> outputs) {
  Tensor& out = outputs[0];
  const BroadcastInput<int64_t> condition(*inputs[0], out.shape());
  const Tensor& x = *inputs[1];
  const Tensor& y = *inputs[2];
  const std::vector<int64_t> x_index = broadcast_index_map(x.shape(), out.shape());
  const std::vector<int64_t> y_index = broadcast_index_map(y.shape(), out.shape());
  const size_t size = dtype_size(out.dtype());
  const int64_t count = out.num_elements();
  for (int64_t i = 0; i < count; ++i) {
    const std::byte* source =
        condition[i] ? x.bytes() + x_index[i] * size : y.bytes() + y_index[i] * size;
    std::memcpy(out.bytes() + i * size, source, size);
  }
}

}  // namespace

void register_elementwise_binary_ops(OpRegistry& registry) {
  const auto add = [&](OpInfo info) { registry.add(std::move(info)); };

  // Arithmetic.
  add(binary_op<kNumericTypes>("add", [](auto a, auto b) { return wrapping_add(a, b); }));
  add(binary_op<kNumericTypes>("sub", [](auto a, auto b) { return wrapping_sub(a, b); }));
  add(binary_op<kNumericTypes>("mul", [](auto a, auto b) { return wrapping_mul(a, b); }));
  add(binary_op<kNumericTypes>("div", [](auto a, auto b) { return divide(a, b); }));
  add({.name = "mod",
       .category = OpCategory::kBroadcast,
       .attrs = {{"fmod", AttrKind::kInt, Attribute(0)}},
       .min_operands = 2,
       .max_operands = 2,
       .infer = &infer_mod,
       .reference = &mod_kernel});
  add({.name = "pow",
       .category = OpCategory::kBroadcast,
       .attrs = {},
       .min_operands = 2,
       .max_operands = 2,
       .infer = &infer_pow,
       .reference = &pow_kernel,
       .precision = PrecisionClass::kF32});
  add({.name = "prelu",
       .category = OpCategory::kBroadcast,
       .attrs = {},
       .min_operands = 2,
       .max_operands = 2,
       .infer = &infer_prelu,
       .reference = &prelu_kernel});

  // Variadic.
  add(variadic_op<kNumericTypes>("max", [](auto a, auto b) { return max_keep_nan(a, b); }));
  add(variadic_op<kNumericTypes>("min", [](auto a, auto b) { return min_keep_nan(a, b); }));
  add(variadic_op<kFloatTypes>("sum", [](auto a, auto b) { return a + b; }));
  add(variadic_op<kFloatTypes, /*kMean=*/true>("mean", [](auto a, auto b) { return a + b; }));

  // Comparisons.
  add(binary_predicate<kAllTypes>("equal", [](auto a, auto b) { return a == b; }));
  add(binary_predicate<kNumericTypes>("less", [](auto a, auto b) { return a < b; }));
  add(binary_predicate<kNumericTypes>("less_or_equal", [](auto a, auto b) { return a <= b; }));
  add(binary_predicate<kNumericTypes>("greater", [](auto a, auto b) { return a > b; }));
  add(binary_predicate<kNumericTypes>("greater_or_equal", [](auto a, auto b) { return a >= b; }));

  // Boolean logic.
  add(binary_op<kBoolTypes>("and", [](auto a, auto b) { return a != 0 && b != 0; }));
  add(binary_op<kBoolTypes>("or", [](auto a, auto b) { return a != 0 || b != 0; }));
  add(binary_op<kBoolTypes>("xor", [](auto a, auto b) { return (a != 0) != (b != 0); }));

  // Bitwise logic on integers.
  add(binary_op<kIntTypes>("bitwise_and", [](auto a, auto b) { return a & b; }));
  add(binary_op<kIntTypes>("bitwise_or", [](auto a, auto b) { return a | b; }));
  add(binary_op<kIntTypes>("bitwise_xor", [](auto a, auto b) { return a ^ b; }));
  add({.name = "bit_shift",
       .category = OpCategory::kBroadcast,
       .attrs = {{"direction", AttrKind::kString, std::nullopt}},
       .min_operands = 2,
       .max_operands = 2,
       .infer = &infer_bit_shift,
       .reference = &bit_shift_kernel});

  add({.name = "where",
       .category = OpCategory::kBroadcast,
       .attrs = {},
       .min_operands = 3,
       .max_operands = 3,
       .infer = &infer_where,
       .reference = &where_kernel});
}

}  // namespace kiln
