// Tests of static memory planning (runtime/memory_plan.h): live ranges, greedy-by-size
// placement with best fit, the figures, branches that run at once kept apart, and, on many random
// programs, that two buffers share a byte only when every use of one happens before every use of
// the other (checked against a step graph the test computes itself).
#include "runtime/memory_plan.h"

#include <gtest/gtest.h>

#include <limits>
#include <random>

#include "tests/runtime/bias_relu_program.h"

namespace kiln {
namespace {

// How the steps of intermediates_program say what they write.
enum class Writes {
  kUnstated,  // their kernel's header states nothing: every argument counts as written
  kLastArgument,
};

// A program with one intermediate f32 buffer per entry of `bytes` (multiples of 4) and one
// step per entry of `step_args` (at most 4 arguments each); launch geometry does not matter to
// the planner.
Program intermediates_program(const std::vector<int64_t>& bytes,
                              const std::vector<std::vector<int>>& step_args,
                              Writes writes = Writes::kUnstated) {
  Program program;
  for (size_t i = 0; i < bytes.size(); ++i) {
    program.buffers.push_back({ProgramBuffer::Kind::kIntermediate,
                               "t" + std::to_string(i),
                               {DType::kF32, {bytes[i] / 4}},
                               -1});
  }
  // Kernel n - 1 takes n arguments and, when stated, writes the last.
  for (int arguments = 1; arguments <= 4; ++arguments) {
    const std::string written =
        writes == Writes::kLastArgument
            ? "// written parameters: " + std::to_string(arguments - 1) + "\n"
            : "";
    program.kernels.push_back({"k", "// kiln kernel k\n" + written + "\nextern", {}, {}, ""});
  }
  for (const std::vector<int>& args : step_args) {
    program.steps.push_back({static_cast<int>(args.size()) - 1, {}, {}, 0, args});
  }
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

// The branches of tests/runtime/bias_relu_program.h: in program order `rectified` (steps 1-2)
// dies before `doubled_sum` (3-4) is born, but steps 2 and 3 run at once, so no two of the four
// intermediates share bytes; the lower bound counts the program order's largest live set.
TEST(MemoryPlanTest, BranchesRunningAtOnceNeverShareBytes) {
  Program program = test::branches_program(test::placeholder_kernels());
  const MemoryFigures figures = plan_memory(program);
  EXPECT_EQ(offsets(program), (std::vector<int64_t>{0, 0, 0, 65536, 131072, 0, 196608}));
  EXPECT_EQ(figures.peak_bytes, 262144);
  EXPECT_EQ(figures.naive_bytes, 262144);
  EXPECT_EQ(figures.lower_bound_bytes, 196608);
}

// A diamond (step 0 writes a; steps 1 and 2 read it into b and c at once; step 3 joins them into
// d; step 4 reads d into e): d follows every use of a and takes its bytes, e those of b.
TEST(MemoryPlanTest, BuffersOrderedByTheStepGraphShareBytes) {
  Program program = intermediates_program(
      {256, 256, 256, 256, 256}, {{0}, {0, 1}, {0, 2}, {1, 2, 3}, {3, 4}}, Writes::kLastArgument);
  const MemoryFigures figures = plan_memory(program);
  EXPECT_EQ(offsets(program), (std::vector<int64_t>{0, 256, 512, 0, 256}));
  EXPECT_EQ(figures.peak_bytes, 768);
  EXPECT_EQ(figures.lower_bound_bytes, 768);
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

// Whether step `later` must wait for step `earlier` (earlier < later) by a path of hazards, from
// every pair of steps touching a common buffer where either writes it (the last argument).
std::vector<std::vector<bool>> happens_before(const std::vector<std::vector<int>>& step_args) {
  const size_t steps = step_args.size();
  const auto touches = [&](size_t step, int buffer, bool only_written) {
    const std::vector<int>& args = step_args[step];
    for (size_t position = 0; position < args.size(); ++position) {
      if (args[position] == buffer && (!only_written || position + 1 == args.size())) return true;
    }
    return false;
  };
  std::vector<std::vector<bool>> before(steps, std::vector<bool>(steps, false));
  for (size_t later = 0; later < steps; ++later) {
    for (size_t earlier = 0; earlier < later; ++earlier) {
      bool hazard = before[earlier][later];
      for (const int buffer : step_args[later]) {
        hazard = hazard || (touches(earlier, buffer, false) &&
                            (touches(earlier, buffer, true) || touches(later, buffer, true)));
      }
      if (!hazard) continue;
      before[earlier][later] = true;
      for (size_t first = 0; first < earlier; ++first) {
        if (before[first][earlier]) before[first][later] = true;
      }
    }
  }
  return before;
}

// Random programs: two intermediates that share a byte are ordered (every step using one happens
// before every step using the other, by the test's own hazard closure), checked over every pair;
// the arena lies between the lower bound and the naive sum.
TEST(MemoryPlanTest, RandomProgramsShareBytesOnlyBetweenOrderedBuffers) {
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
    Program program = intermediates_program(bytes, step_args, Writes::kLastArgument);
    const MemoryFigures figures = plan_memory(program);
    const std::vector<std::vector<bool>> before = happens_before(step_args);
    std::vector<std::vector<int>> users(buffer_count);
    for (int step = 0; step < step_count; ++step) {
      for (const int arg : step_args[step]) {
        if (users[arg].empty() || users[arg].back() != step) users[arg].push_back(step);
      }
    }
    const auto all_before = [&](int a, int b) {
      for (const int first : users[a]) {
        for (const int second : users[b]) {
          if (first >= second || !before[first][second]) return false;
        }
      }
      return true;
    };
    for (int a = 0; a < buffer_count; ++a) {
      for (int b = a + 1; b < buffer_count; ++b) {
        const ProgramBuffer& x = program.buffers[a];
        const ProgramBuffer& y = program.buffers[b];
        const bool share = x.offset < y.offset + bytes[b] && y.offset < x.offset + bytes[a] &&
                           bytes[a] != 0 && bytes[b] != 0;
        if (!share || users[a].empty() || users[b].empty()) continue;
        ASSERT_TRUE(all_before(a, b) || all_before(b, a))
            << "trial " << trial << ": " << x.name << " and " << y.name;
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
