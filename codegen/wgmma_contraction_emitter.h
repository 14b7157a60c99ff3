// The Hopper contraction kernel (sm_90a only): gemm, matmul and 1×1 convolutions whose 16-bit
// operands are buffers read as they lie, on warpgroup MMA (wgmma.mma_async), f32 accumulators.
//
// A block of two warpgroups (256 threads) computes 128 × block_n outputs of one batch index
// (codegen/contraction_tiling.h chooses block_n; a tall tiling's block of three computes 192 ×
// block_n), each warpgroup 64 rows with one
// wgmma.m64n{block_n}k16 per 16 of depth, both operands read by the tensor cores from shared
// memory through matrix descriptors. K advances 64 a step: each operand's tile of a step is
// stored as 128-byte rows of 64 values in the 128-byte swizzle the descriptors name (the 16-byte
// chunk c of row r at r · 128 + (c ⊕ (r mod 8)) · 16, every 8 rows a 1024-byte atom):
//
//   K-major operand (A contiguous along k; B along k, as conv weights)  rows along m or n, 64 k
//     a row; the descriptor's stride between 8-row groups is 1024 bytes, and each k16 step
//     starts 32 bytes further along the rows
//   MN-major operand (A along m, as a 1×1 conv's input; B along n, as a matmul's weights)
//     rows along k, 64 m or n a row, blocks of 64 rows for each 64 m or n (8 KiB apart: the
//     descriptor's leading offset); each k16 step starts 16 rows (2 KiB) further; the wgmma's
//     transpose flag for that operand is set
//
// Copies are cp.async of 16 bytes (zero-filled past the operand's edges) into `stages` buffers:
//
//   prologue: copy steps 0 .. S-3
//   step s:   wait for step s's copies; fence.proxy.async (the tensor cores read what the copies
//             wrote); __syncthreads
//             copy step s+S-2 into buffer (s+S-2) mod S: step s-2's buffer, whose wgmmas every
//             warpgroup waited for during step s-1, before the barrier
//             wgmma.fence; four wgmma on buffer s mod S; commit; wait until only this step's
//             group is in flight
//
// so two steps' copies and one step's multiplies run while a step is issued.
//
// TMA (Hopper's bulk tensor copies), where an operand is a buffer read as it lies and a plain
// strided tensor (ContractionView::a_strides; 16-byte strides; split-K slices of whole steps):
// its tile of a step is one box (K-major: 64 k × the tile's rows) or one box per 64 rows
// (MN-major: 64 m or n × 64 k) of a tensor map whose 128-byte swizzle writes the layout above,
// copied by thread 0 with cp.async.bulk.tensor; the map (a kernel parameter, `const
// __grid_constant__ kiln_tensor_map g_mapI`, stated in the header's "// tensor maps:" line and
// encoded by the session for the step's pointer) has a third dimension over the batch where the
// operand differs between batch indices. Each stage has an mbarrier after the stages; thread 0
// arrives on it expecting the stage's TMA bytes, and every thread waits for its phase (step / S
// mod 2) in place of (or beside, when the other operand still takes cp.async) the cp.async wait.
// Thread 0 issues a step's copies after the step's barrier as cp.async would, only for steps
// before g_steps (outside the operand the boxes read zeros, as cp.async zero-fills). Removes
// the 16-byte copies' issue and address arithmetic from every thread (BERT-base's FFN
// up-projection: 12% faster on an H200 in the session-9 probe). Register 4j + r of
// a thread holds row 16 · warp + lane / 4 + 8 · (r / 2) of its warpgroup's 64, column
// 8j + 2 · (lane mod 4) + r mod 2. Where the outputs are 16-bit or f32 and runs of 8 columns stay
// in a row (stores_result_runs), the sums go through shared memory (the stages' bytes, free after
// the last step) as an f32 tile, and each thread finishes runs of 8 columns, consecutive threads
// consecutive runs of a row: 16-byte stores per output, one 16-byte load per 16-bit input read
// where the result lies (a residual). Otherwise the registers go through emit_contraction_result
// (or emit_paired_results) as the mma.sync kernel's do, and split-K slices to the workspace.
// Split-K in a cluster (WgmmaTiling::cluster): blockIdx.z = b · slices + slice, the slices of a
// tile one cluster (__cluster_dims__(1, 1, slices)); each stages its sums, a cluster barrier, the
// block of rank r adds its share of the rows (the tile's / slices, rounded up) from every slice's
// staged tile in slice order through distributed shared memory (mapa, ld.shared::cluster) into its
// own, a second cluster barrier, then it finishes those rows as above: no workspace, no sum kernel.
//
// The warp-specialized persistent variant (WgmmaTiling::persistent_blocks; a tactic measurement
// may choose, never the heuristic's), where TMA copies both operands: 384 threads, a block an SM
// taking tiles blockIdx.x, + gridDim.x, ...; warpgroup 0 gives back registers (setmaxnreg) and
// its thread 0 alone copies: for each of the block's tiles and K steps in turn it waits for the
// ring's next stage to be free (its "empty" mbarrier), arrives on its "full" one expecting the
// stage's bytes, and issues the boxes. Warpgroups 1 and 2 (the consumers, setmaxnreg up) take
// the block's tiles in turn, each a whole 128 × block_n tile (block_n ≤ 128: two m64 wgmmas a
// k16 step), freeing a stage once its wgmmas are done, and finish the tile while the other
// consumer multiplies: through a staged f32 tile of its own beside the stages (taken in turn, a
// named barrier for the consumer's 128 threads between its stores and its runs), or from the
// registers (emit_contraction_result) where results are not runs of 8 columns. No
// __syncthreads after the barriers' set-up.
#pragma once

#include "codegen/contraction_tiling.h"
#include "codegen/contraction_view.h"
#include "codegen/kernel_spec.h"
#include "target/target.h"

namespace kiln::codegen {

// Whether the kernel takes `anchor` of `body` on `target`: wgmma tensor cores, both operands f16
// or both bf16, both buffers read as they lie in runs of whole 16-byte vectors.
bool takes_wgmma_contraction(const KernelBody& body, const Node& anchor,
                             const ContractionView& view, const Target& target);

// Whether `tiling` can run `view` on `target`: a block_n (choose_wgmma_tiling gives 0 where the
// grid would not fill the GPU), a grid within launch limits, its stages within shared memory.
bool wgmma_tiling_fits(const ContractionView& view, const WgmmaTiling& tiling,
                       const Target& target);

// Whether TMA would copy either operand's tiles (the header): a tactic of the kernel with `tma`
// on then differs from one without.
bool wgmma_tma_applies(const KernelBody& body, const ContractionView& view,
                       const WgmmaTiling& tiling);

// Whether `tiling` is the warp-specialized persistent kernel's and TMA would copy both operands,
// as that kernel needs.
bool wgmma_warp_specialized_applies(const KernelBody& body, const ContractionView& view,
                                    const WgmmaTiling& tiling);

// Whether `tiling` splits K in a cluster (WgmmaTiling::cluster) that can add its slices: 2 to
// kWgmmaMaxClusterSlices slices of the one-tile kernel's tiles (tall ones where
// wgmma_tall_applies), results that go through the staged f32 tile (runs of 8 columns in a row),
// which each slice keeps in its stages' bytes for the others to read.
bool wgmma_cluster_applies(const KernelBody& body, const Node& anchor, const ContractionView& view,
                           const WgmmaTiling& tiling);

// Whether `tiling` is a tall tile's (block_m above kWgmmaBlockM) and each operand that cp.async
// would copy shares its 16-byte chunks evenly among the 384 threads (B's only 192 wide; A's
// always): a gathered conv input may take it, its B by TMA.
bool wgmma_tall_applies(const KernelBody& body, const ContractionView& view,
                        const WgmmaTiling& tiling);

// Whether `tiling` is swapped (WgmmaTiling::swapped) and the one-tile kernel can compute `base`
// so: the swapped view's operands plain tensors that TMA copies (swaps_contraction), each a
// body input or a weight (not a view computed in the body), results
// that go through the staged f32 tile, transposed (the base's runs of 8 columns), which the
// stages' bytes hold; unsplit.
bool wgmma_swapped_applies(const KernelBody& body, const Node& anchor, ContractionView& base,
                           const WgmmaTiling& tiling);

// With `tma`, each operand that TMA can copy is copied so; the other by cp.async. A tiling with
// persistent_blocks gives the warp-specialized kernel (wgmma_warp_specialized_applies must hold);
// a swapped one computes `base` swapped (wgmma_swapped_applies must hold).
KernelSpec emit_wgmma_contraction_kernel(const KernelBody& body, const Node& anchor,
                                         ContractionView& base, const WgmmaTiling& tiling,
                                         bool tma);

}  // namespace kiln::codegen
