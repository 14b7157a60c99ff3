// Element types of kiln tensors, with their names in IR text and their sizes in bytes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>
#include <utility>

namespace kiln {

enum class DType { kF32, kF16, kBF16, kF64, kI64, kI32, kI8, kU8, kBool };

// Name used in IR text: f32, f16, bf16, f64, i64, i32, i8, u8, bool.
std::string_view dtype_name(DType dtype);
std::optional<DType> parse_dtype(std::string_view name);
// The lowest and highest value of an integer dtype (bool: 0 and 1; other dtypes: int64's).
std::pair<int64_t, int64_t> integer_range(DType dtype);
size_t dtype_size(DType dtype);

bool is_float(DType dtype);    // f32, f16, bf16, f64
bool is_16_bit_float(DType dtype);  // f16, bf16: what the tensor cores multiply
bool is_integer(DType dtype);  // i64, i32, i8, u8
bool is_signed(DType dtype);   // floats and signed integers

}  // namespace kiln
