// Mixed precision: the precisions kiln computes in and, in one place, which ops run in which
// precision. The mixed-precision pass (passes/mixed_precision.cc) applies this policy.
//
// fp32: everything as declared (the pass does nothing).
// tf32: no casts; conv, conv_transpose, gemm and matmul on f32 operands get the attribute
//       tf32=1: their kernels round both product operands to TF32 (8-bit exponent, 10-bit
//       mantissa) before multiplying and accumulate in f32, as tensor cores do.
// fp16, bf16 (T, the 16-bit type):
//   - low-precision ops (low_precision_ops()): operands in T, result in T. Float constants
//     (weights, biases) become new T constants at compile time; other operands are cast.
//     The reference kernels compute 16-bit ops in f32 and round once when storing the result,
//     which is what f32 accumulation on the GPU gives.
//   - f32 ops (f32_ops() plus --keep-fp32): float operands cast to f32, results f32. These are
//     the ops whose results lose range or precision in 16 bits: normalizations and softmax
//     (sums of many terms), reductions, exp/log/pow/erf, sqrt and reciprocal (tiny variances
//     under a division), cumulative sums.
//   - every other op follows its operands: T when any of its float operands that is not a
//     constant is 16-bit, else f32 (constants follow the other operands, converted at compile
//     time). So a residual add of a T conv result and an f32 value runs in T.
//   - integer and bool values, f64 values and cast nodes are left alone.
//   Graph inputs and outputs keep their declared dtypes (casts at the boundary) unless an io
//   dtype is given: then float inputs and outputs declared f32 take that dtype.
#pragma once

#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "ir/dtype.h"

namespace kiln::passes {

enum class Precision { kFP32, kTF32, kFP16, kBF16 };

// "fp32", "tf32", "fp16" or "bf16" to a Precision; throws InputError on anything else.
Precision parse_precision(const std::string& name);
std::string_view precision_name(Precision precision);
// The 16-bit type of fp16 and bf16; nullopt for fp32 and tf32.
std::optional<DType> half_dtype(Precision precision);

// "declared" (nullopt: graph inputs and outputs keep their dtypes), "fp16" or "bf16"; throws
// InputError on anything else.
std::optional<DType> parse_io_precision(const std::string& name);
// Throws InputError when an io dtype comes with a precision other than fp16 or bf16.
void check_io_precision(Precision precision, std::optional<DType> io_dtype);

// Ops computed in the 16-bit type in fp16/bf16 mode.
const std::vector<std::string>& low_precision_ops();
// Ops computed in f32 in fp16/bf16 mode.
const std::vector<std::string>& f32_ops();
// Ops whose operands tf32 mode rounds to TF32 (they have the tf32 attribute).
const std::vector<std::string>& tf32_ops();

enum class PrecisionRole { kLowPrecision, kF32, kFollowOperands };
// The role of `op` in fp16/bf16 mode; `keep_fp32` (--keep-fp32) moves ops to kF32.
PrecisionRole precision_role(const std::string& op, const std::set<std::string>& keep_fp32);

}  // namespace kiln::passes
