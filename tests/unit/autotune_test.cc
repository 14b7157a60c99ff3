// The tactic tuner (kiln/autotune.h) with a stand-in for the GPU: each step "takes" a time
// read off its grid, so the test knows which tactic must win; one round's outputs disagree and
// must be left out; the tactic cache must then answer alone.
#include "kiln/autotune.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <condition_variable>
#include <limits>
#include <mutex>

#include "codegen/lower.h"
#include "ir/parser.h"
#include "target/target.h"
#include "tests/unit/test_temp_dir.h"

namespace kiln {
namespace {

// Two equal 768-wide f16 gemms (one problem) and a 3072-wide one.
constexpr const char* kGraph = R"(graph @g(%a: f16[4096,768], %b: f16[768,768], %c: f16[768,768], %d: f16[768,3072]) -> (f16[4096,768], f16[4096,768], f16[4096,3072]) {
  %0 = matmul(%a, %b) : f16[4096,768] loc("first")
  %1 = matmul(%a, %c) : f16[4096,768] loc("second")
  %2 = matmul(%a, %d) : f16[4096,3072] loc("wide")
  return %0, %1, %2
}
)";

// A step's stand-in time: fastest with 12 column tiles (128 × 64 tiles of the 768-wide gemms,
// 128 × 256 of the wide one).
float stand_in_ms(const ProgramStep& step) {
  return 1.0f + std::abs(static_cast<float>(step.grid[0]) - 12.0f);
}

ProgramTimes stand_in_measure(const Program& program) {
  ProgramTimes times;
  bool disagrees = false;
  for (const ProgramStep& step : program.steps) {
    times.step_ms.push_back(stand_in_ms(step));
    disagrees |= step.grid[0] == 6;  // 128-wide tiles of the 768-wide gemms: "wrong results"
  }
  Tensor output = Tensor::from_vector<float>(DType::kF32, {2}, {1.0f, 2.0f});
  if (disagrees) output.set_float(1, 2.5f);
  times.outputs.push_back(std::move(output));
  return times;
}

AutotuneHooks stand_in_hooks(const std::string& cache) {
  AutotuneHooks hooks;
  hooks.compile = [](const std::vector<Program*>& rounds, const RoundCompiled& compiled) {
    for (size_t round = 0; round < rounds.size(); ++round) compiled(round, nullptr);
  };
  hooks.measure = stand_in_measure;
  hooks.cache_directory = cache;
  hooks.cache_identity = "stand-in GPU";
  return hooks;
}

const TunedSite& site_labelled(const AutotuneReport& report, const char* label) {
  for (const TunedSite& site : report.sites) {
    if (site.label == label) return site;
  }
  throw std::runtime_error(std::string("no site ") + label);
}

TEST(Autotune, TakesEachProblemsFastestTacticAndLeavesOutDisagreeingRounds) {
  const std::string cache = testing_support::fresh_temp_path("tactics", true).string();
  const codegen::CodegenOptions codegen =
      codegen::CodegenOptions::for_target(target_for_arch("sm_90a"));
  const std::unique_ptr<Graph> graph = parse_graph(kGraph);
  AutotuneReport report;
  const Program program = lower_autotuned(*graph, codegen, stand_in_hooks(cache), report);

  ASSERT_EQ(report.sites.size(), 2u);
  const TunedSite& narrow = site_labelled(report, "first");
  EXPECT_EQ(narrow.nodes, 2);
  ASSERT_EQ(narrow.tactics.at(0), "wgmma 128x192 4 stages tma");
  EXPECT_EQ(narrow.tactics.at(static_cast<size_t>(narrow.chosen)), "wgmma 128x64 4 stages tma");
  EXPECT_EQ(narrow.ms.at(0), 2 * 9.0);  // two nodes of 4 column tiles
  const TunedSite& wide = site_labelled(report, "wide");
  EXPECT_EQ(wide.chosen, 0);  // the heuristic's 128 × 256
  EXPECT_EQ(report.from_cache, 0);
  // The heuristic's tiling with cp.async copies instead of TMA comes after the wgmma tilings,
  // then mma.sync's, then cuBLASLt (its step timed with the stand-in kernel's grid).
  EXPECT_EQ(narrow.tactics.at(narrow.tactics.size() - 3), "wgmma 128x192 4 stages cp.async");
  EXPECT_EQ(narrow.tactics.back(), "cuBLASLt");
  // The rounds of 128-wide tiles (wgmma in 4 stages and in 3, two blocks an SM; mma.sync last)
  // disagreed: left out, named, their times not taken.
  ASSERT_EQ(narrow.tactics.size(), 10u);
  ASSERT_EQ(report.warnings.size(), 3u);
  EXPECT_NE(report.warnings[0].find("left out: output"), std::string::npos) << report.warnings[0];
  EXPECT_NE(report.warnings[0].find("first (wgmma 128x128 4 stages"), std::string::npos)
      << report.warnings[0];
  EXPECT_NE(report.warnings[1].find("first (wgmma 128x128 3 stages"), std::string::npos)
      << report.warnings[1];
  EXPECT_NE(report.warnings[2].find("first (mma.sync 128x128)"), std::string::npos)
      << report.warnings[2];
  // (The warp-specialized kernel's 128 × 128 tiles run persistent over 132 blocks: they agree.)
  for (size_t t = 0; t < narrow.tactics.size(); ++t) {
    EXPECT_EQ(narrow.ms[t] < 0, narrow.tactics[t].find("128x128") != std::string::npos &&
                                    narrow.tactics[t].find("warp-specialized") == std::string::npos)
        << narrow.tactics[t];
  }
  EXPECT_EQ(report.rounds, 10);
  EXPECT_TRUE(report.whole_program.empty());  // the stand-in times no program whole
  // The final program runs the chosen tiles: 12 column tiles for all three gemms.
  ASSERT_EQ(program.steps.size(), 3u);
  for (const ProgramStep& step : program.steps) EXPECT_EQ(step.grid[0], 12u);

  // Again with the same cache: no round runs, the same tactics come back.
  AutotuneHooks cached = stand_in_hooks(cache);
  cached.measure = [](const Program&) -> ProgramTimes {
    throw std::runtime_error("measured although every problem is cached");
  };
  AutotuneReport again;
  const Program from_cache = lower_autotuned(*graph, codegen, cached, again);
  EXPECT_EQ(again.rounds, 0);
  EXPECT_EQ(again.from_cache, 2);
  EXPECT_TRUE(site_labelled(again, "first").from_cache);
  for (const ProgramStep& step : from_cache.steps) EXPECT_EQ(step.grid[0], 12u);
}

TEST(Autotune, AProgramTheGpuCannotRunKeepsTheHeuristicsAndSaysWhy) {
  const std::string cache = testing_support::fresh_temp_path("tactics_busy", true).string();
  AutotuneHooks hooks = stand_in_hooks(cache);
  hooks.measure = [](const Program&) -> ProgramTimes {
    throw std::runtime_error("out of memory");
  };
  const std::unique_ptr<Graph> graph = parse_graph(kGraph);
  AutotuneReport report;
  const Program program = lower_autotuned(
      *graph, codegen::CodegenOptions::for_target(target_for_arch("sm_90a")), hooks, report);
  EXPECT_FALSE(report.measured);
  EXPECT_NE(report.note.find("could not be timed on the GPU (out of memory)"), std::string::npos)
      << report.note;
  ASSERT_EQ(program.steps.size(), 3u);
  EXPECT_EQ(program.steps[0].grid[0], 4u);   // the heuristic's 128 × 192 tiles
  EXPECT_EQ(program.steps[2].grid[0], 12u);  // and 128 × 256
}

// Steps timed apart need not add up to the whole program: where the per-step winners' program,
// timed whole, runs slower than a round's (here the heuristic program, round 0: 1 ms against
// 2), every measured site takes that round's tactics, the report says so, and the cache keeps
// them. Where it runs as fast, the winners stay.
TEST(Autotune, AProgramOfPerStepWinnersSlowerWholeGivesWayToTheFastestRound) {
  const std::string cache = testing_support::fresh_temp_path("tactics_whole", true).string();
  AutotuneHooks hooks = stand_in_hooks(cache);
  int measured = 0;
  hooks.measure = [&measured](const Program& program) {
    ++measured;
    ProgramTimes times = stand_in_measure(program);
    times.program_ms = program.steps.at(0).grid[0] == 4 ? 1.0 : 2.0;  // the heuristic's 128 × 192
    return times;
  };
  const codegen::CodegenOptions codegen =
      codegen::CodegenOptions::for_target(target_for_arch("sm_90a"));
  const std::unique_ptr<Graph> graph = parse_graph(kGraph);
  AutotuneReport report;
  const Program program = lower_autotuned(*graph, codegen, hooks, report);
  EXPECT_EQ(measured, 11);  // 10 rounds and the winners' program
  EXPECT_EQ(report.whole_program,
            "whole programs: each problem's fastest tactic 2.0000 ms, the heuristic tactics "
            "(round 1) 1.0000 ms: the heuristic tactics (round 1)'s taken");
  EXPECT_EQ(site_labelled(report, "first").chosen, 0);
  ASSERT_EQ(program.steps.size(), 3u);
  EXPECT_EQ(program.steps[0].grid[0], 4u);
  // The cache answers with the heuristic's tactics.
  AutotuneReport again;
  const Program from_cache = lower_autotuned(*graph, codegen, stand_in_hooks(cache), again);
  EXPECT_EQ(again.from_cache, 2);
  EXPECT_EQ(from_cache.steps.at(0).grid[0], 4u);

  // Every program as fast as another whole: the per-step winners stay.
  const std::string level = testing_support::fresh_temp_path("tactics_level", true).string();
  AutotuneHooks even = stand_in_hooks(level);
  even.measure = [](const Program& program) {
    ProgramTimes times = stand_in_measure(program);
    times.program_ms = 1.0;
    return times;
  };
  AutotuneReport kept;
  const Program winners = lower_autotuned(*graph, codegen, even, kept);
  EXPECT_NE(kept.whole_program.find(": each problem's fastest taken"), std::string::npos)
      << kept.whole_program;
  EXPECT_EQ(winners.steps.at(0).grid[0], 12u);
}

// Every round is handed to one compile call, on another thread than the measurements, and
// each round is measured as soon as it is reported compiled: the stand-in compiler reports
// round r + 1 only once round r has been measured (or left out), which a tuner that waited for
// every round's compilation would never let happen (it would time out). A round that fails to
// compile is left out with a warning naming its tactics, and the others are still measured.
TEST(Autotune, MeasuresEachRoundAsSoonAsItIsCompiled) {
  const std::string cache = testing_support::fresh_temp_path("tactics_overlap", true).string();
  AutotuneHooks hooks = stand_in_hooks(cache);
  std::mutex mutex;
  std::condition_variable measured_more;
  int compile_calls = 0;
  int reported = 0;  // rounds reported compiled
  int measured = 0;  // rounds measured or left out
  int in_time = 0;   // rounds measured before the compiler gave up waiting
  hooks.compile = [&](const std::vector<Program*>& rounds, const RoundCompiled& compiled) {
    ++compile_calls;
    for (size_t round = 0; round < rounds.size(); ++round) {
      {
        const std::lock_guard lock(mutex);
        ++reported;
      }
      compiled(round, round == 2 ? std::make_exception_ptr(std::runtime_error("NVRTC refused it"))
                                 : nullptr);
      std::unique_lock lock(mutex);
      if (round == 2) {
        ++measured;  // left out, never measured
        continue;
      }
      if (measured_more.wait_for(lock, std::chrono::seconds(10),
                                 [&] { return measured > static_cast<int>(round); })) {
        ++in_time;
      }
    }
  };
  int measured_calls = 0;
  hooks.measure = [&](const Program& program) {
    const std::lock_guard lock(mutex);
    EXPECT_EQ(reported, measured + 1) << "a round measured before it was reported compiled, or "
                                         "after a later one was";
    ++measured;
    ++measured_calls;
    measured_more.notify_all();
    return stand_in_measure(program);
  };
  const std::unique_ptr<Graph> graph = parse_graph(kGraph);
  AutotuneReport report;
  lower_autotuned(*graph, codegen::CodegenOptions::for_target(target_for_arch("sm_90a")), hooks,
                  report);
  EXPECT_EQ(compile_calls, 1);
  EXPECT_EQ(reported, 10);       // rounds 0..9
  EXPECT_EQ(measured_calls, 9);  // all but round 2
  EXPECT_EQ(in_time, 9);
  bool warned = false;
  for (const std::string& warning : report.warnings) {
    warned |= warning.find("tactic 3 of first (") != std::string::npos &&
              warning.find("it failed to compile: NVRTC refused it") != std::string::npos;
  }
  EXPECT_TRUE(warned) << ::testing::PrintToString(report.warnings);
}

// Every round is held at once, so a round whose weights are round 0's bytes holds round 0's
// (WeightBytes: one copy); each round is measured with the weights.
TEST(Autotune, EveryRoundIsMeasuredWithTheWeights) {
  std::string values;
  for (int i = 0; i < 64 * 128; ++i) values += (i ? ", " : "") + std::to_string(i % 7 - 3);
  const std::unique_ptr<Graph> graph = parse_graph(
      "graph @g(%a: f16[4096,64]) -> (f16[4096,128]) {\n  %w = const f16[64,128] [" + values +
      "]\n  %0 = matmul(%a, %w) : f16[4096,128] loc(\"first\")\n  return %0\n}\n");
  AutotuneHooks hooks =
      stand_in_hooks(testing_support::fresh_temp_path("tactics_weights", true).string());
  std::vector<WeightBytes> measured_weights;
  hooks.measure = [&](Program program) {
    measured_weights.push_back(program.weights);
    return stand_in_measure(program);
  };
  AutotuneReport report;
  const Program program = lower_autotuned(
      *graph, codegen::CodegenOptions::for_target(target_for_arch("sm_90a")), hooks, report);
  ASSERT_GE(measured_weights.size(), 2u);  // round 0 and a round sharing its weights
  ASSERT_GE(program.weights.size(), 64u * 128u * 2u);
  for (const WeightBytes& weights : measured_weights) {
    EXPECT_EQ(weights, program.weights);
    // One copy of the bytes for every round (the later rounds hold round 0's).
    EXPECT_TRUE(weights.shares_bytes_with(measured_weights.front()));
  }
}

// The rounds after the first are lowered on several threads: each round's program, and so
// every time and choice, is the one lowering them one at a time gives.
TEST(Autotune, RoundsLoweredAtOnceMatchRoundsLoweredInTurn) {
  const std::unique_ptr<Graph> graph = parse_graph(kGraph);
  std::vector<std::vector<std::string>> programs_by_threads;
  std::vector<std::vector<std::vector<double>>> times_by_threads;
  for (int threads : {1, 4}) {
    codegen::CodegenOptions codegen =
        codegen::CodegenOptions::for_target(target_for_arch("sm_90a"));
    codegen.threads = threads;
    AutotuneHooks hooks = stand_in_hooks(
        testing_support::fresh_temp_path("tactics_threads_" + std::to_string(threads), true)
            .string());
    std::vector<std::string> programs;  // each measured round's kernels and grids, in order
    hooks.measure = [&](Program program) {
      std::string steps;
      for (const ProgramStep& step : program.steps) {
        steps += program.kernels.at(static_cast<size_t>(step.kernel)).name + " " +
                 std::to_string(step.grid[0]) + ";";
      }
      programs.push_back(steps);
      return stand_in_measure(program);
    };
    AutotuneReport report;
    lower_autotuned(*graph, codegen, hooks, report);
    EXPECT_EQ(report.rounds, 10);
    programs_by_threads.push_back(programs);
    std::vector<std::vector<double>> times;
    for (const TunedSite& site : report.sites) times.push_back(site.ms);
    times_by_threads.push_back(times);
  }
  ASSERT_EQ(programs_by_threads[0].size(), 10u);  // every round measured
  EXPECT_EQ(programs_by_threads[1], programs_by_threads[0]);
  EXPECT_EQ(times_by_threads[1], times_by_threads[0]);
}

// Measurement keeps fusion honest: where an epilogue fusion's kernel runs slower than its ops
// as kernels of their own (here the stand-in gives every fused kernel 5 ms, every other 1 ms),
// the unfused tactic is taken, and --explain-fusion's note says so with both times.
TEST(Autotune, AFusionSlowerThanItsOpsIsUndone) {
  const std::string cache = testing_support::fresh_temp_path("tactics_unfused", true).string();
  AutotuneHooks hooks = stand_in_hooks(cache);
  hooks.measure = [](const Program& program) {
    ProgramTimes times = stand_in_measure(program);
    for (size_t s = 0; s < program.steps.size(); ++s) {
      const std::string& kernel = program.kernels[program.steps[s].kernel].name;
      times.step_ms[s] = kernel.starts_with("epilogue_") ? 5.0f : 1.0f;
    }
    return times;
  };
  const std::unique_ptr<Graph> graph = parse_graph(R"(
graph @g(%a: f16[512,256], %b: f16[256,256]) -> (f16[512,256]) {
  %y = fusion.epilogue(%a, %b) {
    ^(%p: f16[512,256], %q: f16[256,256]):
    %m = matmul(%p, %q) : f16[512,256] loc("/MatMul")
    %r = relu(%m) : f16[512,256] loc("/Relu")
    yield %r
  } : (f16[512,256]) loc("/MatMul", "/Relu")
  return %y
})");
  AutotuneReport report;
  const Program program = lower_autotuned(
      *graph, codegen::CodegenOptions::for_target(target_for_arch("sm_90a")), hooks, report);
  ASSERT_EQ(report.sites.size(), 1u);
  const TunedSite& site = report.sites[0];
  EXPECT_EQ(site.tactics.back(), codegen::kUnfusedTactic);
  EXPECT_EQ(site.tactics.at(static_cast<size_t>(site.chosen)), codegen::kUnfusedTactic);
  EXPECT_EQ(site.ms.back(), 2.0);  // the matmul's kernel and the relu's
  EXPECT_EQ(program.steps.size(), 2u);
  EXPECT_EQ(unfused_notes(report),
            std::vector<std::string>{"fuse-kernels: /MatMul (1 node): unfused by measurement: "
                                     "its ops as kernels of their own took 2.0000 ms, the fused "
                                     "kernel 5.0000 ms at best"});
}

// A library call that could not run on the tuning GPU (its kernel stood in) is timed as infinite
// by the driver's measure hook: its tactic is never taken, however fast the stand-in ran.
TEST(Autotune, ALibraryCallThatStoodInIsNeverTaken) {
  const std::string cache = testing_support::fresh_temp_path("tactics_stood_in", true).string();
  AutotuneHooks hooks = stand_in_hooks(cache);
  hooks.measure = [](const Program& program) {
    ProgramTimes times = stand_in_measure(program);
    for (size_t s = 0; s < program.steps.size(); ++s) {
      times.step_ms[s] = program.steps[s].library ? std::numeric_limits<float>::infinity() : 3.0f;
    }
    return times;
  };
  const std::unique_ptr<Graph> graph = parse_graph(R"(
graph @g(%a: f16[512,256], %b: f16[256,256]) -> (f16[512,256]) {
  %m = matmul(%a, %b) : f16[512,256] loc("/MatMul")
  return %m
})");
  AutotuneReport report;
  const Program program = lower_autotuned(
      *graph, codegen::CodegenOptions::for_target(target_for_arch("sm_90a")), hooks, report);
  ASSERT_EQ(report.sites.size(), 1u);
  const TunedSite& site = report.sites[0];
  ASSERT_EQ(site.tactics.back(), "cuBLASLt");
  EXPECT_TRUE(std::isinf(site.ms.back()));
  EXPECT_EQ(site.chosen, 0);  // every other tactic ties at 3 ms: the heuristic's stays
  ASSERT_EQ(program.steps.size(), 1u);
  EXPECT_FALSE(program.steps[0].library);
}

TEST(Autotune, RelativeErrorIsAnL2RatioAndExactForIntegers) {
  const Tensor want = Tensor::from_vector<float>(DType::kF32, {2}, {3.0f, 4.0f});
  const Tensor got = Tensor::from_vector<float>(DType::kF32, {2}, {3.0f, 4.05f});
  EXPECT_NEAR(relative_error(got, want), 0.01, 1e-6);
  EXPECT_EQ(relative_error(want, want), 0);
  const Tensor nan = Tensor::from_vector<float>(DType::kF32, {2}, {3.0f, NAN});
  EXPECT_TRUE(std::isinf(relative_error(nan, want)));
  const Tensor ints = Tensor::from_vector<int64_t>(DType::kI64, {2}, {1, 2});
  const Tensor other = Tensor::from_vector<int64_t>(DType::kI64, {2}, {1, 3});
  EXPECT_EQ(relative_error(ints, ints), 0);
  EXPECT_TRUE(std::isinf(relative_error(other, ints)));
  EXPECT_TRUE(std::isinf(relative_error(got, ints)));  // another dtype
}

TEST(Autotune, TuningInputsAreSeededFloatsAndZeroIntegers) {
  Program program;
  program.buffers.push_back({ProgramBuffer::Kind::kInput, "x", {DType::kF32, {64}}, 0});
  program.buffers.push_back({ProgramBuffer::Kind::kInput, "ids", {DType::kI64, {4}}, 1});
  program.inputs = {0, 1};
  const std::vector<Tensor> inputs = tuning_inputs(program);
  ASSERT_EQ(inputs.size(), 2u);
  EXPECT_TRUE(inputs[0].same_contents(tuning_inputs(program)[0]));
  float largest = 0;
  for (float v : inputs[0].to_floats()) largest = std::max(largest, std::abs(v));
  EXPECT_GT(largest, 0.5f);
  EXPECT_LE(largest, 1.0f);
  for (int64_t v : inputs[1].to_ints()) EXPECT_EQ(v, 0);
}

}  // namespace
}  // namespace kiln
