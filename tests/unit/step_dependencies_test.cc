// Tests of the step graph (runtime/step_dependencies.h): a diamond, readers of one buffer at once,
// transitively implied edges left out, write-after-read and write-after-write hazards, a step
// writing a buffer it reads, a split-K workspace shared by two contractions, kernels that state
// no written parameters, intermediates sharing arena bytes, ancestors and levels; steps writing
// regions of one buffer (a concat's operands).
#include "runtime/step_dependencies.h"

#include <gtest/gtest.h>

#include <optional>
#include <string>

#include "runtime/memory_plan.h"
#include "tests/runtime/bias_relu_program.h"

namespace kiln {
namespace {

using Kind = ProgramBuffer::Kind;
using Predecessors = std::vector<std::vector<int>>;

struct TestStep {
  std::vector<int> args;
  std::optional<std::vector<int>> written;  // the positions its kernel's header states
  std::string regions;                      // its "// output regions: " line's value, if any
};

TestStep step(std::vector<int> args, std::vector<int> written) {
  return {std::move(args), std::move(written), ""};
}
TestStep stating_no_writes(std::vector<int> args) { return {std::move(args), std::nullopt, ""}; }
// A step writing position 1 of `args` only in `region` ("1 block B stride S offset O").
TestStep placed(std::vector<int> args, std::string region) {
  return {std::move(args), std::vector<int>{1}, std::move(region)};
}

// Buffers of f32[64] (256 bytes: one arena piece each), intermediates at distinct offsets; one
// kernel per step, its header stating the step's written positions when it has them.
Program program_of(const std::vector<Kind>& kinds, const std::vector<TestStep>& steps) {
  Program program;
  for (size_t i = 0; i < kinds.size(); ++i) {
    program.buffers.push_back(
        {kinds[i], "b" + std::to_string(i), {DType::kF32, {64}}, static_cast<int64_t>(i) * 256});
  }
  for (size_t i = 0; i < steps.size(); ++i) {
    std::string source = "// kiln kernel k" + std::to_string(i) + ": loop (add)\n";
    if (steps[i].written) {
      std::string positions;
      for (const int position : *steps[i].written) {
        positions += (positions.empty() ? "" : ", ") + std::to_string(position);
      }
      source += "// written parameters: " + positions + "\n";
    }
    if (!steps[i].regions.empty()) source += "// output regions: " + steps[i].regions + "\n";
    program.kernels.push_back({"k" + std::to_string(i), source + "\nextern", {}, {}, ""});
    program.steps.push_back({static_cast<int>(i), {1, 1, 1}, {1, 1, 1}, 0, steps[i].args});
  }
  return program;
}

Predecessors predecessors(const Program& program,
                          ArenaSharing sharing = ArenaSharing::kOrdersSteps) {
  return step_dependencies(program, sharing).predecessors;
}

// x -> a (step 0); a -> b (1) and a -> c (2) at once; b, c -> y (3).
TEST(StepDependenciesTest, DiamondRunsItsTwoBranchesAtOnce) {
  const Program program = program_of(
      {Kind::kInput, Kind::kIntermediate, Kind::kIntermediate, Kind::kIntermediate, Kind::kOutput},
      {step({0, 1}, {1}), step({1, 2}, {1}), step({1, 3}, {1}), step({2, 3, 4}, {2})});
  const StepGraph graph = step_dependencies(program, ArenaSharing::kOrdersSteps);
  EXPECT_EQ(graph.predecessors, (Predecessors{{}, {0}, {0}, {1, 2}}));
  EXPECT_EQ(graph.edge_count(), 4);
  EXPECT_EQ(step_levels(graph), (std::vector<int>{0, 1, 1, 2}));
  EXPECT_EQ(widest_level(graph), 2);
}

// Separate Q, K and V projections of one x, then one step reading all three.
TEST(StepDependenciesTest, ReadersOfOneBufferRunAtOnce) {
  const Program program =
      program_of({Kind::kInput, Kind::kIntermediate, Kind::kWeight, Kind::kIntermediate,
                  Kind::kIntermediate, Kind::kIntermediate, Kind::kOutput},
                 {step({0, 1}, {1}), step({1, 2, 3}, {2}), step({1, 2, 4}, {2}),
                  step({1, 2, 5}, {2}), step({3, 4, 5, 6}, {3})});
  const StepGraph graph = step_dependencies(program, ArenaSharing::kOrdersSteps);
  EXPECT_EQ(graph.predecessors, (Predecessors{{}, {0}, {0}, {0}, {1, 2, 3}}));
  EXPECT_EQ(widest_level(graph), 3);
}

// Step 2 reads a (from step 0) and b (from step 1, which read a): 0 -> 2 is implied.
TEST(StepDependenciesTest, ImpliedEdgesAreLeftOut) {
  const Program program =
      program_of({Kind::kInput, Kind::kIntermediate, Kind::kIntermediate, Kind::kOutput},
                 {step({0, 1}, {1}), step({1, 2}, {1}), step({1, 2, 3}, {2})});
  const StepGraph graph = step_dependencies(program, ArenaSharing::kOrdersSteps);
  EXPECT_EQ(graph.predecessors, (Predecessors{{}, {0}, {1}}));
  EXPECT_EQ(graph.edge_count(), 2);
}

// Step 3 overwrites a, which step 1 reads: it waits for step 1 (and so for step 0, whose write
// it would otherwise follow directly); step 2, which reads only x, waits for nothing.
TEST(StepDependenciesTest, WriteAfterReadWaitsForTheReaders) {
  const Program program =
      program_of({Kind::kInput, Kind::kIntermediate, Kind::kIntermediate, Kind::kIntermediate},
                 {step({0, 1}, {1}), step({1, 2}, {1}), step({0, 3}, {1}), step({0, 1}, {1})});
  EXPECT_EQ(predecessors(program), (Predecessors{{}, {0}, {}, {1}}));
}

TEST(StepDependenciesTest, WriteAfterWriteIsOrdered) {
  const Program program = program_of({Kind::kInput, Kind::kIntermediate, Kind::kInput},
                                     {step({0, 1}, {1}), step({2, 1}, {1})});
  EXPECT_EQ(predecessors(program), (Predecessors{{}, {0}}));
}

// Step 2 passes a as both operand and result (in place): it follows step 1, which read a;
// step 3 reads the new a after step 2.
TEST(StepDependenciesTest, StepWritingWhatItReadsFollowsReadersAndIsFollowed) {
  const Program program =
      program_of({Kind::kInput, Kind::kIntermediate, Kind::kIntermediate, Kind::kOutput},
                 {step({0, 1}, {1}), step({1, 2}, {1}), step({1, 1}, {1}), step({1, 3}, {1})});
  EXPECT_EQ(predecessors(program), (Predecessors{{}, {0}, {1}, {2}}));
}

// Two split-K contractions of independent inputs: each writes its partial sums into the
// workspace and reduces them into its output. One workspace shared by both orders all four
// steps; a workspace each leaves the contractions independent.
TEST(StepDependenciesTest, SharedWorkspaceOrdersTheStepsThatUseIt) {
  const std::vector<Kind> kinds = {Kind::kInput,  Kind::kInput,  Kind::kIntermediate,
                                   Kind::kOutput, Kind::kOutput, Kind::kIntermediate};
  const auto contractions = [&](int second_workspace) {
    return program_of(kinds,
                      {step({0, 2}, {1}), step({2, 3}, {0, 1}), step({1, second_workspace}, {1}),
                       step({second_workspace, 4}, {0, 1})});
  };
  EXPECT_EQ(predecessors(contractions(2)), (Predecessors{{}, {0}, {1}, {2}}));
  EXPECT_EQ(predecessors(contractions(5)), (Predecessors{{}, {0}, {}, {2}}));
}

// Without the header line, every intermediate and output argument counts as written: readers
// of one intermediate follow each other; inputs and weights are only read.
TEST(StepDependenciesTest, KernelsStatingNoWritesWriteTheirIntermediatesAndOutputs) {
  const Program program = program_of({Kind::kInput, Kind::kWeight, Kind::kIntermediate,
                                      Kind::kIntermediate, Kind::kIntermediate, Kind::kOutput},
                                     {stating_no_writes({0, 1, 2}), stating_no_writes({0, 1, 3}),
                                      stating_no_writes({2, 4}), stating_no_writes({2, 5})});
  EXPECT_EQ(predecessors(program), (Predecessors{{}, {}, {0}, {2}}));
}

// Buffers 1 and 2 share arena bytes: their steps are ordered only when the arena counts.
// Buffer 3 overlaps buffer 2 by its last 256 bytes; buffer 4 lies right after buffer 3.
TEST(StepDependenciesTest, IntermediatesSharingArenaBytesAreOneMemory) {
  Program program =
      program_of({Kind::kInput, Kind::kIntermediate, Kind::kIntermediate, Kind::kIntermediate,
                  Kind::kIntermediate},
                 {step({0, 1}, {1}), step({0, 2}, {1}), step({0, 3}, {1}), step({0, 4}, {1})});
  program.buffers[2].type.shape = {128};  // 512 bytes
  program.buffers[1].offset = 0;
  program.buffers[2].offset = 0;
  program.buffers[3].offset = 256;
  program.buffers[4].offset = 512;
  EXPECT_EQ(predecessors(program, ArenaSharing::kIgnored), (Predecessors{{}, {}, {}, {}}));
  EXPECT_EQ(predecessors(program, ArenaSharing::kOrdersSteps), (Predecessors{{}, {0}, {1}, {}}));
}

// The hand-written branches program (tests/runtime/bias_relu_program.h), with its kernels'
// sources stating no writes: 0 -> 3, 1 -> 2, {2, 3} -> 4. With rectified and doubled_sum in the
// same bytes (a plan made for the steps in order), step 3 also waits for step 2.
TEST(StepDependenciesTest, BranchesProgramAndAPlanMadeForTheStepsInOrder) {
  Program program = test::branches_program(test::placeholder_kernels());
  const StepGraph graph = step_dependencies(program, ArenaSharing::kOrdersSteps);
  EXPECT_EQ(graph.predecessors, (Predecessors{{}, {}, {1}, {0}, {2, 3}}));
  EXPECT_EQ(graph.edge_count(), 4);
  EXPECT_EQ(widest_level(graph), 2);
  program.buffers[6].offset = program.buffers[3].offset;
  EXPECT_EQ(predecessors(program), (Predecessors{{}, {}, {1}, {0, 2}, {3}}));
}

TEST(StepDependenciesTest, AncestorsAreEveryStepAPathLeadsFrom) {
  const StepGraph graph{{{}, {0}, {}, {1, 2}, {2}}};
  const std::vector<StepSet> ancestors = step_ancestors(graph);
  const auto members = [&](int step) {
    std::vector<int> steps;
    for (int other = 0; other < 5; ++other) {
      if (ancestors[step].contains(other)) steps.push_back(other);
    }
    return steps;
  };
  EXPECT_EQ(members(0), (std::vector<int>{}));
  EXPECT_EQ(members(3), (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(members(4), (std::vector<int>{2}));
  EXPECT_EQ(step_levels(graph), (std::vector<int>{0, 1, 0, 2, 1}));
  EXPECT_EQ(widest_level(graph), 2);
}

TEST(StepDependenciesTest, NoStepsNoEdgesNoLevel) {
  const StepGraph graph = step_dependencies(Program{}, ArenaSharing::kOrdersSteps);
  EXPECT_EQ(graph.edge_count(), 0);
  EXPECT_EQ(widest_level(graph), 0);
}

// A concat's operands written into its buffer by two steps (output regions, as codegen states
// them for concat views): disjoint regions run at once, and the concat's reader waits for both;
// overlapping regions, or regions of different strides, are one memory.
TEST(StepDependenciesTest, StepsWritingDisjointRegionsOfABufferRunAtOnce) {
  const std::vector<Kind> kinds = {Kind::kInput, Kind::kIntermediate, Kind::kOutput};
  for (const ArenaSharing sharing : {ArenaSharing::kIgnored, ArenaSharing::kOrdersSteps}) {
    const Program halves =
        program_of(kinds, {placed({0, 1}, "1 block 16 stride 32 offset 0"),
                           placed({0, 1}, "1 block 16 stride 32 offset 16"), step({1, 2}, {1})});
    EXPECT_EQ(predecessors(halves, sharing), (Predecessors{{}, {}, {0, 1}}));
    const Program overlapping =
        program_of(kinds, {placed({0, 1}, "1 block 16 stride 32 offset 0"),
                           placed({0, 1}, "1 block 16 stride 32 offset 8"), step({1, 2}, {1})});
    EXPECT_EQ(predecessors(overlapping, sharing), (Predecessors{{}, {0}, {1}}));
    const Program strides =
        program_of(kinds, {placed({0, 1}, "1 block 16 stride 32 offset 0"),
                           placed({0, 1}, "1 block 16 stride 64 offset 32"), step({1, 2}, {1})});
    EXPECT_EQ(predecessors(strides, sharing), (Predecessors{{}, {0}, {1}}));
  }
}

// A region write after a whole write or read of its buffer waits for it, and a whole write after
// region writes waits for them all.
TEST(StepDependenciesTest, RegionWritesAndWholeAccessesOfABufferAreOrdered) {
  const Program program = program_of(
      {Kind::kInput, Kind::kIntermediate, Kind::kOutput},
      {step({0, 1}, {1}), step({1, 2}, {1}), placed({0, 1}, "1 block 16 stride 32 offset 0"),
       placed({0, 1}, "1 block 16 stride 32 offset 16"), step({0, 1}, {1})});
  EXPECT_EQ(predecessors(program), (Predecessors{{}, {0}, {1}, {1}, {2, 3}}));
}

// Two concats' buffers at the same arena bytes (a plan for the steps in order): the second one's
// region writers wait for the first one's reader, while each concat's two writers run at once.
TEST(StepDependenciesTest, RegionsOfBuffersSharingArenaBytesAreOrdered) {
  Program program = program_of(
      {Kind::kInput, Kind::kIntermediate, Kind::kOutput, Kind::kIntermediate, Kind::kOutput},
      {placed({0, 1}, "1 block 16 stride 32 offset 0"),
       placed({0, 1}, "1 block 16 stride 32 offset 16"), step({1, 2}, {1}),
       placed({0, 3}, "1 block 16 stride 32 offset 0"),
       placed({0, 3}, "1 block 16 stride 32 offset 16"), step({3, 4}, {1})});
  program.buffers[3].offset = program.buffers[1].offset;
  EXPECT_EQ(predecessors(program), (Predecessors{{}, {}, {0, 1}, {2}, {2}, {3, 4}}));
  EXPECT_EQ(predecessors(program, ArenaSharing::kIgnored),
            (Predecessors{{}, {}, {0, 1}, {}, {}, {3, 4}}));
}

}  // namespace
}  // namespace kiln
