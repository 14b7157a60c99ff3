// The mixed-precision policy: precision names and each op's class (see precision_policy.h).
#include "passes/precision_policy.h"

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

PrecisionClass precision_class(const OpInfo& op, const std::set<std::string>& keep_fp32) {
  return keep_fp32.count(op.name) ? PrecisionClass::kF32 : op.precision;
}

}  // namespace kiln::passes
