// Mixed precision: the precisions kiln computes in, and which ops run in which precision. The
// latter is a fact of the op table (OpInfo::precision and OpInfo::rounds_to_tf32, set where each
// op is registered; ir/op_registry.h says why), which --keep-fp32 overrides. The mixed-precision
// pass (passes/mixed_precision.cc) applies this policy.
//
// fp32: everything as declared (the pass does nothing).
// tf32: no casts; the ops that round to TF32 (OpInfo::rounds_to_tf32: convolutions, gemm and
//       matmul) on f32 operands get the attribute tf32=1: their kernels round both product
//       operands to TF32 (8-bit exponent, 10-bit mantissa) before multiplying, as tensor cores
//       do (which accumulate in f32; the reference kernels accumulate in double).
// fp16, bf16 (T, the 16-bit type):
//   - low-precision ops (PrecisionClass::kLowPrecision: convolutions and matrix products):
//     operands in T, result in T. Float constants (weights, biases) become new T constants at
//     compile time; other operands are cast. The reference kernels accumulate the 16-bit
//     products in double and round once when storing the result: at least as exact as the
//     GPU's f32 accumulation.
//   - f32 ops (PrecisionClass::kF32: normalizations and softmax, reductions, cumulative sums,
//     exp/log/pow/erf, sqrt and reciprocal; plus --keep-fp32): float operands cast to f32,
//     results f32.
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

#include "ir/dtype.h"
#include "ir/op_registry.h"

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

// The class of `op` in fp16/bf16 mode: the op table's, or kF32 for the ops of `keep_fp32`
// (--keep-fp32).
PrecisionClass precision_class(const OpInfo& op, const std::set<std::string>& keep_fp32);

}  // namespace kiln::passes
