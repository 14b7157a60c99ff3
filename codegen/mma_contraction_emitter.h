// The tensor-core contraction kernel, for gemm, matmul and conv whose operands are f16 or bf16
// (what the mixed-precision pass gives them): mma.sync.m16n8k16 with f32 accumulators; or f32
// with the op's tf32 attribute: mma.sync.m16n8k8, each fragment element rounded to TF32 with
// cvt.rna's rounding (kiln_round_to_tf32, as the reference interpreter rounds), K steps of 16,
// f32 tiles, fragments read from shared memory element by element.
//
// A block computes a block_m × block_n tile of one b (codegen/contraction_tiling.h: 128×128 with
// 8 warps, 64×64 with 4), each warp a (block_m / warps_m) × (block_n /
// warps_n) part of it as 16×8 mma tiles. K advances kMmaTileK (32; TF32: 16) at a time, through
// two shared-memory buffers per operand:
//
//   step s:  registers ──store──► shared[s % 2];  cp.async wait;  __syncthreads
//            issue step s + 1's loads (registers / cp.async into shared[(s + 1) % 2])
//            ldmatrix + mma on shared[s % 2]      (the loads' latency hides behind them)
//
// One barrier a step suffices: a buffer is written again only after every warp has passed the
// barrier that follows its last reads. When both operands come by cp.async, the copies run three
// steps ahead through four buffers (cp.async.wait_group 2 before each step's barrier), in dynamic
// shared memory when they pass the 48 KiB of static shared memory (128×128 tiles: 74 KiB). A tile
// is stored with its rows along the dimension along which the operand lies contiguous in memory
// (ContractionView: k for a row-major matmul A, m = output pixels for a convolution's input, k for
// its weights), so consecutive threads read consecutive addresses; ldmatrix (.trans where the rows
// run along m or n) then gives the mma fragments. Rows are padded by 16 bytes, which puts the 8
// rows one ldmatrix reads in 8 distinct groups of 4 banks (TF32: padded so lanes' 32-bit reads hit
// distinct banks). An operand that is a plain buffer read as it lies comes by cp.async (16, 8 or 4
// bytes, TF32 16 or 8: the widest its contiguous runs allow, so a vector is wholly inside or
// outside the operand); any other is register-staged: each thread computes pairs of neighbouring
// elements (TF32: single f32 elements) through the element machinery (so a fusion's prologue ops
// are computed as the tile loads them; padding and out-of-range elements read 0), rounds them to
// the operand type and keeps them packed (f16x2 / bf16x2) until the store.
//
// Results: each accumulator element goes through emit_contraction_result (the op's bias, the
// fusion's epilogue, the stores) at (b, m, n); with split-K, each block writes its slice's sums
// to the workspace instead, workspace[((split · batch + b) · rows + m) · cols + n] (or with m
// and n swapped where the result is contiguous along m: a convolution's), and
// emit_split_k_sum_kernel's kernel adds the slices and runs the epilogue, once per element,
// walking the workspace in order.
#pragma once

#include "codegen/contraction_tiling.h"
#include "codegen/contraction_view.h"
#include "codegen/kernel_spec.h"

namespace kiln::codegen {

// The widest cp.async, in elements (16, 8 or 4 bytes, at least two elements), that runs of `run`
// consecutive elements of `operand` allow; 0 when `operand` is neither a kernel input nor a
// constant of more than one element (a value the kernel computes is register-staged).
int async_vector_width(const KernelParams& params, const Value* operand, int64_t run,
                       int element_bytes);

// The f32 elements of split-K's workspace: each of `splits` slices' partial sums for every result
// element.
int64_t split_k_workspace_floats(const ContractionView& view, int splits);

// Writes a slice's partial `sum` of result element (m, n) to the workspace (declared on first
// use): blockIdx.z = slice · batch + b, the workspace [slice][b][m][n], or [slice][b][n][m] where
// the result is contiguous along m (so emit_split_k_sum_kernel reads and writes in order).
void emit_split_k_store(ElementEmitter& e, KernelParams& params, const ContractionView& view,
                        int splits, const std::string& m, const std::string& n,
                        const std::string& sum);

// Whether result elements (b, m, n) ... (b, m, n + width - 1) of an unsplit contraction, n a
// multiple of `width`, may be written as one store of 2 · width bytes: a result contiguous along
// n with a multiple of `width` columns (so a run never straddles a row and starts aligned), and
// 16-bit outputs, each as many elements as the contraction's result (an elementwise epilogue's).
// With `f32_outputs`, f32 outputs count too (stored as runs of width · 4 bytes: a residual
// stream kept in f32 beside its 16-bit copy).
bool stores_result_runs(const KernelBody& body, const Node& anchor, const ContractionView& view,
                        int width, bool f32_outputs = false);

// Writes result elements (b, m, n) and (b, m, n + 1) from their sums `low` and `high`: the op's
// result and the epilogue at each, then one 32-bit store per output. Call it inside a block of
// its own, under stores_result_runs(..., 2).
void emit_paired_results(ElementEmitter& e, const KernelBody& body, const Node& anchor,
                         ContractionView& view, const std::vector<std::string>& outputs,
                         const std::string& b, const std::string& m, const std::string& n,
                         const std::string& low, const std::string& high);

// Whether `anchor`'s operands suit the tensor-core kernel (both f16, both bf16, or f32 with
// tf32=1).
bool uses_tensor_cores(const Node& anchor);

// The tensor-core kernel. With tiling.splits > 1 it writes partial sums to a workspace
// parameter instead of the body's outputs.
KernelSpec emit_mma_contraction_kernel(const KernelBody& body, const Node& anchor,
                                       ContractionView& view, const MmaTiling& tiling);

// Split-K's second kernel (after the mma.sync or the wgmma kernel): per result element, the sum
// of the `splits` slices in the workspace, then the op's result and the epilogue.
KernelSpec emit_split_k_sum_kernel(const KernelBody& body, const Node& anchor,
                                   ContractionView& view, int splits);

}  // namespace kiln::codegen
