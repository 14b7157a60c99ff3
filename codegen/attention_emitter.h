// Attention kernels: fusion.attention, whose body is
//
//   S = matmul(Q', K')  →  scores = ops(S) (scale, mask, casts)  →  P = softmax(scores, last axis)
//   →  P' = ops(P) (casts)  →  O = matmul(P', V')  →  outputs = ops(O) (epilogue)
//
// with Q', K', V' computed from the body's inputs by prologue ops (slice, reshape, transpose,
// cast, scale, ...). Two kernels:
//   - the tiled kernel (codegen/attention_tiled_emitter.h, fits_tiled_attention): on tensor
//     cores for 16-bit Q', K', P', V' (head size D a multiple of 16, E of 8, each at most 128),
//     on the CUDA cores for f32 (D a multiple of 4, E of 8, each at most 64);
//   - otherwise (f64, other head sizes) one thread block per query row (batch dims × M rows),
//     128 threads:
//     1. the row of Q' into shared memory (threads over the head size D);
//     2. each key j (threads over N keys): s_j = Σ_d Q'[d]·K'[d, j], then the ops up to the
//        softmax's operand at the score's flat index (S bound there), kept in shared memory;
//     3. softmax over j with a block max and a block sum, then the ops up to P';
//     4. each column e (threads over E): O = Σ_j P'_j·V'[j, e], then every body output at O's
//        flat index (O bound there).
//     Accumulation is in f32 (f64 for f64 scores); operands round to TF32 where a matmul's tf32
//     attribute is set.
// Both read the operands' elements through the element machinery (codegen/element_emitter.h),
// so the prologues need no special case; batch dims broadcast as matmul's do.
#pragma once

#include <string>
#include <vector>

#include "codegen/kernel_body.h"
#include "codegen/kernel_spec.h"
#include "target/target.h"

namespace kiln::codegen {

// Whether `body` is an attention kernel (a fusion.attention's body).
bool is_attention_body(const KernelBody& body);

// Throws UnsupportedError for what it cannot generate: rank-1 matmul operands, a softmax not
// over the last axis, shapes that change between the matmuls and the softmax, outputs that do
// not read the second matmul's result element for element, or a row that needs more than 48 KB
// of shared memory (the row kernel).
KernelSpec emit_attention_kernel(const KernelBody& body, const Target& target, int tactic = 0);

// The tiled kernel's ways of computing `body` (attention_tiled_emitter.h), the heuristic's first;
// none for the row kernel.
std::vector<std::string> attention_tactics(const KernelBody& body, const Target& target);

}  // namespace kiln::codegen
