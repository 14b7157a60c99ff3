// The mixed-precision policy: precision names and the op lists (see precision_policy.h).
#include "passes/precision_policy.h"

#include <algorithm>

#include "ir/error.h"

namespace kiln::passes {

Precision parse_precision(const std::string& name) {
  if (name == "fp32") return Precision::kFP32;
  if (name == "tf32") return Precision::kTF32;
  if (name == "fp16") return Precision::kFP16;
  if (name == "bf16") return Precision::kBF16;
  throw InputError("unknown precision '" + name + "' (precisions: fp32, tf32, fp16, bf16)");
}

std::string_view precision_name(Precision precision) {
  switch (precision) {
    case Precision::kFP32:
      return "fp32";
    case Precision::kTF32:
      return "tf32";
    case Precision::kFP16:
      return "fp16";
    case Precision::kBF16:
      return "bf16";
  }
  throw InternalError("unknown Precision value");
}

std::optional<DType> half_dtype(Precision precision) {
  if (precision == Precision::kFP16) return DType::kF16;
  if (precision == Precision::kBF16) return DType::kBF16;
  return std::nullopt;
}

std::optional<DType> parse_io_precision(const std::string& name) {
  if (name == "declared") return std::nullopt;
  if (name == "fp16") return DType::kF16;
  if (name == "bf16") return DType::kBF16;
  throw InputError("unknown io precision '" + name + "' (io precisions: declared, fp16, bf16)");
}

void check_io_precision(Precision precision, std::optional<DType> io_dtype) {
  if (io_dtype && !half_dtype(precision)) {
    throw InputError("io precision " + std::string(dtype_name(*io_dtype)) +
                     " needs precision fp16 or bf16, not " +
                     std::string(precision_name(precision)) + " (--io-precision, --precision)");
  }
}

const std::vector<std::string>& low_precision_ops() {
  static const std::vector<std::string> ops = {"conv", "conv_transpose", "gemm", "matmul",
                                               "einsum"};
  return ops;
}

const std::vector<std::string>& f32_ops() {
  static const std::vector<std::string> ops = {
      // normalizations and softmax: means, variances and sums of exponentials
      "softmax", "log_softmax", "layer_normalization", "layer_normalization_with_stats",
      "group_normalization", "instance_normalization", "batch_normalization", "lrn",
      "mean_variance_normalization",
      // reductions
      "reduce_l1", "reduce_l2", "reduce_log_sum", "reduce_log_sum_exp", "reduce_max", "reduce_mean",
      "reduce_min", "reduce_prod", "reduce_sum", "reduce_sum_square", "cum_sum",
      // transcendental functions whose results overflow or lose digits in 16 bits
      "exp", "log", "pow", "erf",
      // 1/x and sqrt(x) of the small variances of hand-written normalizations
      "sqrt", "reciprocal"};
  return ops;
}

const std::vector<std::string>& tf32_ops() {
  static const std::vector<std::string> ops = {"conv", "conv_transpose", "gemm", "matmul"};
  return ops;
}

PrecisionRole precision_role(const std::string& op, const std::set<std::string>& keep_fp32) {
  const auto listed = [&op](const std::vector<std::string>& ops) {
    return std::find(ops.begin(), ops.end(), op) != ops.end();
  };
  if (keep_fp32.count(op) || listed(f32_ops())) return PrecisionRole::kF32;
  if (listed(low_precision_ops())) return PrecisionRole::kLowPrecision;
  return PrecisionRole::kFollowOperands;
}

}  // namespace kiln::passes
