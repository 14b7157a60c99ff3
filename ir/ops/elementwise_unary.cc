// Unary elementwise ops: activations (relu, sigmoid, silu, gelu, ...), float math (exp, log, sin,
// ...), rounding, sign and clip, bitwise_not, and the predicates is_nan, is_inf and not. Each op's
// math is one generic lambda `(x, params)`, called with the compute type of the operand's dtype.
// (Backends keep their own expression of each op, e.g. codegen/op_expressions.cc.)
#include <algorithm>
#include <cmath>
#include <numbers>

#include "ir/ops/elementwise_helpers.h"

namespace kiln {
namespace {

// The float attributes unary math may use, read once per node; an attribute the op does not
// declare reads as zero. Most are in the compute type T; Shrink's lambd and bias stay real
// (double) for integer T, since it computes x + bias in floating point and truncates the sum.
template <class T>
struct UnaryParams {
  using Real = std::conditional_t<std::is_integral_v<T>, double, T>;
  T alpha{};
  T beta{};
  T gamma{};
  T min{};
  T max{};
  Real lambd{};
  Real bias{};
};

template <class T>
UnaryParams<T> read_unary_params(const Node& node) {
  using Real = typename UnaryParams<T>::Real;
  const auto declared = [&](const char* name) { return node.info().find_attr(name) != nullptr; };
  const auto read = [&](const char* name) {
    return declared(name) ? bound_from_double<T>(node.float_attr(name)) : T{};
  };
  const auto read_real = [&](const char* name) {
    return declared(name) ? static_cast<Real>(node.float_attr(name)) : Real{};
  };
  return {read("alpha"), read("beta"),       read("gamma"),    read("min"),
          read("max"),   read_real("lambd"), read_real("bias")};
}

// log(1 + exp(x)), without overflow for large x.
template <class T>
T softplus(T x) {
  return x > 0 ? x + std::log1p(std::exp(-x)) : std::log1p(std::exp(x));
}

// 1 / (1 + exp(-x)), without overflow for large |x|.
template <class T>
T logistic(T x) {
  return x >= 0 ? T(1) / (T(1) + std::exp(-x)) : std::exp(x) / (T(1) + std::exp(x));
}

// Clamps to [lo, hi] as numpy.clip does: NaN stays NaN, and lo > hi gives hi.
template <class T>
T clamp_keep_nan(T x, T lo, T hi) {
  return std::min(std::max(x, lo), hi);
}

template <DTypeMask kTypes, class Fn>
void unary_kernel(const Node& node, std::span<const Tensor* const> inputs,
                  std::span<Tensor> outputs) {
  visit_compute_type<kTypes>(inputs[0]->dtype(), [&](auto zero) {
    using T = decltype(zero);
    const UnaryParams<T> params = read_unary_params<T>(node);
    map_unary<T>(*inputs[0], outputs[0], [&](T x) { return Fn{}(x, params); });
  });
}

// A unary op whose result has the operand's type.
template <DTypeMask kTypes, class Fn>
OpInfo unary_op(std::string name, Fn, std::vector<AttrSpec> attrs = {}) {
  return {.name = std::move(name),
          .category = OpCategory::kElementwise,
          .attrs = std::move(attrs),
          .infer = &infer_unary<kTypes>,
          .reference = &unary_kernel<kTypes, Fn>};
}

// A unary op whose result is bool.
template <DTypeMask kTypes, class Fn>
OpInfo unary_predicate(std::string name, Fn) {
  return {.name = std::move(name),
          .category = OpCategory::kElementwise,
          .attrs = {},
          .infer = &infer_unary_predicate<kTypes>,
          .reference = &unary_kernel<kTypes, Fn>};
}

// `info` computed in f32 in fp16/bf16 mode (PrecisionClass, ir/op_registry.h).
OpInfo computed_in_f32(OpInfo info) {
  info.precision = PrecisionClass::kF32;
  return info;
}

AttrSpec float_attr(const char* name, double default_value) {
  return {name, AttrKind::kFloat, Attribute(default_value)};
}

// ---- gelu: the exact (erf) form or the tanh approximation ----------------------------------
std::vector<TensorType> infer_gelu(const Node& node) {
  const std::string& approximate = node.string_attr("approximate");
  if (approximate != "none" && approximate != "tanh") {
    throw InputError("attribute 'approximate' must be \"none\" or \"tanh\", got \"" + approximate +
                     "\"");
  }
  return infer_unary<kFloatTypes>(node);
}

void gelu_kernel(const Node& node, std::span<const Tensor* const> inputs,
                 std::span<Tensor> outputs) {
  const bool use_tanh = node.string_attr("approximate") == "tanh";
  visit_compute_type<kFloatTypes>(inputs[0]->dtype(), [&](auto zero) {
    using T = decltype(zero);
    if (use_tanh) {
      const T k = static_cast<T>(std::sqrt(2.0 / std::numbers::pi));
      map_unary<T>(*inputs[0], outputs[0], [&](T x) {
        return T(0.5) * x * (T(1) + std::tanh(k * (x + T(0.044715) * x * x * x)));
      });
    } else {
      map_unary<T>(*inputs[0], outputs[0], [](T x) {
        return T(0.5) * x * (T(1) + std::erf(x * static_cast<T>(std::numbers::sqrt2 / 2)));
      });
    }
  });
}

// ---- is_inf: which infinities count is chosen by detect_negative / detect_positive ----------
void is_inf_kernel(const Node& node, std::span<const Tensor* const> inputs,
                   std::span<Tensor> outputs) {
  const bool negative = node.int_attr("detect_negative") != 0;
  const bool positive = node.int_attr("detect_positive") != 0;
  visit_compute_type<kFloatTypes>(inputs[0]->dtype(), [&](auto zero) {
    using T = decltype(zero);
    map_unary<T>(*inputs[0], outputs[0],
                 [&](T x) { return std::isinf(x) && (x < 0 ? negative : positive); });
  });
}

}  // namespace

void register_elementwise_unary_ops(OpRegistry& registry) {
  const auto add = [&](OpInfo info) { registry.add(std::move(info)); };

  // Activations.
  add(unary_op<kSignedNumericTypes>(
      "relu", [](auto x, const auto&) { return x < 0 ? decltype(x)(0) : x; }));
  add(unary_op<kFloatTypes>("leaky_relu",
                            [](auto x, const auto& p) { return x < 0 ? p.alpha * x : x; },
                            {float_attr("alpha", 0.01)}));
  add(unary_op<kFloatTypes>(
      "elu", [](auto x, const auto& p) { return x < 0 ? p.alpha * std::expm1(x) : x; },
      {float_attr("alpha", 1.0)}));
  add(unary_op<kFloatTypes>("selu",
                            [](auto x, const auto& p) {
                              return x <= 0 ? p.gamma * (p.alpha * std::exp(x) - p.alpha)
                                            : p.gamma * x;
                            },
                            {float_attr("alpha", 1.67326319217681884765625),
                             float_attr("gamma", 1.05070102214813232421875)}));
  add(unary_op<kFloatTypes>("sigmoid", [](auto x, const auto&) { return logistic(x); }));
  add(unary_op<kFloatTypes>("silu", [](auto x, const auto&) { return x * logistic(x); }));
  add(unary_op<kFloatTypes>("swish",
                            [](auto x, const auto& p) { return x * logistic(p.alpha * x); },
                            {float_attr("alpha", 1.0)}));
  add(unary_op<kFloatTypes>("hard_sigmoid",
                            [](auto x, const auto& p) {
                              using T = decltype(x);
                              return clamp_keep_nan(p.alpha * x + p.beta, T(0), T(1));
                            },
                            {float_attr("alpha", 0.2), float_attr("beta", 0.5)}));
  add(unary_op<kFloatTypes>("hard_swish", [](auto x, const auto&) {
    using T = decltype(x);
    return x * clamp_keep_nan(T(1.0 / 6) * x + T(0.5), T(0), T(1));  // hard_sigmoid(1/6, 1/2)
  }));
  add(unary_op<kFloatTypes>("softplus", [](auto x, const auto&) { return softplus(x); }));
  add(unary_op<kFloatTypes>(
      "softsign", [](auto x, const auto&) { return x / (decltype(x)(1) + std::abs(x)); }));
  add(unary_op<kFloatTypes>("mish",
                            [](auto x, const auto&) { return x * std::tanh(softplus(x)); }));
  add(unary_op<kFloatTypes>(
      "celu",
      // max(0, x) + min(0, alpha * (exp(x / alpha) - 1)), NaN kept.
      [](auto x, const auto& p) { return x > 0 ? x : p.alpha * std::expm1(x / p.alpha); },
      {float_attr("alpha", 1.0)}));
  add(unary_op<kFloatTypes>("thresholded_relu",
                            [](auto x, const auto& p) { return x > p.alpha ? x : decltype(x)(0); },
                            {float_attr("alpha", 1.0)}));
  // Integers compute x +- bias in double and truncate, as numpy's astype does.
  add(unary_op<kNumericTypes>("shrink",
                              [](auto x, const auto& p) {
                                using T = decltype(x);
                                return x < -p.lambd  ? static_cast<T>(x + p.bias)
                                       : x > p.lambd ? static_cast<T>(x - p.bias)
                                                     : T(0);
                              },
                              {float_attr("bias", 0.0), float_attr("lambd", 0.5)}));
  add({.name = "gelu",
       .category = OpCategory::kElementwise,
       .attrs = {{"approximate", AttrKind::kString, "none"}},
       .infer = &infer_gelu,
       .reference = &gelu_kernel});

  // Float math.
  add(unary_op<kFloatTypes>("tanh", [](auto x, const auto&) { return std::tanh(x); }));
  add(computed_in_f32(
      unary_op<kFloatTypes>("erf", [](auto x, const auto&) { return std::erf(x); })));
  add(computed_in_f32(
      unary_op<kFloatTypes>("exp", [](auto x, const auto&) { return std::exp(x); })));
  add(computed_in_f32(
      unary_op<kFloatTypes>("log", [](auto x, const auto&) { return std::log(x); })));
  add(computed_in_f32(
      unary_op<kFloatTypes>("sqrt", [](auto x, const auto&) { return std::sqrt(x); })));
  add(unary_op<kFloatTypes>("sin", [](auto x, const auto&) { return std::sin(x); }));
  add(unary_op<kFloatTypes>("cos", [](auto x, const auto&) { return std::cos(x); }));
  add(unary_op<kFloatTypes>("tan", [](auto x, const auto&) { return std::tan(x); }));
  add(unary_op<kFloatTypes>("asin", [](auto x, const auto&) { return std::asin(x); }));
  add(unary_op<kFloatTypes>("acos", [](auto x, const auto&) { return std::acos(x); }));
  add(unary_op<kFloatTypes>("atan", [](auto x, const auto&) { return std::atan(x); }));
  add(unary_op<kFloatTypes>("sinh", [](auto x, const auto&) { return std::sinh(x); }));
  add(unary_op<kFloatTypes>("cosh", [](auto x, const auto&) { return std::cosh(x); }));
  add(unary_op<kFloatTypes>("asinh", [](auto x, const auto&) { return std::asinh(x); }));
  add(unary_op<kFloatTypes>("acosh", [](auto x, const auto&) { return std::acosh(x); }));
  add(unary_op<kFloatTypes>("atanh", [](auto x, const auto&) { return std::atanh(x); }));
  add(computed_in_f32(
      unary_op<kFloatTypes>("reciprocal", [](auto x, const auto&) { return decltype(x)(1) / x; })));

  // Sign, magnitude and rounding.
  add(unary_op<kSignedNumericTypes>(
      "neg", [](auto x, const auto&) { return wrapping_sub(decltype(x)(0), x); }));
  add(unary_op<kNumericTypes>("abs", [](auto x, const auto&) {
    using T = decltype(x);
    if constexpr (std::is_integral_v<T>) {
      return x < 0 ? wrapping_sub(T(0), x) : x;
    } else {
      return std::abs(x);
    }
  }));
  add(unary_op<kNumericTypes>("sign", [](auto x, const auto&) {
    using T = decltype(x);
    return x > 0 ? T(1) : x < 0 ? T(-1) : x;  // zero and NaN map to themselves
  }));
  add(unary_op<kFloatTypes>("floor", [](auto x, const auto&) { return std::floor(x); }));
  add(unary_op<kFloatTypes>("ceil", [](auto x, const auto&) { return std::ceil(x); }));
  // Halves round to even: nearbyint under the default rounding mode (rint on the GPU).
  add(unary_op<kFloatTypes>("round", [](auto x, const auto&) { return std::nearbyint(x); }));
  add(unary_op<kNumericTypes>("clip",
                              [](auto x, const auto& p) { return clamp_keep_nan(x, p.min, p.max); },
                              {float_attr("min", -std::numeric_limits<double>::infinity()),
                               float_attr("max", std::numeric_limits<double>::infinity())}));

  // Predicates.
  add(unary_predicate<kFloatTypes>("is_nan", [](auto x, const auto&) { return std::isnan(x); }));
  add({.name = "is_inf",
       .category = OpCategory::kElementwise,
       .attrs = {{"detect_negative", AttrKind::kInt, Attribute(1)},
                 {"detect_positive", AttrKind::kInt, Attribute(1)}},
       .infer = &infer_unary_predicate<kFloatTypes>,
       .reference = &is_inf_kernel});
  add(unary_predicate<kBoolTypes>("not", [](auto x, const auto&) { return x == 0; }));

  // Bitwise (the store truncates to the operand's width).
  add(unary_op<kIntTypes>("bitwise_not", [](auto x, const auto&) { return ~x; }));
}

}  // namespace kiln
