// TF32 operands for the matrix-product ops (conv, conv_transpose, gemm, matmul). With the
// attribute tf32=1 (set by the mixed-precision pass in tf32 mode) their reference kernels round
// both product operands to TF32 before multiplying, as tensor cores do, so the CPU result shows
// TF32's error; the products still accumulate in double, as every reference sum does. The bias
// (conv's B, gemm's C) is not rounded: it is added to the accumulated product.
//
// TF32 keeps f32's sign and 8-bit exponent and the top 10 of its 23 mantissa bits. Rounding is to
// nearest with ties away from zero, as cvt.rna.tf32.f32 does: the conversion every TF32 GPU has
// (sm_80 on; cvt.rn.tf32.f32, ties to even, needs sm_90), and what CUTLASS's default
// float-to-tfloat32 converter does. Ties (the 13 dropped bits exactly 0x1000) are the only inputs
// where this differs from ties-to-even. Infinities and NaN pass through; a finite value that
// rounds past the largest TF32 becomes infinity.
#pragma once

#include <type_traits>
#include <vector>

#include "ir/graph.h"
#include "ir/op_registry.h"

namespace kiln::nn {

float round_to_tf32(float value);

// The schema entry: tf32, an int, default 0.
AttrSpec tf32_attr();

// For the shape functions: throws InputError unless tf32 is 0, or 1 with f32 operands.
void check_tf32_attr(const Node& node);

// Rounds `values` (one product operand in the kernel's compute type) to TF32 when the node has
// tf32=1; check_tf32_attr guarantees the compute type is float then.
template <class T>
void round_operand_to_tf32(const Node& node, std::vector<T>& values) {
  if constexpr (std::is_same_v<T, float>) {
    if (node.int_attr("tf32") == 0) return;
    for (float& value : values) value = round_to_tf32(value);
  }
}

}  // namespace kiln::nn
