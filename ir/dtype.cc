// DType names and sizes.
#include "ir/dtype.h"

#include <array>
#include <limits>

namespace kiln {
namespace {

struct DTypeInfo {
  DType dtype;
  std::string_view name;
  size_t size;
};

constexpr std::array<DTypeInfo, 9> kDTypes = {{
    {DType::kF32, "f32", 4},
    {DType::kF16, "f16", 2},
    {DType::kBF16, "bf16", 2},
    {DType::kF64, "f64", 8},
    {DType::kI64, "i64", 8},
    {DType::kI32, "i32", 4},
    {DType::kI8, "i8", 1},
    {DType::kU8, "u8", 1},
    {DType::kBool, "bool", 1},
}};

const DTypeInfo& info(DType dtype) { return kDTypes[static_cast<size_t>(dtype)]; }

}  // namespace

std::string_view dtype_name(DType dtype) { return info(dtype).name; }

std::optional<DType> parse_dtype(std::string_view name) {
  for (const DTypeInfo& entry : kDTypes) {
    if (entry.name == name) return entry.dtype;
  }
  return std::nullopt;
}

size_t dtype_size(DType dtype) { return info(dtype).size; }

bool is_16_bit_float(DType dtype) { return dtype == DType::kF16 || dtype == DType::kBF16; }

bool is_float(DType dtype) {
  return dtype == DType::kF32 || dtype == DType::kF16 || dtype == DType::kBF16 ||
         dtype == DType::kF64;
}

bool is_integer(DType dtype) {
  return dtype == DType::kI64 || dtype == DType::kI32 || dtype == DType::kI8 || dtype == DType::kU8;
}

bool is_signed(DType dtype) { return dtype != DType::kU8 && dtype != DType::kBool; }

std::pair<int64_t, int64_t> integer_range(DType dtype) {
  switch (dtype) {
    case DType::kI32:
      return {std::numeric_limits<int32_t>::min(), std::numeric_limits<int32_t>::max()};
    case DType::kI8:
      return {std::numeric_limits<int8_t>::min(), std::numeric_limits<int8_t>::max()};
    case DType::kU8:
      return {0, std::numeric_limits<uint8_t>::max()};
    case DType::kBool:
      return {0, 1};
    default:
      return {std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max()};
  }
}

}  // namespace kiln
