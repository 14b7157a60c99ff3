// Reduction kernels: fusion.reduction and single reduction ops (reduce_*, arg_max/arg_min,
// softmax, log_softmax, hardmax, layer/instance/group/mean-variance normalization, global pools;
// codegen/reduction_ops.h).
//
// The reduction's input X is viewed as rows × columns: the kept axes index rows, the reduced
// axes (any set) columns; adjacent axes of one kind merge, and the index arithmetic maps
// (row, column) back to X's flat index (group normalization sees X as [N, groups,
// channels / groups · spatial], codegen/reduction_ops.h). Prologue ops (the fusion's producers
// of X) are evaluated per X element through the element machinery
// (codegen/element_emitter.h); epilogue ops per output element.
//
// Schedules:
//   - columns contiguous in memory (the innermost axis reduced) and at least 32 of them: the
//     threads of a warp (rows of up to 1024 columns, 4 rows a block) or of a block (128 to 1024
//     threads, for longer rows) share a row, each taking every 32nd (or blockDim-th) column, and
//     combine with __shfl_xor_sync (and shared memory across warps). Each thread takes up to 32
//     columns: measured on an H200 (f16 rows of 768 and 4096 columns), 32 a thread beat 16, 8
//     and 4;
//   - strided rows (a kept axis innermost, so a row's columns lie apart; a channels-last global
//     pool's rows are its N·C channels, its H·W columns C elements apart) of at least 16
//     columns: a block takes up to 32 adjacent rows (a divisor of the innermost kept axis),
//     thread t row t % rows, so a warp reads neighbouring elements, and the row's columns are
//     shared by its threads (phases) t / rows, t / rows + phases, ...; the phases' accumulators
//     combine in thread order through shared memory (kiln_strided_reduce). Blocks take 128 to
//     1024 threads: enough phases for at most 32 columns each, more while there are fewer than
//     264 blocks and each phase keeps at least 8 columns. Before, one thread walked each row:
//     EfficientNet-B0's first squeeze-excitation pool (32 rows of 12544 columns at batch 1)
//     took 0.21 ms on an H200 in one block of 32 busy threads;
//   - otherwise (fewer columns) one thread per row, which keeps neighbouring threads on
//     neighbouring elements.
// Vectors: when a row is one contiguous run of X (the reduced axes are X's innermost ones) of a
// multiple of W columns, at least 32·W, threads take W neighbouring columns at a time (W: 16
// bytes of the widest buffer streamed per element of X, at most 8). Inputs and constants of X's
// size and the per-element outputs move as 16-byte vectors at the row's offset, operands of one
// element per column (layer norm's scale and bias) as vectors at the column; each lane is bound
// for the element machinery, so prologue and epilogue ops compute on it unchanged. f16 outputs
// are rounded two lanes at a time (cvt.rn.f16x2.f32). Other rows keep scalar accesses.
// When a row fits (at most 32 elements a thread), the first pass keeps the thread's elements of
// X in registers and later passes (softmax's exponentials, layer norm's variance, the output)
// read them from there, so X is read once and each output written once; longer rows are read
// again from memory in each pass. A plan may leave its last pass's terms in those registers
// (softmax keeps exp(x − max) for its output) when nothing else reads X.
//
// Float sums a thread takes more than 1024 terms of (rows read from memory) add them in chunk
// partials of at most 1024 terms, and the partials likewise, level upon level (kChunkTerms), so
// no fp32 running sum stops growing (one stops once it is 2^24 times its terms): sums and means
// of up to 2^40 elements stay within a few roundings of the exact value. Shorter sums keep one
// running sum.
//
// Outputs: a value with one element per row (the reduced result and its epilogue) is written
// once per row; a value with one element per X element (softmax, layer norm, and a prologue
// value the fusion also writes) in a last pass over the row.
//
// lrn, a reduction op by category, is computed by the LRN emitter (codegen/lrn_emitter.h).
#pragma once

#include "codegen/kernel_body.h"
#include "codegen/kernel_spec.h"

namespace kiln::codegen {

// Throws UnsupportedError naming the node for what it cannot generate.
KernelSpec emit_reduction_kernel(const KernelBody& body);

}  // namespace kiln::codegen
