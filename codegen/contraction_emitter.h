// Contraction kernels: fusion.epilogue, and single gemm, matmul and conv nodes. Every one is a
// batched GEMM, out[b, m, n] = Σ_k A(b, m, k) · B(b, k, n) (codegen/contraction_view.h maps
// (b, m, k), (b, k, n), (b, m, n) to each op's operands and result), computed in f32. Two
// kernels:
//
//   tensor cores   operands f16 or bf16 (after the mixed-precision pass): mma.sync.m16n8k16;
//                  f32 operands of an op with tf32=1: rounded to TF32, mma.sync.m16n8k8. f32
//                  accumulators, block tiles and split-K chosen per problem
//                  (codegen/mma_contraction_emitter.h, codegen/contraction_tiling.h). A split
//                  contraction is two kernels: the slices' sums into an f32 workspace, then
//                  their sum through the epilogue.
//   SIMT           everything else (f32 without tf32, f64, integers): a 64 × 64 tile of one b
//                  per block, 256 threads, 4 × 4 outputs each, K in steps of 16 staged through
//                  shared memory; in f32 for f32, f64 for f64, and for integers 64-bit tiles
//                  with unsigned 64-bit sums that wrap as the reference's do (an integer matmul
//                  summed in f32 until session 25: wrong beyond 2^24).
//
// In both, the operands' elements come from the element machinery (codegen/element_emitter.h),
// so a fusion's prologue ops (cast, scale, slice, transpose, ...) are computed as the tile loads
// them, and each result element goes through the fusion's epilogue (bias, activation, residual,
// cast, ...) at its flat output index, exactly once.
#pragma once

#include <string>
#include <vector>

#include "codegen/kernel_body.h"
#include "codegen/kernel_spec.h"
#include "target/target.h"

namespace kiln::codegen {

// Whether `body` is a contraction kernel (its anchor is a gemm, matmul or conv).
bool is_contraction_body(const KernelBody& body);

// The kernels of a contraction for `target`, in launch order: one, or two when it is split along
// K (tensor-core contractions at least 2 · kMinSplitTiles K-steps of kMmaTileK deep whose grid
// leaves SMs idle, contraction_tiling.h), which share an f32 workspace parameter. Throws
// UnsupportedError naming what it cannot do (convolutions other than 2-D: lowering gives those
// and conv_transpose to the direct conv kernels, codegen/direct_conv_emitter.h).
// `tactic` indexes contraction_tactics(body, target); SIMT contractions have one way (0).
std::vector<KernelSpec> emit_contraction_kernels(const KernelBody& body, const Target& target,
                                                 int tactic);

// The ways to compute a tensor-core contraction that measurement may choose from (kiln/
// autotune.h), the heuristic's first, each named ("wgmma 128x192 4 stages split 2", "mma.sync
// 64x64"): wgmma tilings (contraction_tiling.h's candidates that fit) and then the mma.sync
// kernel's heuristic tiling where the wgmma kernel takes the body, else mma.sync tilings; last
// "cuBLASLt" where its epilogue expresses the body's (library_gemm.h: the kernel of the first
// tactic that is one kernel, with KernelSpec::library set). Empty for SIMT contractions.
std::vector<std::string> contraction_tactics(const KernelBody& body, const Target& target);

}  // namespace kiln::codegen
