// Contraction kernels: fusion.epilogue, and single gemm, matmul and conv nodes. Every one is a
// batched GEMM, out[b, m, n] = Σ_k A(b, m, k) · B(b, k, n), computed in f32 (f32 accumulation
// for 16-bit operands; operands rounded to TF32 when the op's tf32 attribute is set):
//
//   matmul  A, B: the operands (numpy batch broadcasting); b over the result's batch dims
//   gemm    alpha · op(A) · op(B) + beta · C, op = transpose when transA / transB
//   conv    2-D, implicit GEMM per group b: m = (image, out_y, out_x), n = output channel of
//           the group, k = (input channel of the group, kernel_y, kernel_x); padding reads 0
//
// A block computes a 64 × 64 tile of one b: 256 threads, 4 × 4 outputs each, K in steps of 16
// staged through shared memory. The operands' elements come from the element machinery
// (codegen/element_emitter.h), so a fusion's prologue ops (cast, scale, slice, transpose, ...)
// are computed as the tile loads them. Each result element then goes through the fusion's
// epilogue (bias, activation, residual, cast, ...) at its flat output index and is stored.
#pragma once

#include "codegen/kernel_body.h"
#include "codegen/kernel_spec.h"

namespace kiln::codegen {

// Whether `body` is a contraction kernel (its anchor is a gemm, matmul or conv).
bool is_contraction_body(const KernelBody& body);

// Throws UnsupportedError naming what it cannot do yet (rank-1 matmul operands, convolutions
// other than 2-D, conv_transpose).
KernelSpec emit_contraction_kernel(const KernelBody& body);

}  // namespace kiln::codegen
