// CUDA C++ types, literals and element expressions. The expression of an elementwise or broadcast
// op's result element (a CudaExprFn, kept per op in codegen/op_expressions.h) is written into
// loop and fusion kernels.
//
// In a kernel every element lives in the compute type of its dtype (cuda_compute_type): float
// for f32, f16 and bf16 (16-bit floats widen on load and round to nearest even on store),
// double for f64, and the storage type for integers and bool. An op's expression combines its
// operands' elements, each already in its operand's compute type, into a value of its result's
// compute type. Expressions may call the device functions of codegen/device_functions.cc (all
// named kiln_*); a kernel defines those it uses.
//
// Most ops give a pattern (cuda_pattern<"...">), the rest a function. In a pattern:
//   {0}, {1}, ...  the operands' elements
//   {T}            the compute type of the result
//   {name}         attribute `name`: a float as a literal of the result's compute type (integer
//                  types truncate and saturate it), an int as an integer literal, a string as is
//   {name:f64}     a float attribute as a double literal
// Example: leaky_relu is cuda_pattern<"{0} < 0 ? {alpha} * {0} : {0}">.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ir/dtype.h"

namespace kiln {
class Node;
}

namespace kiln::codegen {

struct CudaExprArgs {
  const Node& node;
  std::vector<std::string> operands;  // expressions (in practice: variable names)
};
using CudaExprFn = std::string (*)(const CudaExprArgs& args);

// "float" (f32, f16, bf16), "double", "long long", "int", "signed char", "unsigned char", "bool".
std::string_view cuda_compute_type(DType dtype);
// The type a buffer of `dtype` holds: as the compute type, but "unsigned short" for f16/bf16.
std::string_view cuda_storage_type(DType dtype);

// `value` as a literal of dtype's compute type: "0.5f", "0.5", "(-3)", "true"; infinities and
// NaN of floats through their bits ("__int_as_float(0x7f800000)"). Integer dtypes truncate
// toward zero and saturate to the dtype's range (NaN gives 0).
std::string cuda_literal(double value, DType dtype);
// An integer literal: "(-3)", "7", "7LL" for i64.
std::string cuda_integer_literal(int64_t value, DType dtype);

// Expands a pattern (see the file comment) for one node; throws InternalError on a malformed
// pattern and InputError on an attribute the node lacks.
std::string format_cuda_pattern(std::string_view pattern, const CudaExprArgs& args);

// A pattern as a template argument, so that cuda_pattern<"..."> is a CudaExprFn.
template <size_t N>
struct CudaPattern {
  constexpr CudaPattern(const char (&text)[N]) { std::copy_n(text, N, chars); }
  char chars[N];
};

template <CudaPattern kPattern>
std::string cuda_pattern(const CudaExprArgs& args) {
  return format_cuda_pattern(kPattern.chars, args);
}

}  // namespace kiln::codegen
