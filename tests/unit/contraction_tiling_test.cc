// Tests of the tensor-core contraction tiling (codegen/contraction_tiling.h) and of lowering a
// split-K contraction (codegen/lower.h): tile sizes that fill the GPU, split-K only for grids
// short of it and deep enough, and the two steps sharing one f32 workspace intermediate (both
// writing it, so the second waits for the first); the
// wgmma tiles of sm_90a, and which contractions take the wgmma kernel.
#include "codegen/contraction_tiling.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "codegen/lower.h"
#include "codegen/options.h"
#include "ir/error.h"
#include "ir/parser.h"
#include "runtime/step_dependencies.h"

namespace kiln::codegen {
namespace {

const Target kH100 = target_for_arch("sm_90");  // 132 SMs

// A square block tile of `block` (128: 8 warps, 64: 4), K in `splits` slices.
void expect_tiling(const MmaTiling& tiling, int block, int splits) {
  EXPECT_EQ(tiling.block_m, block);
  EXPECT_EQ(tiling.block_n, block);
  EXPECT_EQ(tiling.threads(), block == 128 ? 256 : 128);
  EXPECT_EQ(tiling.splits, splits);
}

TEST(ContractionTiling, LargeProblemsTakeTheLargestTile) {
  // BERT-base at batch 32, the FFN's first gemm: M = 32·128, N = 3072, K = 768: 768 blocks.
  const MmaTiling tiling = choose_mma_tiling(1, 4096, 3072, 768, kH100);
  expect_tiling(tiling, 128, 1);
  EXPECT_EQ(tiling.split_depth, 768);
  // ResNet-50 at batch 32, a 3×3 conv of layer 2: M = 32·28·28, N = 128, K = 1152: 196 blocks of
  // 128×128 (8 warps an SM).
  expect_tiling(choose_mma_tiling(1, 25088, 128, 1152, kH100), 128, 1);
  // BERT-base at batch 32, the attention output's gemm: M = 4096, N = 768: 192 blocks of 128×128.
  expect_tiling(choose_mma_tiling(1, 4096, 768, 768, kH100), 128, 1);
  // Layer 3's (M = 32·14·14, N = 256): 98 blocks of 128×128, short of one an SM: 392 of 64×64.
  expect_tiling(choose_mma_tiling(1, 6272, 256, 2304, kH100), 64, 1);
  // Layer 4's (M = 32·7·7, N = 512): 13·4 = 52 blocks of 128×128: 200 of 64×64, enough not to
  // split K.
  expect_tiling(choose_mma_tiling(1, 1568, 512, 4608, kH100), 64, 1);
}

TEST(ContractionTiling, MediumProblemsTakeSmallerTiles) {
  // BERT-base at batch 1, the FFN's first gemm: M = 128, N = 3072, K = 768: 128×128 gives 24
  // blocks, 64×64 gives 96, then split in two.
  const MmaTiling tiling = choose_mma_tiling(1, 128, 3072, 768, kH100);
  expect_tiling(tiling, 64, 2);
  EXPECT_EQ(tiling.split_depth, 384);
  // ResNet-50 at batch 1, layer 1's 1×1 conv to 256 channels: M = 3136, N = 256: 128×128 gives
  // 50 blocks, 64×64 gives 196.
  expect_tiling(choose_mma_tiling(1, 3136, 256, 64, kH100), 64, 1);
}

TEST(ContractionTiling, SmallGridsSplitK) {
  // ResNet-50 at batch 1, layer 4's 3×3 conv: M = 49, N = 512, K = 4608: 8 blocks of 64×64,
  // split into 16 slices of 288 (9 K-steps each).
  const MmaTiling tiling = choose_mma_tiling(1, 49, 512, 4608, kH100);
  EXPECT_EQ(tiling.block_m, 64);
  EXPECT_EQ(tiling.splits, 16);
  EXPECT_EQ(tiling.split_depth, 288);
  EXPECT_EQ(tiling.split_depth % kMmaTileK, 0);
  EXPECT_GE(tiling.splits * tiling.split_depth, 4608);
  EXPECT_LT((tiling.splits - 1) * tiling.split_depth, 4608);
}

TEST(ContractionTiling, ShallowProblemsDoNotSplit) {
  // A depthwise-sized depth (9) or anything under 2 · kMinSplitTiles K-steps stays whole.
  EXPECT_EQ(choose_mma_tiling(32, 49, 1, 9, kH100).splits, 1);
  EXPECT_EQ(choose_mma_tiling(1, 49, 64, (2 * kMinSplitTiles - 1) * kMmaTileK, kH100).splits, 1);
  EXPECT_EQ(choose_mma_tiling(1, 49, 64, 2 * kMinSplitTiles * kMmaTileK, kH100).splits, 2);
}

TEST(ContractionTiling, TheTargetsSmCountSizesTheGrid) {
  // ResNet-50 at batch 32, layer 3's 3×3 conv: 98 blocks of 128×128 fill neither an H100's 132
  // SMs nor an A100's 108; layer 2's 196 fill both. BERT-base b1's 96 blocks of 64×64 split K in
  // two for 132 SMs and 108 alike, but a target of 96 SMs or fewer leaves them whole.
  const Target a100 = target_for_arch("sm_80");
  EXPECT_EQ(a100.sm_count, 108);
  expect_tiling(choose_mma_tiling(1, 6272, 256, 2304, a100), 64, 1);
  expect_tiling(choose_mma_tiling(1, 25088, 128, 1152, a100), 128, 1);
  Target small = a100;
  small.sm_count = 96;
  expect_tiling(choose_mma_tiling(1, 128, 3072, 768, small), 64, 1);
  expect_tiling(choose_mma_tiling(1, 128, 3072, 768, a100), 64, 2);
}

TEST(ContractionTiling, SplitKLowersToTwoStepsSharingAWorkspace) {
  const Program program = lower_graph(*parse_graph(R"(
graph @g(%a: f16[49,4608], %b: f16[4608,512]) -> (f16[49,512]) {
  %0 = matmul(%a, %b) : f16[49,512] loc("MatMul")
  return %0
})"),
                                      {});
  ASSERT_EQ(program.steps.size(), 2u);
  ASSERT_EQ(program.kernels.size(), 2u);
  // The partial sums (a, b, workspace), then their sum (a, b, output, workspace).
  const std::vector<int>& partial = program.steps[0].args;
  const std::vector<int>& sum = program.steps[1].args;
  ASSERT_EQ(partial.size(), 3u);
  ASSERT_EQ(sum.size(), 4u);
  EXPECT_EQ(partial.back(), sum.back());
  const ProgramBuffer& workspace = program.buffers[static_cast<size_t>(sum.back())];
  EXPECT_EQ(workspace.kind, ProgramBuffer::Kind::kIntermediate);
  EXPECT_EQ(workspace.type, (TensorType{DType::kF32, {16 * 49 * 512}}));
  EXPECT_EQ(program.steps[0].grid, (std::array<uint32_t, 3>{8, 1, 16}));
  EXPECT_EQ(program.steps[0].block, (std::array<uint32_t, 3>{128, 1, 1}));
  EXPECT_NE(program.kernels[0].source.find("kiln_mma_f16_16816"), std::string::npos);
  // Both write the workspace (runtime/kernel_header.h), so the sum waits for the partial sums.
  EXPECT_NE(program.kernels[0].source.find("\n// written parameters: 2\n"), std::string::npos);
  EXPECT_NE(program.kernels[1].source.find("\n// written parameters: 2, 3\n"), std::string::npos);
  EXPECT_EQ(step_dependencies(program, ArenaSharing::kIgnored).predecessors,
            (std::vector<std::vector<int>>{{}, {0}}));
}

TEST(ContractionTiling, ClusterSplitLowersToOneStepWithoutAWorkspace) {
  // A batched matmul of ResNet-50 b16's layer-4 3×3 conv's shape, twice (7 × 4 tiles of 128 ×
  // 128 a batch index), the tactic split in a cluster.
  CodegenOptions options = CodegenOptions::for_archs({"sm_90a"});
  std::string chosen;
  options.choose_tactic = [&](const TacticSite& site) {
    for (size_t i = 0; i < site.tactics.size(); ++i) {
      if (site.tactics[i] == "wgmma 128x128 4 stages split 2 cluster tma") {
        chosen = site.tactics[i];
        return static_cast<int>(i);
      }
    }
    return 0;
  };
  const Program program = lower_graph(*parse_graph(R"(
graph @g(%a: f16[2,784,4608], %b: f16[2,4608,512]) -> (f16[2,784,512]) {
  %0 = matmul(%a, %b) : f16[2,784,512] loc("MatMul")
  return %0
})"),
                                      options);
  ASSERT_EQ(chosen, "wgmma 128x128 4 stages split 2 cluster tma");
  ASSERT_EQ(program.steps.size(), 1u);
  // a, b, the output; no workspace. Each batch's two slices are consecutive blocks along z.
  EXPECT_EQ(program.steps[0].args.size(), 3u);
  EXPECT_EQ(program.steps[0].grid, (std::array<uint32_t, 3>{4, 7, 4}));
  const std::string& source = program.kernels[0].source;
  EXPECT_NE(source.find("__cluster_dims__(1, 1, 2)"), std::string::npos);
  EXPECT_NE(source.find("const int g_b = blockIdx.z / 2;"), std::string::npos);
  EXPECT_NE(source.find("\n// written parameters: 2\n"), std::string::npos);
}

TEST(ContractionTiling, WgmmaTilesTakeTheFewestWaves) {
  const Target hopper = target_for_arch("sm_90a");
  // BERT-base b32's 768-wide gemms: 128 × 192 tiles are one wave of 128 blocks (128 × 128 would
  // be 192 blocks, two waves).
  EXPECT_EQ(choose_wgmma_tiling(1, 4096, 768, 768, hopper).block_n, 192);
  // Its FFN up-projection (3072 wide): 256-wide tiles, 3 waves of 384 blocks.
  EXPECT_EQ(choose_wgmma_tiling(1, 4096, 3072, 768, hopper).block_n, 256);
  // 64 columns: 64-wide tiles only.
  EXPECT_EQ(choose_wgmma_tiling(1, 100352, 64, 64, hopper).block_n, 64);
}

TEST(ContractionTiling, ShallowWgmmaContractionsShareAnSm) {
  const Target hopper = target_for_arch("sm_90a");
  // ResNet-50 b32's layer-1 1×1 up-projection (M = 32·56·56, N = 256, K = 64, one step): 128
  // wide and 3 stages, two blocks an SM, where deeper ones of its width take 256 and 4 stages.
  const WgmmaTiling shallow = choose_wgmma_tiling(1, 100352, 256, 64, hopper);
  EXPECT_EQ(shallow.block_n, 128);
  EXPECT_EQ(shallow.stages, 3);
  EXPECT_EQ(wgmma_blocks_per_sm(shallow.block_m, shallow.block_n, shallow.stages, hopper), 2);
  // Two steps (layer 2's, K = 128) are shallow too; three are not.
  EXPECT_EQ(choose_wgmma_tiling(1, 25088, 512, 128, hopper).stages, 3);
  const WgmmaTiling deep = choose_wgmma_tiling(1, 100352, 256, 192, hopper);
  EXPECT_EQ(deep.block_n, 256);
  EXPECT_EQ(deep.stages, 4);
  // Batch 1 (128 rows): at most 6 blocks, short of half the SMs: none (mma.sync splits K).
  EXPECT_EQ(choose_wgmma_tiling(1, 128, 768, 768, hopper).block_n, 0);
  // The batch multiplies the blocks: 12 × 3 row tiles × 3 column tiles of 64.
  EXPECT_EQ(choose_wgmma_tiling(12, 300, 136, 200, hopper).block_n, 64);
}

TEST(ContractionTiling, WgmmaSplitsKOnlyWhereTheGridLeavesSlotsIdle) {
  const Target hopper = target_for_arch("sm_90a");
  // ResNet-50 b32's layer-4 3×3 conv (M = 32·7·7, N = 512, K = 4608): 13 × 8 blocks of
  // 128 × 64, two an SM: 264 slots hold two slices of 36 steps.
  const WgmmaTiling layer4 = choose_wgmma_tiling(1, 1568, 512, 4608, hopper);
  EXPECT_EQ(layer4.block_n, 64);
  EXPECT_EQ(layer4.splits, 2);
  EXPECT_EQ(layer4.split_depth, 2304);
  // BERT-base b32's FFN down-projection: 128 blocks of 128 × 192 fill 132 slots: no split.
  const WgmmaTiling ffn_down = choose_wgmma_tiling(1, 4096, 768, 3072, hopper);
  EXPECT_EQ(ffn_down.block_n, 192);
  EXPECT_EQ(ffn_down.splits, 1);
  EXPECT_EQ(ffn_down.split_depth, 3072);
}

TEST(ContractionTiling, HeuristicSplitsAreAlsoOfferedInAClusterOfAtMostEightSlices) {
  const Target hopper = target_for_arch("sm_90a");
  // ResNet-50 b32's layer-4 3×3 conv: each width's heuristic split also in a cluster (128 × 256:
  // 5 slices), right after it.
  const std::vector<WgmmaTiling> layer4 = wgmma_tiling_candidates(1, 1568, 512, 4608, hopper);
  const WgmmaTiling split{.block_n = 128, .stages = 4, .splits = 2, .split_depth = 2304};
  const auto at = std::find(layer4.begin(), layer4.end(), split);
  ASSERT_NE(at, layer4.end());
  ASSERT_NE(at + 1, layer4.end());
  WgmmaTiling cluster = split;
  cluster.cluster = true;
  EXPECT_EQ(*(at + 1), cluster);
  int clusters = 0;
  std::vector<WgmmaTiling> tall;
  for (const WgmmaTiling& tiling : layer4) {
    if (!tiling.cluster) continue;
    EXPECT_GE(tiling.splits, 2);
    EXPECT_LE(tiling.splits, kWgmmaMaxClusterSlices);
    EXPECT_EQ(tiling.persistent_blocks, 0);
    if (tiling.block_m == kWgmmaBlockM) {
      ++clusters;
    } else {
      tall.push_back(tiling);
    }
  }
  EXPECT_EQ(clusters, 4);
  // ... and tall tiles in as many slices as one wave of blocks holds, for each width: 36 tiles of
  // 192 × 128 in 3 slices (108 blocks), 27 of 192 × 192 in 4, 18 of 192 × 256 in 7.
  ASSERT_EQ(tall.size(), 3u);
  EXPECT_EQ(tall[0], (WgmmaTiling{.block_m = 192, .block_n = 128, .stages = 4, .splits = 3,
                                  .split_depth = 1536, .cluster = true}));
  EXPECT_EQ(tall[1].splits, 4);
  EXPECT_EQ(tall[2].splits, 7);
  // ResNet-50 b32's layer-3 3×3 conv (6272 × 256, 36 steps): 98 tiles of 128 × 128 fill 74% of
  // the SMs; 66 tiles of 192 × 128 in 2 slices fill all 132.
  const std::vector<WgmmaTiling> layer3 = wgmma_tiling_candidates(1, 6272, 256, 2304, hopper);
  const WgmmaTiling tall_halves{.block_m = 192, .block_n = 128, .stages = 4, .splits = 2,
                                .split_depth = 1152, .cluster = true};
  EXPECT_NE(std::find(layer3.begin(), layer3.end(), tall_halves), layer3.end());
  // None where nothing is split by the heuristic (the extra halves are not offered in a
  // cluster): ViT-B/16 b32's FFN down-projection.
  for (const WgmmaTiling& tiling : wgmma_tiling_candidates(1, 6304, 768, 3072, hopper)) {
    EXPECT_FALSE(tiling.cluster);
  }
}

TEST(ContractionTiling, CandidatesStartWithTheHeuristicsChoiceAndComeOnce) {
  const Target hopper = target_for_arch("sm_90a");
  // ViT-B/16 b32's FFN down-projection (M = 32 · 197, 48 steps deep): 200 tiles of 128 × 192 are
  // 1.5 waves; measurement may also take every other width, and each split in two.
  const std::vector<WgmmaTiling> ffn_down = wgmma_tiling_candidates(1, 6304, 768, 3072, hopper);
  ASSERT_FALSE(ffn_down.empty());
  EXPECT_EQ(ffn_down.front(), choose_wgmma_tiling(1, 6304, 768, 3072, hopper));
  EXPECT_EQ(ffn_down.size(), 12u);
  const WgmmaTiling halves{.block_n = 192, .stages = 4, .splits = 2, .split_depth = 1536};
  EXPECT_NE(std::find(ffn_down.begin(), ffn_down.end(), halves), ffn_down.end());
  // ... and 128 wide in 3 stages, two blocks an SM.
  const WgmmaTiling pair{.block_n = 128, .stages = 3, .splits = 1, .split_depth = 3072};
  EXPECT_NE(std::find(ffn_down.begin(), ffn_down.end(), pair), ffn_down.end());
  EXPECT_GE(wgmma_blocks_per_sm(128, 128, 3, hopper), 2);
  // ... and the warp-specialized persistent kernel, 128 and 64 wide, a block on each of the 132
  // SMs (300 and 600 tiles), as many stages as 227 KiB hold beside the staged f32 tile (32 and 24
  // KiB a stage, 68 and 36 KiB the tile).
  const WgmmaTiling persistent_128{
      .block_n = 128, .stages = 4, .splits = 1, .split_depth = 3072, .persistent_blocks = 132};
  const WgmmaTiling persistent_64{
      .block_n = 64, .stages = 7, .splits = 1, .split_depth = 3072, .persistent_blocks = 132};
  EXPECT_EQ(ffn_down[ffn_down.size() - 3], persistent_128);
  EXPECT_EQ(ffn_down[ffn_down.size() - 2], persistent_64);
  // ... and 192 × 192 tall tiles: 33 × 4 = 132 blocks, one full wave, where the heuristic's 200
  // tiles of 128 × 192 fill 76% of two.
  const WgmmaTiling tall{
      .block_m = 192, .block_n = 192, .stages = 4, .splits = 1, .split_depth = 3072};
  EXPECT_EQ(ffn_down.back(), tall);
  EXPECT_NEAR(wgmma_wave_fill(tall, 1, 6304, 768, hopper), 6304.0 * 768 / (132 * 192 * 192), 1e-12);
  EXPECT_NEAR(wgmma_wave_fill(ffn_down.front(), 1, 6304, 768, hopper),
              6304.0 * 768 / (2 * 132 * 128 * 192), 1e-12);
  // No tall tile where the heuristic's waves are as full (ResNet-50 b32's 3×3 conv at 56 × 56:
  // 784 tiles of 128 × 64, two an SM, 99% of three waves; 523 of 192 × 64 likewise).
  for (const WgmmaTiling& tiling : wgmma_tiling_candidates(1, 100352, 64, 576, hopper)) {
    EXPECT_EQ(tiling.block_m, kWgmmaBlockM);
  }
  // ... but one at 28 × 28 (25088 × 128, 1152 deep): 196 tiles of 128 × 128 fill 74% of two
  // waves, 131 of 192 × 128 99% of one.
  const std::vector<WgmmaTiling> conv28 = wgmma_tiling_candidates(1, 25088, 128, 1152, hopper);
  ASSERT_FALSE(conv28.empty());
  EXPECT_EQ(conv28.back().block_m, kWgmmaTallBlockM);
  EXPECT_EQ(conv28.back().block_n, 128);
  // Fewer tiles than SMs: a block a tile (1000 × 1536: 8 × 12 tiles of 128 × 128).
  const std::vector<WgmmaTiling> few = wgmma_tiling_candidates(1, 1000, 1536, 768, hopper);
  ASSERT_FALSE(few.empty());
  EXPECT_EQ(few[few.size() - 2].persistent_blocks, 96);
  for (size_t i = 0; i < ffn_down.size(); ++i) {
    EXPECT_EQ(std::count(ffn_down.begin(), ffn_down.end(), ffn_down[i]), 1) << i;
  }
  // Shallow contractions keep their 3 stages and widths up to 128 in one-tile blocks; the
  // persistent kernel is offered at any depth (ResNet-50's one-step 1×1 convs), its ring as deep
  // as the shared memory holds.
  const std::vector<WgmmaTiling> shallow = wgmma_tiling_candidates(1, 100352, 256, 64, hopper);
  for (const WgmmaTiling& tiling : shallow) {
    EXPECT_EQ(tiling.stages, tiling.persistent_blocks > 0 ? (tiling.block_n == 128 ? 4 : 7) : 3);
    EXPECT_LE(tiling.block_n, 128);
  }
  EXPECT_EQ(std::count_if(shallow.begin(), shallow.end(),
                          [](const WgmmaTiling& tiling) { return tiling.persistent_blocks > 0; }),
            2);
  // No wgmma tiling here where the heuristic has none (batch 1's 128 rows: the small-grid ones).
  EXPECT_TRUE(wgmma_tiling_candidates(1, 128, 768, 768, hopper).empty());
  const std::vector<MmaTiling> mma = mma_tiling_candidates(1, 49, 512, 4608, kH100);
  ASSERT_FALSE(mma.empty());
  EXPECT_EQ(mma.front(), choose_mma_tiling(1, 49, 512, 4608, kH100));
  for (size_t i = 0; i < mma.size(); ++i) {
    EXPECT_EQ(std::count(mma.begin(), mma.end(), mma[i]), 1) << i;
  }
}

TEST(ContractionTiling, SwappedTilingsWhereRowsPadAndTheSwappedGridIsOneWave) {
  const Target hopper = target_for_arch("sm_90a");
  // ResNet-50 b32's 7 × 7 1×1 down-projection (1568 × 512, 2048 deep): 8 × 14 tiles of 64 ×
  // 112, one wave of 112 blocks over 132 SMs, unsplit, in 4 stages and in 8.
  const std::vector<WgmmaTiling> down = wgmma_swapped_candidates(1, 1568, 512, 2048, hopper);
  const std::vector<WgmmaTiling> expected{
      {.block_m = 64, .block_n = 112, .stages = 4, .split_depth = 2048, .swapped = true},
      {.block_m = 64, .block_n = 112, .stages = 8, .split_depth = 2048, .swapped = true}};
  EXPECT_EQ(down, expected);
  // 1500 rows: 16 tiles of 96 (the last 60 rows) make 128 blocks, one wave.
  const std::vector<WgmmaTiling> edges = wgmma_swapped_candidates(1, 1500, 512, 1000, hopper);
  ASSERT_FALSE(edges.empty());
  EXPECT_EQ(edges.front().block_n, 96);
  // None where the rows make whole 128-row tiles (BERT-base b32's 4096), the columns no whole
  // 64-row swapped tiles, or the swapped grid is more than a wave (ViT-B/16 b32's 6304 × 768)
  // or too little of one (batch 1's 49 × 512).
  EXPECT_TRUE(wgmma_swapped_candidates(1, 4096, 768, 768, hopper).empty());
  EXPECT_TRUE(wgmma_swapped_candidates(1, 1568, 500, 2048, hopper).empty());
  EXPECT_TRUE(wgmma_swapped_candidates(1, 6304, 768, 768, hopper).empty());
  EXPECT_TRUE(wgmma_swapped_candidates(1, 49, 512, 2048, hopper).empty());
  // Nor batched (2 × 784 × 512 would make 112 tiles of 64 × 112): not yet run on a GPU.
  EXPECT_TRUE(wgmma_swapped_candidates(2, 784, 512, 2048, hopper).empty());
}

// ViT-B/16 b8's out-projection (1576 × 768 × 768) reads the attention's output through a reshape
// computed in the kernel body: no swapped tiling (its B would be that view, which has no buffer
// of its own for TMA to copy), and every tactic it has lowers (session 26: gpu_model_vit_*_b8
// died of a swapped tiling reading the view as a kernel parameter).
TEST(ContractionTiling, AViewedOperandTakesNoSwappedTilingAndEveryTacticLowers) {
  const std::unique_ptr<Graph> graph = parse_graph(R"(
graph @vit_out_projection(%x: f16[8,197,12,64], %w: f16[768,768], %b: f16[768]) -> (f16[1576,768]) {
  %y = fusion.epilogue(%x, %w, %b) {
    ^(%p: f16[8,197,12,64], %q: f16[768,768], %c: f16[768]):
    %t = reshape(%p) {shape=[1576,768]} : f16[1576,768]
    %m = matmul(%t, %q) : f16[1576,768] loc("/MatMul")
    %a = add(%m, %c) : f16[1576,768] loc("/Add")
    yield %a
  } : (f16[1576,768]) loc("/MatMul", "/Add")
  return %y
})");
  CodegenOptions options = CodegenOptions::for_target(target_for_arch("sm_90a"));
  std::vector<std::string> tactics;
  options.choose_tactic = [&](const TacticSite& site) {
    tactics = site.tactics;
    return 0;
  };
  lower_graph(*graph, options);
  ASSERT_GT(tactics.size(), 2u);
  for (const std::string& tactic : tactics) EXPECT_EQ(tactic.find("swapped"), std::string::npos);
  for (size_t t = 0; t < tactics.size(); ++t) {
    options.choose_tactic = [t](const TacticSite&) { return static_cast<int>(t); };
    EXPECT_NO_THROW(lower_graph(*graph, options)) << tactics[t];
  }
}

TEST(ContractionTiling, SmallGridsOfferWgmmaTilingsSplitFine) {
  const Target hopper = target_for_arch("sm_90a");
  // ResNet-50 b1's layer-4 3×3 conv (M = 49, N = 512, K = 4608, 72 steps): 8 tiles of 128 × 64,
  // two an SM, split into 15 slices of 5 steps (16 wanted), the heuristic's as K is deep, then
  // whole, then in a cluster of 8 slices of 9 steps (a cluster's most); 4 tiles of 128 × 128
  // likewise.
  const std::vector<WgmmaTiling> layer4 = wgmma_small_grid_candidates(1, 49, 512, 4608, hopper);
  const std::vector<WgmmaTiling> expected{
      {.block_n = 64, .stages = 4, .splits = 15, .split_depth = 320},
      {.block_n = 64, .stages = 4, .splits = 1, .split_depth = 4608},
      {.block_n = 64, .stages = 4, .splits = 8, .split_depth = 576, .cluster = true},
      {.block_n = 128, .stages = 4, .splits = 15, .split_depth = 320},
      {.block_n = 128, .stages = 4, .splits = 1, .split_depth = 4608},
      {.block_n = 128, .stages = 4, .splits = 8, .split_depth = 576, .cluster = true}};
  EXPECT_EQ(layer4, expected);
  // Layer 1's (M = 3136, N = 64, K = 576, 9 steps): 25 tiles, whole first (shallower than
  // kWgmmaSmallGridSplitSteps), then 3 slices of 3 steps (at least 2 each), then those in a
  // cluster; no tile wider than the 64 columns.
  const std::vector<WgmmaTiling> layer1 = wgmma_small_grid_candidates(1, 3136, 64, 576, hopper);
  ASSERT_EQ(layer1.size(), 3u);
  EXPECT_EQ(layer1[0].splits, 1);
  EXPECT_EQ(layer1[1].splits, 3);
  EXPECT_EQ(layer1[1].split_depth, 192);
  EXPECT_FALSE(layer1[1].cluster);
  EXPECT_EQ(layer1[2].splits, 3);
  EXPECT_TRUE(layer1[2].cluster);
  // A 1×1 conv one step deep keeps the shallow stage count and is not split.
  const std::vector<WgmmaTiling> shallow = wgmma_small_grid_candidates(1, 3136, 64, 64, hopper);
  ASSERT_EQ(shallow.size(), 1u);
  EXPECT_EQ(shallow[0].stages, kWgmmaShallowStages);
  // None where the heuristic has a wgmma tiling (BERT-base b32's FFN down-projection).
  EXPECT_TRUE(wgmma_small_grid_candidates(1, 4096, 768, 3072, hopper).empty());
}

// The kernel source lowering gives a one-matmul graph of `a` × `b` 16-bit operands for `arch`.
std::string matmul_source(const std::string& dtype, const std::string& arch) {
  const std::string text = "graph @g(%a: " + dtype + "[4096,768], %b: " + dtype +
                           "[768,768]) -> (" + dtype + "[4096,768]) {\n"
                           "  %0 = matmul(%a, %b) : " + dtype + "[4096,768] loc(\"MatMul\")\n"
                           "  return %0\n}\n";
  const Program program =
      lower_graph(*parse_graph(text), CodegenOptions::for_archs({arch}));
  return program.kernels.at(0).source;
}

TEST(ContractionTiling, OnlySm90aTakesTheWgmmaKernel) {
  EXPECT_NE(matmul_source("f16", "sm_90a").find("wgmma.mma_async.sync.aligned.m64n192k16.f32.f16.f16"),
            std::string::npos);
  EXPECT_NE(matmul_source("bf16", "sm_90a").find(".f32.bf16.bf16"), std::string::npos);
  for (const char* arch : {"sm_90", "sm_80"}) {
    const std::string source = matmul_source("f16", arch);
    EXPECT_EQ(source.find("wgmma"), std::string::npos) << arch;
    EXPECT_NE(source.find("kiln_mma_f16_16816"), std::string::npos) << arch;
  }
  // f32 operands (tf32 or not) keep the other kernels.
  EXPECT_EQ(matmul_source("f32", "sm_90a").find("wgmma"), std::string::npos);
}

TEST(ContractionTiling, Sm90aIsCompiledAlone) {
  EXPECT_NO_THROW(CodegenOptions::for_archs({"sm_90a"}));
  try {
    CodegenOptions::for_archs({"sm_80", "sm_90a"});
    FAIL() << "sm_80,sm_90a accepted";
  } catch (const InputError& error) {
    EXPECT_NE(std::string(error.what()).find("cannot be combined with other archs"),
              std::string::npos)
        << error.what();
  }
}

}  // namespace
}  // namespace kiln::codegen
