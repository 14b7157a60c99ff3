// Tests of static memory planning (runtime/memory_plan.h): live ranges, greedy-by-size
// placement with best fit, the figures, and, on many random programs, that no two buffers live
// at the same step share a byte.
#include "runtime/memory_plan.h"

#include <gtest/gtest.h>

#include <limits>
#include <random>

#include "tests/runtime/bias_relu_program.h"

namespace kiln {
namespace {

// A program with one intermediate f32 buffer per entry of `bytes` (multiples of 4) and one
// step per entry of `step_args`; kernels and launch geometry do not matter to the planner.
Program intermediates_program(const std::vector<int64_t>& bytes,
                              const std::vector<std::vector<int>>& step_args) {
  Program program;
  for (size_t i = 0; i < bytes.size(); ++i) {
    program.buffers.push_back({ProgramBuffer::Kind::kIntermediate,
                               "t" + std::to_string(i),
                               {DType::kF32, {bytes[i] / 4}},
                               -1});
  }
  for (const std::vector<int>& args : step_args) program.steps.push_back({0, {}, {}, 0, args});
  return program;
}

std::vector<int64_t> offsets(const Program& program) {
  std::vector<int64_t> result;
  for (const ProgramBuffer& buffer : program.buffers) result.push_back(buffer.offset);
  return result;
}

TEST(MemoryPlanTest, LiveRangesRunFromFirstToLastUse) {
  const Program program = intermediates_program({4, 4, 4}, {{0}, {0, 1}, {1}, {0}});
  const std::vector<LiveRange> ranges = live_ranges(program);
  EXPECT_EQ(ranges[0].first_step, 0);
  EXPECT_EQ(ranges[0].last_step, 3);
  EXPECT_EQ(ranges[1].first_step, 1);
  EXPECT_EQ(ranges[1].last_step, 2);
  EXPECT_FALSE(ranges[2].used());
  EXPECT_TRUE(ranges[0].overlaps(ranges[1]));
  EXPECT_FALSE(ranges[1].overlaps(ranges[2]));
}

TEST(MemoryPlanTest, ChainReusesTheBytesOfDeadBuffers) {
  Program program = test::bias_relu_program(test::placeholder_kernels());
  const MemoryFigures figures = plan_memory(program);
  EXPECT_EQ(offsets(program), (std::vector<int64_t>{0, 0, 0, 65536, 0, 0}));
  EXPECT_EQ(program.arena_bytes, 131072);
  EXPECT_EQ(figures.peak_bytes, 131072);
  EXPECT_EQ(figures.naive_bytes, 196608);
  EXPECT_EQ(figures.lower_bound_bytes, 131072);
}

TEST(MemoryPlanTest, SizesRoundUpToTheAlignment) {
  Program program = intermediates_program({4, 260, 0}, {{0, 1, 2}});
  const MemoryFigures figures = plan_memory(program);
  EXPECT_EQ(arena_footprint(program.buffers[0]), 256);
  EXPECT_EQ(arena_footprint(program.buffers[1]), 512);
  EXPECT_EQ(arena_footprint(program.buffers[2]), 0);
  EXPECT_EQ(figures.naive_bytes, 768);
  EXPECT_EQ(figures.peak_bytes, 768);
  for (const ProgramBuffer& buffer : program.buffers) EXPECT_EQ(buffer.offset % 256, 0);
}

// At step 1 the free gaps are [0, 768) and [1280, 1536); best fit puts the new 256-byte buffer
// into the smaller one, where first fit would take offset 0.
TEST(MemoryPlanTest, BestFitTakesTheSmallestGap) {
  // a: 768 bytes, step 0; b: 512, steps 0-1; c: 256, step 0; e: 256, steps 0-1; d: 256, step 1.
  Program program = intermediates_program({768, 512, 256, 256, 256}, {{0, 1, 2, 3}, {1, 3, 4}});
  plan_memory(program);
  EXPECT_EQ(offsets(program), (std::vector<int64_t>{0, 768, 1280, 1536, 1280}));
  EXPECT_EQ(program.arena_bytes, 1792);
}

TEST(MemoryPlanTest, LowerBoundIsTheLargestLiveSet) {
  // Live sets: step 0 {0, 1} = 1536 bytes, step 1 {1, 2} = 768, step 2 {2, 3} = 2304.
  Program program = intermediates_program({1024, 512, 256, 2048}, {{0, 1}, {1, 2}, {2, 3}});
  EXPECT_EQ(plan_memory(program).lower_bound_bytes, 2304);
}

TEST(MemoryPlanTest, NaiveSumSaturatesWhereIntermediatesAddUpPastInt64) {
  // A crafted .kiln (the fuzzer's tests/fuzz/corpus_kiln/naive_sum_overflow.kiln): two unused
  // intermediates, each within a 2^62-byte arena, at the same offset.
  const int64_t huge = int64_t{1} << 62;
  Program program = intermediates_program({huge, huge, huge}, {});
  for (ProgramBuffer& buffer : program.buffers) buffer.offset = 0;
  program.arena_bytes = huge;
  EXPECT_EQ(memory_figures(program).naive_bytes, std::numeric_limits<int64_t>::max());
}

TEST(MemoryPlanTest, UnusedIntermediateSitsAtOffsetZeroInsideTheArena) {
  Program program = intermediates_program({256, 4096}, {{0}});
  const MemoryFigures figures = plan_memory(program);
  EXPECT_EQ(program.buffers[1].offset, 0);
  EXPECT_EQ(program.arena_bytes, 4096);
  EXPECT_EQ(figures.lower_bound_bytes, 256);
}

TEST(MemoryPlanTest, InputsOutputsAndWeightsAreLeftAlone) {
  Program program = test::bias_relu_program(test::placeholder_kernels());
  program.buffers[1].offset = 512;  // the weight
  plan_memory(program);
  EXPECT_EQ(program.buffers[0].offset, 0);
  EXPECT_EQ(program.buffers[1].offset, 512);
  EXPECT_EQ(program.buffers[5].offset, 0);
}

// Random programs: every pair of intermediates live at a common step has disjoint bytes, checked
// step by step over every pair, and the arena lies between the lower bound and the naive sum.
TEST(MemoryPlanTest, RandomProgramsNeverShareBytesBetweenLiveBuffers) {
  std::mt19937 random(12345);
  for (int trial = 0; trial < 300; ++trial) {
    const int buffer_count = 1 + static_cast<int>(random() % 24);
    const int step_count = 1 + static_cast<int>(random() % 16);
    std::vector<int64_t> bytes;
    for (int i = 0; i < buffer_count; ++i)
      bytes.push_back(4 * static_cast<int64_t>(random() % 700));
    std::vector<std::vector<int>> step_args(step_count);
    for (std::vector<int>& args : step_args) {
      const int arg_count = 1 + static_cast<int>(random() % 4);
      for (int a = 0; a < arg_count; ++a) args.push_back(static_cast<int>(random() % buffer_count));
    }
    Program program = intermediates_program(bytes, step_args);
    const MemoryFigures figures = plan_memory(program);

    for (int step = 0; step < step_count; ++step) {
      std::vector<int> live;
      for (int i = 0; i < buffer_count; ++i) {
        int first = -1;
        int last = -1;
        for (int s = 0; s < step_count; ++s) {
          for (const int arg : step_args[s]) {
            if (arg != i) continue;
            if (first < 0) first = s;
            last = s;
          }
        }
        if (first <= step && step <= last) live.push_back(i);
      }
      for (size_t a = 0; a < live.size(); ++a) {
        for (size_t b = a + 1; b < live.size(); ++b) {
          const ProgramBuffer& x = program.buffers[live[a]];
          const ProgramBuffer& y = program.buffers[live[b]];
          const int64_t x_end = x.offset + bytes[live[a]];
          const int64_t y_end = y.offset + bytes[live[b]];
          ASSERT_TRUE(x_end <= y.offset || y_end <= x.offset || bytes[live[a]] == 0 ||
                      bytes[live[b]] == 0)
              << "trial " << trial << " step " << step << ": " << x.name << " and " << y.name;
        }
      }
    }
    for (size_t i = 0; i < bytes.size(); ++i) {
      ASSERT_EQ(program.buffers[i].offset % kArenaAlignment, 0);
      ASSERT_LE(program.buffers[i].offset + bytes[i], program.arena_bytes);
    }
    ASSERT_LE(figures.lower_bound_bytes, figures.peak_bytes) << "trial " << trial;
    ASSERT_LE(figures.peak_bytes, figures.naive_bytes) << "trial " << trial;
  }
}

}  // namespace
}  // namespace kiln
