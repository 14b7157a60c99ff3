// The tiled attention kernel (FlashAttention-style): on tensor cores for 16-bit Q', K', P', V'
// (f16 or bf16), on the CUDA cores for f32.
//
//   - a block (128 threads, 4 warps) takes one batch index and a tile of query rows; each warp
//     16 rows in the mma accumulator's layout (a thread: rows g and g + 8, columns 2t, 2t + 1 of
//     each 8). The 4 warps take 64 different rows and all keys, or share 32 (or 16) rows and
//     split each key tile between them, their partial rows combined at the end: three tactics,
//     the heuristic taking 64 rows where the grid has a block per SM or more, else 32 or 16
//     (more blocks and warps for small batches); a fourth on the strided fast path with an online
//     softmax: each warp two groups of 16 rows (128 a block, Q' staged after the V' buffers), so
//     that each K' and V' fragment read by ldmatrix feeds two mmas (shared-memory reads were the
//     bound: 16 ldmatrix.x4 for 32 mmas a key tile and warp);
//   - the Q' tile is read through the element machinery (any prologue of slices, reshapes,
//     transposes, casts and scales works; rows past M read row M − 1 and are not stored);
//   - strided fast path (16-bit): when Q', K', V' are strided views of inputs (strided_view.h),
//     perhaps scaled by one-element constants, head size contiguous and rows 16-byte aligned,
//     their rows come by cp.async (Q' once; K' and V' [key][·] double-buffered, the next tile's
//     copies in flight during this tile's math), the scalar ops run on the copied chunks (Q'
//     and K' each scaled by one f16 constant, as torch exports sdpa: the constants' product
//     scales the f32 scores instead), and fragments come by ldmatrix (.trans for V');
//   - per key tile (64 keys of 16-bit values; 32 keys of floats) K' and V' are read the same way
//     into shared memory, keys past N as zeros; S = Q'·K' by mma.sync m16n8k16 with f32
//     accumulation (Q' kept as A fragments, K' [key][d] and V'ᵀ [e][key] read as 32-bit pairs,
//     rows padded by 8 values: no bank conflicts), or by f32 FMAs from float4 reads;
//   - each score (f32, not rounded to the matmul's 16-bit type) goes through the ops up to the
//     softmax's operand in registers, at its flat index (a mask broadcast over heads and rows is
//     read there); keys past N score −inf, and a warp's 8-key groups wholly past N skip their
//     mmas: a partial last key tile has code of its own, so that whole tiles run without those
//     tests (in every tile they kept the compiler from hoisting the ldmatrix addresses: ViT-B/16
//     b32's attention went from 0.0409 to 0.0326 ms on an H200 without them);
//   - softmax per query row: the four lanes of a row combine their maxima with shuffles.
//     When only casts lead from the softmax to P' (one pass, online softmax): a running max and
//     sum, the accumulator rescaled when the max grows, P = exp(s − max) (ex2.approx, max.NaN on
//     tensor cores) rounded to P''s type as it packs into the mma A fragments, O divided by the
//     sum at the end. PyTorch's NaN guard
//     where(is_nan(P), 0, P) among those casts also takes one pass: a row's P is NaN everywhere
//     (a NaN score, or every score −inf) or nowhere, so a guarded row gets p = 0 from the tile
//     its NaN shows in the running max (its O scaled by 0 then) and O = Σ 0·V' undivided.
//     Otherwise two passes: the
//     row max and sum over all keys first, then P = exp(s − max) / sum at each score's index
//     through the ops to P' exactly as the body computes them;
//   - O += P'·V' by mma (16-bit) or through a per-warp P tile in shared memory (f32, rounded to
//     TF32 where the matmul's tf32 attribute is set);
//   - at the end the warps' partial O and row statistics meet in shared memory (reusing the
//     tiles), and the block's threads write each output element through the epilogue; with one
//     key split (online) each thread divides its rows by their sums in registers first, and where
//     O is the body's one 16-bit output the block stores it 8 columns (16 bytes) a thread.
//
// Shared memory, at most about 36 KB: 16-bit: 64 × (D + 8) + E × 72 values (Q' staged in the K'
// buffer); strided: 2 × 64 × (D + 8) + 2 × 64 × (E + 8) values (dynamic above 48 KB); f32: Q' 64 ×
// (D + 4), K' and V' 32 × (D + 4), 32 × (E + 4), P 64 × (keys a warp + 4).
#pragma once

#include <string>
#include <vector>

#include "codegen/attention_body.h"
#include "codegen/kernel_spec.h"
#include "target/target.h"

namespace kiln::codegen {

// Whether the tiled kernel can compute `body`: on tensor cores, 16-bit matmul operands (the
// same type for each matmul), head size D a multiple of 16 and E of 8, each at most 128, and a
// softmax not in f64; on the CUDA cores, f32 operands, scores, softmax and O, D a multiple of 4
// and E of 8, each at most 64.
bool fits_tiled_attention(const AttentionShape& shape);

// The ways of dividing a block's 4 warps, the heuristic's first: 4, 2 or 1 groups of 16 query
// rows, each key tile split between the other 4 / groups warps ("64 query rows a block", "32
// query rows a block, key tiles split in 2", "16 query rows a block, key tiles split in 4"). The
// heuristic takes the most row groups whose grid has a block for every SM of `target`; a choice
// with more row groups than the queries fill is not offered. Last, where Q', K' and V' are
// strided views on tensor cores with an online softmax, head sizes at most 64 and more than 64
// queries, "128 query rows a block, 32 a warp": each warp two groups of 16 rows, so that every
// K' and V' fragment read from shared memory feeds two mmas.
std::vector<std::string> tiled_attention_tactics(const KernelBody& body,
                                                 const AttentionShape& shape, const Target& target);

// The kernel the way `tactic` indexes in tiled_attention_tactics(shape, target).
KernelSpec emit_tiled_attention_kernel(const KernelBody& body, const AttentionShape& shape,
                                       const Target& target, int tactic = 0);

}  // namespace kiln::codegen
