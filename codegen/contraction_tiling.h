// The shape of a tensor-core contraction kernel for one problem (a batched GEMM of `batch` ×
// rows × cols, summed over depth): its block tile, warps, and how many slices of K separate
// blocks sum (split-K), chosen so the grid fills the GPU.
//
//   1. 128×128 tiles (8 warps, 64×32 each) when their grid has a block for each of the
//      target's SMs (132 on an H100/H200), else 64×64 tiles (4 warps, 32×32 each,
//      four times the blocks), so that an SM has warps to switch between while some wait on loads;
//      tiles of 128×64 or 64×128 (4 warps of 64×32) were dropped: they give the same
//      warps as 128×128 in twice the blocks. On an H100 at batch 32, ResNet-50's layer-3 3×3
//      conv ran 1.65× faster in 392 64×64 blocks than in 196 of 128×64, and BERT-base's
//      768-wide gemms slower in 384 128×64 blocks than in 192 of 128×128.
//   2. When even that grid is short of the SM count, K is split into up to kMaxSplits slices
//      (each a multiple of kMmaTileK deep; at most K-steps / kMinSplitTiles slices, so each but
//      the last is at least kMinSplitTiles K-steps deep) so that about one block per SM runs;
//      the slices' sums meet in an f32 workspace that a second kernel adds up before the epilogue.
#pragma once

#include <cstdint>
#include <vector>

#include "target/target.h"

namespace kiln::codegen {

inline constexpr int kMmaTileK = 32;  // depth of a block's K step (two m16n8k16 steps)
inline constexpr int kMaxSplits = 16;
inline constexpr int kMinSplitTiles = 4;

struct MmaTiling {
  int block_m = 64, block_n = 64;  // output rows and columns of a block
  int warps_m = 2, warps_n = 2;    // warps along rows and columns
  int splits = 1;                  // slices of K (1: no split)
  int64_t split_depth = 0;         // depth of a slice, a multiple of kMmaTileK

  bool operator==(const MmaTiling&) const = default;
  int threads() const { return warps_m * warps_n * 32; }
  int warp_m() const { return block_m / warps_m; }  // a warp's rows (a multiple of 16)
  int warp_n() const { return block_n / warps_n; }  // a warp's columns (a multiple of 16)
};

// Hopper's warpgroup MMA (sm_90a, codegen/wgmma_contraction_emitter.h): a block of two
// warpgroups computes kWgmmaBlockM × block_n outputs, each warpgroup 64 rows, K advancing
// kWgmmaTileK (one 128-byte row of 16-bit values) a step through `stages` shared buffers.
// block_n is the one of 64, 128, 192 and 256 (at most the columns rounded up to 64) whose grid
// gives the busiest SM the least work: ceil(blocks / SMs) tiles, each weighed by its width plus
// a fixed cost (cost = ceil(blocks / SMs) × (block_n + 32): every tile pays for its A tile and
// its epilogue); block_n = 0 when even 64-wide tiles give fewer blocks than half the SMs (a small
// grid: wgmma_small_grid_candidates below). An SM holds two 64-wide blocks at once, one of the
// others (shared memory); when the grid fills at most half of these slots, K is split (as the
// mma.sync kernel splits it: slices of equal whole K steps, at least kWgmmaMinSplitSteps each)
// into as many slices as fit the slots, the slices' sums meeting in
// the same f32 workspace and sum kernel (ResNet-50 b32's layer-4 3×3 convs: 104 blocks of
// 128 × 64, 72 steps deep, two slices).
// A contraction at most kWgmmaShallowSteps steps deep (ResNet's 1×1 convs from 64 or 128
// channels) is bound by its memory traffic, the tile's loads and epilogue hardly overlapping
// inside a block: it takes kWgmmaShallowStages stages and tiles at most kWgmmaShallowMaxBlockN
// wide, so that two blocks share an SM and one's epilogue overlaps the other's loads (a 128 ×
// 256 tile of 4 stages holds an SM alone).
inline constexpr int kWgmmaBlockM = 128;
inline constexpr int kWgmmaTileK = 64;
inline constexpr int kWgmmaMinSplitSteps = 8;
inline constexpr int kWgmmaShallowSteps = 2;
inline constexpr int kWgmmaShallowStages = 3;
inline constexpr int kWgmmaShallowMaxBlockN = 128;
// The dynamic shared memory a wgmma block may take (of an H100's or H200's 227 KiB).
inline constexpr int64_t kWgmmaSharedLimit = 227 * 1024;
// Floats a staged result row (the epilogue's f32 tile in shared memory) is longer than the
// tile: rows 8 floats apart in banks, so that a quarter warp's stores of its 4 rows of 8 sums hit
// 32 banks.
inline constexpr int kWgmmaStagedRowPad = 8;
inline int64_t wgmma_staged_tile_bytes(int block_n) {
  return int64_t{kWgmmaBlockM} * (block_n + kWgmmaStagedRowPad) * 4;
}

// The warp-specialized persistent variant (codegen/wgmma_contraction_emitter.h): a producer
// warpgroup whose one thread brings every stage by TMA, and two consumer warpgroups, each
// computing whole kWgmmaBlockM × block_n tiles in turn (block_n 64 or 128: a consumer holds 128 ×
// block_n accumulators), so that one's epilogue overlaps the other's multiplies. The epilogue
// goes through a staged f32 tile of its own (wgmma_staged_tile_bytes), which the consumers take
// in turn. Offered (never the heuristic's choice) for unsplit contractions of any depth (its
// ring of stages runs on into the next tiles, so one-step 1×1 convs prefetch theirs: ResNet-50
// b32's 56 × 56 up-projection 0.0289 ms against the one-tile kernel's 0.0299 on an H200), as
// many stages as the rest of the shared memory holds up to kWgmmaPersistentMaxStages, one block
// an SM.
inline constexpr int kWgmmaPersistentThreads = 384;
inline constexpr int kWgmmaPersistentMaxStages = 8;

// Tall tiles of the one-tile kernel: kWgmmaTallBlockM rows, three warpgroups of 64 (384
// threads), a block an SM; an operand copied by cp.async must share its chunks evenly among
// the threads (the emitter decides: a gathered conv input does, B only 192 wide). Where 128-row
// tiles leave the last wave of blocks part empty, a taller tile may fill its waves: ViT-B/16 b32's
// 6304-row gemms 768 wide make 300 tiles of 128 × 128 (or 200 of 128 × 192) over 132 SMs, a last
// wave a quarter or a half full, and 132 of 192 × 192, one full wave. Offered (never the
// heuristic's choice) for unsplit contractions: the width of 128, 192 and 256 whose grid fills its
// waves best (wgmma_wave_fill), where that beats the heuristic's fill by kWgmmaTallMinGain.
inline constexpr int kWgmmaTallBlockM = 192;
inline constexpr double kWgmmaTallMinGain = 0.05;

// Split-K in a cluster (WgmmaTiling::cluster): the slices of a tile are the blocks of one
// cluster, which stage their f32 sums in shared memory; once every slice has staged its tile,
// each adds a share of its rows from all of them, in slice order (the result does not depend on
// which block finishes first), and runs the epilogue on those rows. This saves the split-K
// sum kernel, its launch and the workspace's round trip through L2 (ResNet-50 b32's layer-4 3×3
// conv: a 6.4 MB workspace written, then read by a second kernel of 3136 blocks). A cluster
// holds at most 8 blocks portably: split tilings of up to kWgmmaMaxClusterSlices slices are
// offered in a cluster too, deeper ones also as kWgmmaMaxClusterSlices slices in a cluster.
inline constexpr int kWgmmaMaxClusterSlices = 8;
// Tall tiles split in a cluster: where fewer tall tiles than SMs leave part of a wave idle (and
// 128-row ones are no better: ResNet-50 b32's layer-3 3×3 conv has 98 tiles of 128 × 128, 74% of
// the SMs), each tile split into as many slices (at least kWgmmaMinSplitSteps steps each) as keep
// the blocks within one wave, a block an SM: 66 tiles of 192 × 128 in 2 slices make 132 blocks,
// each 18 steps of 1.5 times the area (27 units of 128 × 128 × 64 where the 128-row tiles take
// 36). Offered for each tall width whose best split fills at least kWgmmaTallClusterMinFill of
// the SMs.
inline constexpr double kWgmmaTallClusterMinFill = 0.8;

struct WgmmaTiling {
  // Rows of a block's tile: kWgmmaBlockM, or kWgmmaTallBlockM for the one-tile kernel's tall
  // tiles (a warpgroup for each 64 rows; wgmma_tall_candidate).
  int block_m = kWgmmaBlockM;
  int block_n = 0;
  int stages = 4;
  int splits = 1;           // slices of K (1: no split)
  int64_t split_depth = 0;  // depth of a slice, a multiple of kWgmmaTileK
  // The slices of a tile run as one thread-block cluster (sm_90) and add their sums through
  // distributed shared memory, each finishing a share of the tile's rows: one kernel, no
  // workspace (kWgmmaMaxClusterSlices); else a second kernel adds the workspace's slices.
  bool cluster = false;
  // Blocks of the warp-specialized persistent kernel (at most one an SM, each taking tiles
  // blockIdx.x, + gridDim.x, ...); 0: the one-tile-a-block kernel.
  int persistent_blocks = 0;
  // The one-tile kernel computes the contraction swapped (codegen/swapped_contraction_view.h):
  // block_m rows of the base's columns by block_n of its rows (wgmma_swapped_candidates).
  bool swapped = false;

  bool operator==(const WgmmaTiling&) const = default;
  // The one-tile kernel's threads: a warpgroup for each 64 rows.
  int threads() const { return block_m / 64 * 128; }
};

// Blocks of wgmma tiles block_m × block_n with `stages` stages an SM holds at once (by shared
// memory and registers).
int64_t wgmma_blocks_per_sm(int block_m, int block_n, int stages, const Target& target);

// The share of its block slots' work over its waves that `tiling`'s grid spends on outputs:
// outputs / (waves · slots · block_m · block_n), slots being the SMs times the blocks an SM
// holds. Where two tilings fill their waves alike (BERT-base b32's 4096-row gemms: 128 tiles of
// 128 × 192 or 132 of 192 × 128, each 97%), the taller tile gains nothing.
double wgmma_wave_fill(const WgmmaTiling& tiling, int64_t batch, int64_t rows, int64_t cols,
                       const Target& target);

WgmmaTiling choose_wgmma_tiling(int64_t batch, int64_t rows, int64_t cols, int64_t depth,
                                const Target& target);

MmaTiling choose_mma_tiling(int64_t batch, int64_t rows, int64_t cols, int64_t depth,
                            const Target& target);

// The tilings measurement may choose from (kiln/autotune.h), the heuristic's choice first, each
// once: for wgmma every block_n of 64..256 the columns allow (shallow contractions up to
// kWgmmaShallowMaxBlockN), with the split-K the heuristic would give that width, and for
// contractions at least 2 · kWgmmaMinSplitSteps steps deep also split in two where the heuristic
// does not split (a grid 1.5 waves deep becomes 3 waves), and 128 wide in the shallow stage count
// where the heuristic pipelines deeper (two blocks an SM), and the warp-specialized persistent
// kernel 128 and 64 wide where its conditions hold (kWgmmaPersistentThreads; it also needs both
// operands copied by TMA, which the emitter decides), and a tall tile where one fills the waves
// better (kWgmmaTallBlockM), and each of these split by the heuristic also in a cluster
// (WgmmaTiling::cluster), and a tall tile split in a cluster where its blocks fill a wave
// (kWgmmaTallClusterMinFill); for mma.sync the 128 × 128 and 64 × 64
// tiles, each with its heuristic split and without one. Empty when the heuristic finds no wgmma
// tiling (block_n 0).
std::vector<WgmmaTiling> wgmma_tiling_candidates(int64_t batch, int64_t rows, int64_t cols,
                                                 int64_t depth, const Target& target);
// Where the heuristic finds no wgmma tiling (its 64-wide tiles fewer than half the SMs: batch 1's
// convolutions and gemms), the wgmma kernel still beat the mma.sync kernel's split-K on most
// (measured on an H200: 20 of ResNet-50 b1's 22 such contractions, 3 of BERT-base b1's 4; the
// mma.sync kernel then gathered a 3×3 conv's A through registers, two channels at a time): 64
// and 128 wide (as the columns allow), each whole and with K split into as many slices at least
// kWgmmaSmallGridMinSplitSteps deep as the SMs' block slots hold, the heuristic's first: 64 wide,
// split where K is at least kWgmmaSmallGridSplitSteps steps deep (the split's sum kernel costs
// about what a few steps do; ResNet-50 b1's layer-4 3×3 conv, 8 tiles of 128 × 64, 72 steps: 15
// slices, 3× faster than whole), else whole; the split ones also in a cluster
// (kWgmmaMaxClusterSlices). The contraction emitter offers the mma.sync
// tilings after these. Empty where the heuristic has a wgmma tiling.
inline constexpr int kWgmmaSmallGridMinSplitSteps = 2;
inline constexpr int kWgmmaSmallGridSplitSteps = 32;
std::vector<WgmmaTiling> wgmma_small_grid_candidates(int64_t batch, int64_t rows, int64_t cols,
                                                     int64_t depth, const Target& target);
// The swapped problem's tilings (codegen/swapped_contraction_view.h), for an unbatched base
// contraction (the case run on a GPU so far) of `rows` × `cols` whose rows quantize badly into
// kWgmmaBlockM-row tiles while its columns make
// whole kWgmmaSwappedBlockM-row tiles of the swapped problem: one warpgroup's 64 base columns by
// the multiple of kWgmmaSwappedNStep from 64 to 256 base rows whose grid gives the busiest SM the
// least work (choose_wgmma_tiling's cost), unsplit, where those tiles make one wave filling at
// least kWgmmaTallClusterMinFill of the SMs; in the default stages and in as many up to
// kWgmmaSwappedMaxStages as the shared memory holds. ResNet-50 b32's 7 × 7 1×1 down-projection
// (1568 × 512, 2048 deep): 128-row tiles pad 1568 to 1664 and need split-K to fill the SMs (104
// blocks of 128 × 128 in 2 slices); swapped, 8 × 14 = 112 tiles of 64 × 112, whole, no padding,
// as cuBLAS tiles it (nvjet 64x112, 9 stages). Empty where none applies.
inline constexpr int kWgmmaSwappedBlockM = 64;
inline constexpr int kWgmmaSwappedNStep = 16;
inline constexpr int kWgmmaSwappedMaxStages = 8;
std::vector<WgmmaTiling> wgmma_swapped_candidates(int64_t batch, int64_t rows, int64_t cols,
                                                  int64_t depth, const Target& target);

std::vector<MmaTiling> mma_tiling_candidates(int64_t batch, int64_t rows, int64_t cols,
                                             int64_t depth, const Target& target);

}  // namespace kiln::codegen
