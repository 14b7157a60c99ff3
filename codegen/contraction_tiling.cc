// Tile and split-K choice for tensor-core contractions (see the header).
#include "codegen/contraction_tiling.h"

#include <algorithm>
#include <optional>

#include "ir/integer_math.h"

namespace kiln::codegen {
namespace {

int64_t blocks_of(const MmaTiling& tiling, int64_t batch, int64_t rows, int64_t cols) {
  return ceil_div(rows, tiling.block_m) * ceil_div(cols, tiling.block_n) * batch;
}

// `tiling` split along K as the heuristic splits it: when its grid is short of the SM count,
// into enough slices (at most kMaxSplits, each at least kMinSplitTiles steps) to fill it.
MmaTiling with_mma_split(MmaTiling tiling, int64_t batch, int64_t rows, int64_t cols,
                         int64_t depth, const Target& target) {
  const int64_t target_blocks = target.sm_count;
  const int64_t k_steps = ceil_div(depth, kMmaTileK);
  tiling.splits = 1;
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

constexpr MmaTiling kLargeMmaTile{.block_m = 128, .block_n = 128, .warps_m = 2, .warps_n = 4};
constexpr MmaTiling kSmallMmaTile{.block_m = 64, .block_n = 64, .warps_m = 2, .warps_n = 2};

template <typename Tiling>
void add_once(std::vector<Tiling>& tilings, const Tiling& tiling) {
  if (std::find(tilings.begin(), tilings.end(), tiling) == tilings.end()) {
    tilings.push_back(tiling);
  }
}

}  // namespace

MmaTiling choose_mma_tiling(int64_t batch, int64_t rows, int64_t cols, int64_t depth,
                            const Target& target) {
  const bool large_fills = blocks_of(kLargeMmaTile, batch, rows, cols) >= target.sm_count;
  return with_mma_split(large_fills ? kLargeMmaTile : kSmallMmaTile, batch, rows, cols, depth,
                        target);
}

std::vector<MmaTiling> mma_tiling_candidates(int64_t batch, int64_t rows, int64_t cols,
                                             int64_t depth, const Target& target) {
  std::vector<MmaTiling> candidates{choose_mma_tiling(batch, rows, cols, depth, target)};
  for (const MmaTiling& tile : {kLargeMmaTile, kSmallMmaTile}) {
    const MmaTiling split = with_mma_split(tile, batch, rows, cols, depth, target);
    add_once(candidates, split);
    MmaTiling whole = split;
    whole.splits = 1;
    whole.split_depth = ceil_div(depth, kMmaTileK) * kMmaTileK;
    add_once(candidates, whole);
  }
  return candidates;
}

// Blocks of wgmma tiles block_m × block_n an SM holds at once: by shared memory (the stages and
// a kilobyte of alignment, plus the kilobyte the SM keeps per block) and by registers (about
// block_n / 2 accumulators and 64 others a thread).
int64_t wgmma_blocks_per_sm(int block_m, int block_n, int stages, const Target& target) {
  const int64_t shared = int64_t{stages} * (block_m + block_n) * kWgmmaTileK * 2 + 2048;
  const int64_t registers = int64_t{block_m / 64 * 128} * (block_n / 2 + 64);
  return std::max<int64_t>(1, std::min(target.shared_memory_per_sm / shared,
                                       target.registers_per_sm / registers));
}

namespace {

// `tiling` (block_n and stages set) split along K into `splits` slices of equal whole steps.
WgmmaTiling with_wgmma_splits(WgmmaTiling tiling, int64_t k_steps, int64_t splits) {
  const int64_t steps_per_split = ceil_div(k_steps, std::max<int64_t>(splits, 1));
  tiling.split_depth = steps_per_split * kWgmmaTileK;
  tiling.splits = static_cast<int>(ceil_div(k_steps, steps_per_split));
  return tiling;
}

// The heuristic's split of a tiling: as many slices as the SMs' idle block slots hold.
int64_t heuristic_wgmma_splits(const WgmmaTiling& tiling, int64_t row_tiles, int64_t cols,
                               int64_t k_steps, const Target& target) {
  const int64_t sms = std::max(target.sm_count, 1);
  const int64_t blocks = row_tiles * ceil_div(cols, tiling.block_n);
  const int64_t slots =
      sms * wgmma_blocks_per_sm(tiling.block_m, tiling.block_n, tiling.stages, target);
  return std::min<int64_t>({slots / blocks, kMaxSplits, k_steps / kWgmmaMinSplitSteps});
}

// The stages of a tall tile block_n wide: as many up to the default as the shared memory holds
// (fewer than 3: it does not fit).
int tall_stages(int block_n, const Target& target) {
  const int64_t room = std::min<int64_t>(kWgmmaSharedLimit, target.shared_memory_per_block) - 1024 -
                       8 * WgmmaTiling{}.stages;
  const int64_t stage = int64_t{kWgmmaTallBlockM + block_n} * kWgmmaTileK * 2;
  return static_cast<int>(std::min<int64_t>(WgmmaTiling{}.stages, room / stage));
}

// The tall tiling of kWgmmaTallBlockM rows (see the header) that fills its waves best, in
// tall_stages; none where the heuristic splits K or the best fills its waves no better than the
// heuristic's by kWgmmaTallMinGain.
std::optional<WgmmaTiling> wgmma_tall_candidate(const WgmmaTiling& heuristic, int64_t batch,
                                                int64_t rows, int64_t cols, int64_t k_steps,
                                                const Target& target) {
  if (heuristic.splits > 1) return std::nullopt;
  std::optional<WgmmaTiling> best;
  double best_fill = wgmma_wave_fill(heuristic, batch, rows, cols, target) + kWgmmaTallMinGain;
  for (int block_n : {128, 192, 256}) {
    if (block_n > ceil_div(cols, 64) * 64) break;
    const int stages = tall_stages(block_n, target);
    if (stages < 3) continue;
    WgmmaTiling tall{.block_m = kWgmmaTallBlockM, .block_n = block_n, .stages = stages};
    tall = with_wgmma_splits(tall, k_steps, 1);
    const double tall_fill = wgmma_wave_fill(tall, batch, rows, cols, target);
    if (tall_fill > best_fill) {
      best = tall;
      best_fill = tall_fill;
    }
  }
  return best;
}

// For each tall width, the split in a cluster (kWgmmaTallClusterMinFill) whose blocks, one an
// SM, come nearest to filling the SMs in one wave (fewer slices first), in tall_stages; none for
// a width whose tiles alone fill a wave or whose best fills less than kWgmmaTallClusterMinFill
// of it.
std::vector<WgmmaTiling> wgmma_tall_cluster_candidates(int64_t batch, int64_t rows, int64_t cols,
                                                       int64_t k_steps, const Target& target) {
  const int64_t sms = std::max(target.sm_count, 1);
  std::vector<WgmmaTiling> candidates;
  for (int block_n : {128, 192, 256}) {
    if (block_n > ceil_div(cols, 64) * 64) break;
    const int stages = tall_stages(block_n, target);
    const int64_t tiles = ceil_div(rows, kWgmmaTallBlockM) * ceil_div(cols, block_n) * batch;
    if (stages < 3 || tiles >= sms) continue;
    std::optional<WgmmaTiling> best;
    int64_t best_blocks =
        static_cast<int64_t>(kWgmmaTallClusterMinFill * static_cast<double>(sms)) - 1;
    for (int splits = 2; splits <= kWgmmaMaxClusterSlices; ++splits) {
      if (tiles * splits > sms || k_steps < int64_t{splits} * kWgmmaMinSplitSteps) break;
      WgmmaTiling tall{.block_m = kWgmmaTallBlockM, .block_n = block_n, .stages = stages};
      tall = with_wgmma_splits(tall, k_steps, splits);
      if (tall.splits != splits || tiles * splits <= best_blocks) continue;
      tall.cluster = true;
      best = tall;
      best_blocks = tiles * splits;
    }
    if (best) candidates.push_back(*best);
  }
  return candidates;
}

// Adds `split` (a tiling of the one-tile kernel's 128-row tiles split along K) in a cluster, at
// most kWgmmaMaxClusterSlices slices (a deeper split as that many); nothing for an unsplit one.
void add_cluster_variant(std::vector<WgmmaTiling>& candidates, const WgmmaTiling& split,
                         int64_t k_steps) {
  if (split.splits < 2) return;
  WgmmaTiling cluster =
      with_wgmma_splits(split, k_steps, std::min(split.splits, kWgmmaMaxClusterSlices));
  cluster.cluster = true;
  add_once(candidates, cluster);
}

}  // namespace

double wgmma_wave_fill(const WgmmaTiling& tiling, int64_t batch, int64_t rows, int64_t cols,
                       const Target& target) {
  const int64_t tiles = ceil_div(rows, tiling.block_m) * ceil_div(cols, tiling.block_n) * batch;
  const int64_t slots = std::max(target.sm_count, 1) *
                        wgmma_blocks_per_sm(tiling.block_m, tiling.block_n, tiling.stages, target);
  const double held =
      static_cast<double>(ceil_div(tiles, slots) * slots) * tiling.block_m * tiling.block_n;
  return static_cast<double>(batch * rows * cols) / held;
}

WgmmaTiling choose_wgmma_tiling(int64_t batch, int64_t rows, int64_t cols, int64_t depth,
                                const Target& target) {
  const int64_t sms = std::max(target.sm_count, 1);
  const int64_t row_tiles = ceil_div(rows, kWgmmaBlockM) * batch;
  const int64_t k_steps = ceil_div(depth, kWgmmaTileK);
  const bool shallow = k_steps <= kWgmmaShallowSteps;
  WgmmaTiling best;
  if (shallow) best.stages = kWgmmaShallowStages;
  int64_t best_cost = 0;
  for (int block_n : {64, 128, 192, 256}) {
    if (block_n > ceil_div(cols, 64) * 64 || (shallow && block_n > kWgmmaShallowMaxBlockN)) break;
    const int64_t blocks = row_tiles * ceil_div(cols, block_n);
    if (2 * blocks < sms) continue;
    const int64_t cost = ceil_div(blocks, sms) * (block_n + 32);
    if (best.block_n == 0 || cost <= best_cost) {
      best.block_n = block_n;
      best_cost = cost;
    }
  }
  best.split_depth = k_steps * kWgmmaTileK;
  if (best.block_n == 0) return best;
  const int64_t splits = heuristic_wgmma_splits(best, row_tiles, cols, k_steps, target);
  return splits < 2 ? best : with_wgmma_splits(best, k_steps, splits);
}

std::vector<WgmmaTiling> wgmma_tiling_candidates(int64_t batch, int64_t rows, int64_t cols,
                                                 int64_t depth, const Target& target) {
  const WgmmaTiling heuristic = choose_wgmma_tiling(batch, rows, cols, depth, target);
  if (heuristic.block_n == 0) return {};
  std::vector<WgmmaTiling> candidates{heuristic};
  const int64_t row_tiles = ceil_div(rows, kWgmmaBlockM) * batch;
  const int64_t k_steps = ceil_div(depth, kWgmmaTileK);
  for (int block_n : {64, 128, 192, 256}) {
    if (block_n > ceil_div(cols, 64) * 64 ||
        (k_steps <= kWgmmaShallowSteps && block_n > kWgmmaShallowMaxBlockN)) {
      break;
    }
    WgmmaTiling tiling{.block_n = block_n, .stages = heuristic.stages};
    const int64_t splits = heuristic_wgmma_splits(tiling, row_tiles, cols, k_steps, target);
    const WgmmaTiling split = with_wgmma_splits(tiling, k_steps, splits);
    add_once(candidates, split);
    add_cluster_variant(candidates, split, k_steps);
    if (splits < 2 && k_steps >= 2 * kWgmmaMinSplitSteps) {
      add_once(candidates, with_wgmma_splits(tiling, k_steps, 2));
    }
  }
  // Two blocks an SM: 128 wide in kWgmmaShallowStages stages (shared memory and registers for
  // two), so that one block's epilogue and first loads overlap the other's multiplies, which one
  // deep-pipelined block an SM cannot (BERT-base b32's FFN gemms take 1.3-1.4x their time
  // without an epilogue).
  if (heuristic.stages > kWgmmaShallowStages && cols >= 128 &&
      wgmma_blocks_per_sm(kWgmmaBlockM, 128, kWgmmaShallowStages, target) >= 2) {
    const WgmmaTiling pair{.block_n = 128, .stages = kWgmmaShallowStages};
    add_once(candidates, with_wgmma_splits(pair, k_steps, 1));
  }
  // Warp-specialized and persistent: a block an SM (fewer where there are fewer tiles), its
  // stages filling the shared memory beside the staged tile.
  const int64_t sms = std::max(target.sm_count, 1);
  for (int block_n : {128, 64}) {
    if (cols < block_n) continue;
    const int64_t stage = int64_t{kWgmmaBlockM + block_n} * kWgmmaTileK * 2;
    const int64_t room = std::min<int64_t>(kWgmmaSharedLimit, target.shared_memory_per_block) -
                         1024 - wgmma_staged_tile_bytes(block_n) -
                         8 * (2 * kWgmmaPersistentMaxStages + 4);
    const int stages = static_cast<int>(std::min<int64_t>(kWgmmaPersistentMaxStages, room / stage));
    if (stages < 3) continue;
    WgmmaTiling persistent{.block_n = block_n, .stages = stages};
    persistent = with_wgmma_splits(persistent, k_steps, 1);
    persistent.persistent_blocks =
        static_cast<int>(std::min(sms, row_tiles * ceil_div(cols, block_n)));
    add_once(candidates, persistent);
  }
  if (const std::optional<WgmmaTiling> tall =
          wgmma_tall_candidate(heuristic, batch, rows, cols, k_steps, target)) {
    add_once(candidates, *tall);
  }
  for (const WgmmaTiling& tall :
       wgmma_tall_cluster_candidates(batch, rows, cols, k_steps, target)) {
    add_once(candidates, tall);
  }
  return candidates;
}

std::vector<WgmmaTiling> wgmma_small_grid_candidates(int64_t batch, int64_t rows, int64_t cols,
                                                     int64_t depth, const Target& target) {
  if (choose_wgmma_tiling(batch, rows, cols, depth, target).block_n != 0) return {};
  const int64_t row_tiles = ceil_div(rows, kWgmmaBlockM) * batch;
  const int64_t k_steps = ceil_div(depth, kWgmmaTileK);
  const int stages = k_steps <= kWgmmaShallowSteps ? kWgmmaShallowStages : WgmmaTiling{}.stages;
  const int64_t sms = std::max(target.sm_count, 1);
  std::vector<WgmmaTiling> candidates;
  for (int block_n : {64, 128}) {
    if (block_n > ceil_div(cols, 64) * 64) break;
    const WgmmaTiling tiling{.block_n = block_n, .stages = stages};
    const int64_t blocks = row_tiles * ceil_div(cols, block_n);
    const int64_t held = sms * wgmma_blocks_per_sm(kWgmmaBlockM, block_n, stages, target);
    const int64_t splits =
        std::min<int64_t>({held / blocks, kMaxSplits, k_steps / kWgmmaSmallGridMinSplitSteps});
    const WgmmaTiling whole = with_wgmma_splits(tiling, k_steps, 1);
    const WgmmaTiling split = with_wgmma_splits(tiling, k_steps, std::max<int64_t>(splits, 1));
    const bool split_first = k_steps >= kWgmmaSmallGridSplitSteps;
    add_once(candidates, split_first ? split : whole);
    add_once(candidates, split_first ? whole : split);
    add_cluster_variant(candidates, split, k_steps);
  }
  return candidates;
}

std::vector<WgmmaTiling> wgmma_swapped_candidates(int64_t batch, int64_t rows, int64_t cols,
                                                  int64_t depth, const Target& target) {
  if (batch != 1 || rows % kWgmmaBlockM == 0 || cols % kWgmmaSwappedBlockM != 0) return {};
  const int64_t sms = std::max(target.sm_count, 1);
  const int64_t row_tiles = cols / kWgmmaSwappedBlockM;
  int best_n = 0;
  int64_t best_cost = 0, best_tiles = 0;
  for (int block_n = 64; block_n <= 256; block_n += kWgmmaSwappedNStep) {
    const int64_t tiles = row_tiles * ceil_div(rows, block_n);
    const int64_t cost = ceil_div(tiles, sms) * (block_n + 32);
    if (best_n == 0 || cost < best_cost) {
      best_n = block_n;
      best_cost = cost;
      best_tiles = tiles;
    }
  }
  if (best_tiles > sms || static_cast<double>(best_tiles) < kWgmmaTallClusterMinFill * sms) {
    return {};
  }
  const int64_t k_steps = ceil_div(depth, kWgmmaTileK);
  const int64_t stage = int64_t{kWgmmaSwappedBlockM + best_n} * kWgmmaTileK * 2;
  const int64_t room = std::min<int64_t>(kWgmmaSharedLimit, target.shared_memory_per_block) - 1024 -
                       8 * kWgmmaSwappedMaxStages;
  const int deepest = static_cast<int>(std::min<int64_t>(kWgmmaSwappedMaxStages, room / stage));
  std::vector<WgmmaTiling> candidates;
  for (const int stages : {WgmmaTiling{}.stages, deepest}) {
    if (stages < 3) continue;
    WgmmaTiling tiling{.block_m = kWgmmaSwappedBlockM, .block_n = best_n, .stages = stages};
    tiling = with_wgmma_splits(tiling, k_steps, 1);
    tiling.swapped = true;
    add_once(candidates, tiling);
  }
  return candidates;
}

}  // namespace kiln::codegen
