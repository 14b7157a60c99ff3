// CUDA types, literals and pattern expansion for the op table's element expressions.
#include "codegen/cuda_expr.h"

#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <limits>

#include "ir/error.h"
#include "ir/graph.h"

namespace kiln::codegen {
namespace {

// The shortest text that reads back as `value`, with a '.' or an exponent so C reads a float.
template <class F>
std::string shortest_float_text(F value) {
  char buffer[64];
  const auto result = std::to_chars(buffer, buffer + sizeof buffer, value);
  std::string text(buffer, result.ptr);
  if (text.find_first_of(".e") == std::string::npos) text += ".0";
  return text;
}

std::string parenthesize_negative(std::string text) {
  return text.starts_with('-') ? "(" + text + ")" : text;
}

std::string float_literal(double value, DType dtype) {
  if (dtype == DType::kF64) {
    if (std::isnan(value)) return "__longlong_as_double(0x7ff8000000000000LL)";
    if (std::isinf(value)) {
      return value > 0 ? "__longlong_as_double(0x7ff0000000000000LL)"
                       : "__longlong_as_double(0xfff0000000000000LL)";
    }
    return parenthesize_negative(shortest_float_text(value));
  }
  const float single = static_cast<float>(value);
  if (std::isnan(single)) return "__int_as_float(0x7fffffff)";
  if (std::isinf(single)) {
    return single > 0 ? "__int_as_float(0x7f800000)" : "__int_as_float(0xff800000)";
  }
  return parenthesize_negative(shortest_float_text(single) + "f");
}

std::string integer_literal_from_double(double value, DType dtype) {
  const auto [lo, hi] = integer_range(dtype);
  if (std::isnan(value)) return cuda_integer_literal(0, dtype);
  const double truncated = std::trunc(value);
  if (truncated <= static_cast<double>(lo)) return cuda_integer_literal(lo, dtype);
  if (truncated >= static_cast<double>(hi)) return cuda_integer_literal(hi, dtype);
  return cuda_integer_literal(static_cast<int64_t>(truncated), dtype);
}

// One placeholder's text: an operand, {T}, or an attribute.
std::string expand_placeholder(std::string_view name, const CudaExprArgs& args) {
  const DType result = args.node.result(0)->type().dtype;
  if (name == "T") return std::string(cuda_compute_type(result));
  if (!name.empty() && std::isdigit(static_cast<unsigned char>(name[0]))) {
    const size_t index = std::stoul(std::string(name));
    if (index >= args.operands.size()) {
      throw InternalError("CUDA pattern of " + args.node.op() + " uses operand " +
                          std::string(name) + " of " + std::to_string(args.operands.size()));
    }
    return args.operands[index];
  }
  const bool as_double = name.ends_with(":f64");
  const std::string attr_name(as_double ? name.substr(0, name.size() - 4) : name);
  const Attribute& attr = args.node.attr(attr_name);
  switch (attr.kind()) {
    case AttrKind::kFloat:
      return cuda_literal(attr.as_float(), as_double ? DType::kF64 : result);
    case AttrKind::kInt:
      return cuda_integer_literal(attr.as_int(), DType::kI64);
    case AttrKind::kString:
      return attr.as_string();
    default:
      throw InternalError("CUDA pattern of " + args.node.op() + " uses attribute '" + attr_name +
                          "', which is not an int, float or string");
  }
}

}  // namespace

std::string_view cuda_compute_type(DType dtype) {
  switch (dtype) {
    case DType::kF32:
    case DType::kF16:
    case DType::kBF16:
      return "float";
    case DType::kF64:
      return "double";
    case DType::kI64:
      return "long long";
    case DType::kI32:
      return "int";
    case DType::kI8:
      return "signed char";
    case DType::kU8:
      return "unsigned char";
    case DType::kBool:
      return "bool";
  }
  throw InternalError("cuda_compute_type: unknown dtype");
}

std::string_view cuda_storage_type(DType dtype) {
  if (dtype == DType::kF16 || dtype == DType::kBF16) return "unsigned short";
  return cuda_compute_type(dtype);
}

std::string cuda_integer_literal(int64_t value, DType dtype) {
  if (value == std::numeric_limits<int64_t>::min()) return "(-9223372036854775807LL - 1)";
  const std::string suffix = dtype == DType::kI64 ? "LL" : "";
  return parenthesize_negative(std::to_string(value) + suffix);
}

std::string cuda_literal(double value, DType dtype) {
  if (dtype == DType::kBool) return value != 0 ? "true" : "false";
  if (is_float(dtype)) return float_literal(value, dtype);
  return integer_literal_from_double(value, dtype);
}

std::string format_cuda_pattern(std::string_view pattern, const CudaExprArgs& args) {
  std::string text;
  size_t at = 0;
  while (at < pattern.size()) {
    const size_t open = pattern.find('{', at);
    if (open == std::string_view::npos) {
      text += pattern.substr(at);
      break;
    }
    const size_t close = pattern.find('}', open);
    if (close == std::string_view::npos) {
      throw InternalError("CUDA pattern of " + args.node.op() +
                          " has an unclosed '{': " + std::string(pattern));
    }
    text += pattern.substr(at, open - at);
    text += expand_placeholder(pattern.substr(open + 1, close - open - 1), args);
    at = close + 1;
  }
  return text;
}

}  // namespace kiln::codegen
