// Tile and split-K choice for tensor-core contractions (see the header).
#include "codegen/contraction_tiling.h"

#include <algorithm>

namespace kiln::codegen {
namespace {

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

int64_t blocks_of(const MmaTiling& tiling, int64_t batch, int64_t rows, int64_t cols) {
  return ceil_div(rows, tiling.block_m) * ceil_div(cols, tiling.block_n) * batch;
}

}  // namespace

MmaTiling choose_mma_tiling(int64_t batch, int64_t rows, int64_t cols, int64_t depth,
                            const Target& target) {
  const int64_t target_blocks = target.sm_count;
  const MmaTiling large{.block_m = 128, .block_n = 128, .warps_m = 2, .warps_n = 4};
  const MmaTiling small{.block_m = 64, .block_n = 64, .warps_m = 2, .warps_n = 2};
  MmaTiling tiling = blocks_of(large, batch, rows, cols) >= target_blocks ? large : small;
  const int64_t k_steps = ceil_div(depth, kMmaTileK);
  tiling.split_depth = k_steps * kMmaTileK;
  const int64_t blocks = blocks_of(tiling, batch, rows, cols);
  if (blocks >= target_blocks) return tiling;
  const int64_t wanted = std::min<int64_t>(ceil_div(target_blocks, blocks), kMaxSplits);
  const int64_t most = k_steps / kMinSplitTiles;
  const int64_t splits = std::min(wanted, most);
  if (splits < 2) return tiling;
  const int64_t steps_per_split = ceil_div(k_steps, splits);
  tiling.split_depth = steps_per_split * kMmaTileK;
  tiling.splits = static_cast<int>(ceil_div(k_steps, steps_per_split));
  return tiling;
}

WgmmaTiling choose_wgmma_tiling(int64_t batch, int64_t rows, int64_t cols, const Target& target) {
  const int64_t sms = std::max(target.sm_count, 1);
  const int64_t row_tiles = ceil_div(rows, kWgmmaBlockM) * batch;
  WgmmaTiling best;
  int64_t best_cost = 0;
  for (int block_n : {64, 128, 192, 256}) {
    if (block_n > ceil_div(cols, 64) * 64) break;
    const int64_t blocks = row_tiles * ceil_div(cols, block_n);
    if (2 * blocks < sms) continue;
    const int64_t cost = ceil_div(blocks, sms) * (block_n + 32);
    if (best.block_n == 0 || cost <= best_cost) {
      best.block_n = block_n;
      best_cost = cost;
    }
  }
  return best;
}

}  // namespace kiln::codegen
