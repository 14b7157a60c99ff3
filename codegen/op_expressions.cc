// The CUDA expression of each elementwise and broadcast op (see the header). Each computes what
// the op's reference kernel (ir/ops/elementwise_*.cc, nn_norm.cc) computes, in the compute type
// of the result; the kiln_* device functions are in codegen/device_functions.cc.
#include "codegen/op_expressions.h"

#include "ir/error.h"
#include "ir/graph.h"
#include "ir/ops/op_helpers.h"

namespace kiln::codegen {
namespace {

// gelu: the exact (erf) form or the tanh approximation.
std::string gelu_expr(const CudaExprArgs& args) {
  const bool use_tanh = args.node.string_attr("approximate") == "tanh";
  return (use_tanh ? "kiln_gelu_tanh(" : "kiln_gelu_erf(") + args.operands[0] + ")";
}

// pow: a float base takes the exponent in its own type; an integer base is raised exactly by an
// integer exponent, and through double (saturating back) by a float one.
std::string pow_expr(const CudaExprArgs& args) {
  const DType base = operand_type(args.node, 0).dtype;
  const DType exponent = operand_type(args.node, 1).dtype;
  const std::string& b = args.operands[0];
  const std::string& e = args.operands[1];
  if (is_float(base))
    return "pow(" + b + ", (" + std::string(cuda_compute_type(base)) + ")" + e + ")";
  if (is_float(exponent)) return "kiln_pow_integer_base((double)" + b + ", (double)" + e + ")";
  return "kiln_integer_power((long long)" + b + ", (long long)" + e + ")";
}

// bit_shift: computed in long long and truncated to the operand's width on store.
std::string bit_shift_expr(const CudaExprArgs& args) {
  const bool left = args.node.string_attr("direction") == "LEFT";
  return std::string(left ? "kiln_shift_left" : "kiln_shift_right") + "((long long)" +
         args.operands[0] + ", (long long)" + args.operands[1] + ")";
}

// cast: the reference's conversions. A cast to f16 or bf16 rounds the value to that format (in a
// kernel it stays a float); an integer converts to f16/bf16 through float.
std::string cast_expr(const CudaExprArgs& args) {
  const DType from = operand_type(args.node, 0).dtype;
  const DType to = args.node.result(0)->type().dtype;
  const std::string& x = args.operands[0];
  const std::string to_type(cuda_compute_type(to));
  if (to == DType::kBool) return x + " != 0";
  if (to == DType::kF16 || to == DType::kBF16) {
    const std::string round = to == DType::kF16 ? "kiln_round_to_f16(" : "kiln_round_to_bf16(";
    return round + (from == DType::kF64 ? x : "(float)" + x) + ")";
  }
  if (is_float(to) || !is_float(from)) return "(" + to_type + ")" + x;
  // Float to integer: truncate toward zero, saturate, NaN to 0.
  const auto [lo, hi] = integer_range(to);
  return "kiln_float_to_int<" + to_type + ">(" + x + ", " + cuda_integer_literal(lo, to) + ", " +
         cuda_integer_literal(hi, to) + ")";
}

// A variadic op: the operands folded left to right as `combine` (a pattern of {0} and {1})
// does; with kMean the sum is divided by the operand count.
template <CudaPattern kCombine, bool kMean = false>
std::string fold(const CudaExprArgs& args) {
  std::string folded = args.operands[0];
  for (size_t i = 1; i < args.operands.size(); ++i) {
    folded = format_cuda_pattern(kCombine.chars, {args.node, {folded, args.operands[i]}});
  }
  if (!kMean) return folded;
  const DType dtype = args.node.result(0)->type().dtype;
  return "(" + folded + ") / " + cuda_literal(static_cast<double>(args.operands.size()), dtype);
}

std::map<std::string, CudaExprFn> make_table() {
  return {
      // Activations.
      {"relu", cuda_pattern<"{0} < 0 ? 0 : {0}">},
      {"leaky_relu", cuda_pattern<"{0} < 0 ? {alpha} * {0} : {0}">},
      {"elu", cuda_pattern<"{0} < 0 ? {alpha} * expm1({0}) : {0}">},
      {"selu", cuda_pattern<"{0} <= 0 ? {gamma} * ({alpha} * exp({0}) - {alpha}) : {gamma} * {0}">},
      {"sigmoid", cuda_pattern<"kiln_sigmoid({0})">},
      {"silu", cuda_pattern<"{0} * kiln_sigmoid({0})">},
      {"swish", cuda_pattern<"{0} * kiln_sigmoid({alpha} * {0})">},
      {"hard_sigmoid", cuda_pattern<"kiln_clamp<{T}>({alpha} * {0} + {beta}, 0, 1)">},
      {"hard_swish", cuda_pattern<"{0} * kiln_clamp<{T}>(({T})(1.0 / 6) * {0} + ({T})0.5, 0, 1)">},
      {"softplus", cuda_pattern<"kiln_softplus({0})">},
      {"softsign", cuda_pattern<"{0} / (1 + fabs({0}))">},
      {"mish", cuda_pattern<"{0} * tanh(kiln_softplus({0}))">},
      {"celu", cuda_pattern<"{0} > 0 ? {0} : {alpha} * expm1({0} / {alpha})">},
      {"thresholded_relu", cuda_pattern<"{0} > {alpha} ? {0} : 0">},
      {"shrink", cuda_pattern<"kiln_shrink({0}, {lambd:f64}, {bias:f64})">},
      {"gelu", &gelu_expr},
      // Float math.
      {"tanh", cuda_pattern<"tanh({0})">},
      {"erf", cuda_pattern<"erf({0})">},
      {"exp", cuda_pattern<"exp({0})">},
      {"log", cuda_pattern<"log({0})">},
      {"sqrt", cuda_pattern<"sqrt({0})">},
      {"sin", cuda_pattern<"sin({0})">},
      {"cos", cuda_pattern<"cos({0})">},
      {"tan", cuda_pattern<"tan({0})">},
      {"asin", cuda_pattern<"asin({0})">},
      {"acos", cuda_pattern<"acos({0})">},
      {"atan", cuda_pattern<"atan({0})">},
      {"sinh", cuda_pattern<"sinh({0})">},
      {"cosh", cuda_pattern<"cosh({0})">},
      {"asinh", cuda_pattern<"asinh({0})">},
      {"acosh", cuda_pattern<"acosh({0})">},
      {"atanh", cuda_pattern<"atanh({0})">},
      {"reciprocal", cuda_pattern<"1 / {0}">},
      // Sign, magnitude and rounding (round: halves to even, as the reference's nearbyint).
      {"neg", cuda_pattern<"kiln_neg({0})">},
      {"abs", cuda_pattern<"kiln_abs({0})">},
      {"sign", cuda_pattern<"{0} > 0 ? ({T})1 : {0} < 0 ? ({T})-1 : {0}">},
      {"floor", cuda_pattern<"floor({0})">},
      {"ceil", cuda_pattern<"ceil({0})">},
      {"round", cuda_pattern<"rint({0})">},
      {"clip", cuda_pattern<"kiln_clamp<{T}>({0}, {min}, {max})">},
      // Predicates and bitwise not.
      {"is_nan", cuda_pattern<"isnan({0})">},
      {"is_inf", cuda_pattern<"kiln_is_inf({0}, {detect_negative}, {detect_positive})">},
      {"not", cuda_pattern<"!{0}">},
      {"bitwise_not", cuda_pattern<"~{0}">},
      // Type conversion and pass-through.
      {"cast", &cast_expr},
      {"identity", cuda_pattern<"{0}">},
      // Arithmetic.
      {"add", cuda_pattern<"{0} + {1}">},
      {"sub", cuda_pattern<"{0} - {1}">},
      {"mul", cuda_pattern<"{0} * {1}">},
      {"div", cuda_pattern<"kiln_div({0}, {1})">},
      {"mod", cuda_pattern<"kiln_mod({0}, {1}, {fmod})">},
      {"pow", &pow_expr},
      {"prelu", cuda_pattern<"{0} < 0 ? {1} * {0} : {0}">},
      // Variadic.
      {"max", &fold<"kiln_max({0}, {1})">},
      {"min", &fold<"kiln_min({0}, {1})">},
      {"sum", &fold<"{0} + {1}">},
      {"mean", &fold<"{0} + {1}", /*kMean=*/true>},
      // Comparisons and boolean logic.
      {"equal", cuda_pattern<"{0} == {1}">},
      {"less", cuda_pattern<"{0} < {1}">},
      {"less_or_equal", cuda_pattern<"{0} <= {1}">},
      {"greater", cuda_pattern<"{0} > {1}">},
      {"greater_or_equal", cuda_pattern<"{0} >= {1}">},
      {"and", cuda_pattern<"{0} && {1}">},
      {"or", cuda_pattern<"{0} || {1}">},
      {"xor", cuda_pattern<"{0} != {1}">},
      // Bitwise logic on integers.
      {"bitwise_and", cuda_pattern<"{0} & {1}">},
      {"bitwise_or", cuda_pattern<"{0} | {1}">},
      {"bitwise_xor", cuda_pattern<"{0} ^ {1}">},
      {"bit_shift", &bit_shift_expr},
      {"where", cuda_pattern<"{0} ? {1} : {2}">},
      // Inference batch normalization: a per-channel affine map of each element.
      {"batch_normalization", cuda_pattern<"{1} * ({0} - {3}) / sqrt({4} + {epsilon}) + {2}">},
  };
}

}  // namespace

const std::map<std::string, CudaExprFn>& op_expression_table() {
  static const std::map<std::string, CudaExprFn> table = make_table();
  return table;
}

CudaExprFn find_op_expression(const std::string& op) {
  const auto& table = op_expression_table();
  const auto it = table.find(op);
  return it == table.end() ? nullptr : it->second;
}

}  // namespace kiln::codegen
