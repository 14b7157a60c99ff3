// The tiled attention kernel on tensor cores (FlashAttention-style), for fusion.attention bodies
// whose matmul operands Q', K', P', V' are 16-bit (f16 or bf16):
//
//   - a block takes one batch index and a tile of 16·W query rows, W warps of 16 rows each
//     (W = 4, or 2 or 1 when the grid would otherwise have fewer than 128 blocks);
//   - the block's Q' tile is read through the element machinery (so any prologue of slices,
//     reshapes, transposes, casts and scales works), rounded to the 16-bit type, staged in shared
//     memory and kept in registers as mma A fragments;
//   - per tile of 64 keys: K' (64 keys × D, key-major) and V' (E × 64 keys, transposed so that
//     both B operands are read as 32-bit pairs) are read the same way into shared memory, keys
//     past N as zeros; S = Q'·K' by mma.sync m16n8k16 with f32 accumulation; each score element
//     goes through the ops up to the softmax's operand in registers, at its flat index (a mask
//     broadcast over heads and rows is read there); keys past N score −inf;
//   - online softmax per query row (running max and sum; the four lanes that share a row
//     combine their maxima with shuffles; the accumulator is rescaled when the max grows);
//     P = exp(s − max) is rounded to P''s 16-bit type as it is packed into the A fragments
//     (where the body casts the softmax's result) and O += P·V' by mma;
//   - at the end O / sum (the quad's sums combined) goes through the epilogue per element;
//     rows past M are computed from clamped (valid) indices and not stored.
//
// Shared memory: 64 × (D + 8) + E × 72 16-bit values (the 8 of padding keep fragment reads free
// of bank conflicts); the Q' tile is staged in the K' buffer before the loop.
#pragma once

#include "codegen/attention_body.h"
#include "codegen/kernel_spec.h"

namespace kiln::codegen {

// Whether the tensor-core kernel can compute `body`: 16-bit matmul operands (the same type for
// each matmul), head size D a multiple of 16 and E of 8 (each at most 128), nothing but casts
// from the softmax to the second matmul's operand, and a softmax not in f64.
bool fits_mma_attention(const AttentionShape& shape);

KernelSpec emit_mma_attention_kernel(const KernelBody& body, const AttentionShape& shape);

}  // namespace kiln::codegen
