// GPU tests of the session (ctest label gpu) on the hand-written programs of bias_relu_program.h,
// with the kernels nvcc built at build time: numbers against the CPU, CUDA graph replay, other
// device pointers, PTX only, a CUBIN for another GPU, argument counts, a program larger than the
// GPU, input checks, timing and the per-step profile; branches that run at once in the graph,
// with the planner's arena and with a plan made for the steps in order.
// Without a CUDA device the binary prints "no CUDA device: skipped" and exits 77, which ctest
// reports as skipped.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <regex>

#include "ir/error.h"
#include "runtime/session.h"
#include "tests/runtime/bias_relu_program.h"

namespace kiln::test {
namespace {

Program compiled_program() { return bias_relu_program(nvcc_kernels(KILN_TEST_KERNELS_DIR)); }

// The output matches the CPU computation to float rounding (the kernels compute the same
// expression per element; only a fused multiply-add may round differently).
void expect_matches_cpu(const Tensor& output, const Tensor& input) {
  const Tensor expected = bias_relu_expected(input);
  ASSERT_EQ(output.type(), expected.type());
  for (int64_t i = 0; i < output.num_elements(); ++i) {
    ASSERT_NEAR(output.get_float(i), expected.get_float(i), 1e-6) << "element " << i;
  }
}

TEST(SessionGpuTest, RunsTheProgramAndMatchesTheCpu) {
  Session session = Session::load(compiled_program());
  const Tensor x = bias_relu_input(1);
  const std::vector<Tensor> outputs = session.run({x});
  ASSERT_EQ(outputs.size(), 1u);
  expect_matches_cpu(outputs[0], x);
}

TEST(SessionGpuTest, GraphReplaysGiveTheSameResultsAndReadNewInputs) {
  Session session = Session::load(compiled_program());
  const Tensor x = bias_relu_input(1);
  const Tensor first = session.run({x})[0];   // steps one by one, then captured
  const Tensor second = session.run({x})[0];  // the graph
  const Tensor third = session.run({x})[0];   // the graph again
  EXPECT_TRUE(first.same_contents(second));
  EXPECT_TRUE(first.same_contents(third));
  const Tensor other_x = bias_relu_input(2);
  expect_matches_cpu(session.run({other_x})[0], other_x);
}

TEST(SessionGpuTest, RunDeviceWithOtherPointersCapturesAgain) {
  Session session = Session::load(compiled_program());
  const Tensor x = bias_relu_input(3);
  const size_t bytes = x.num_bytes();
  std::vector<void*> device(4, nullptr);  // two (input, output) pairs
  for (void*& pointer : device) ASSERT_EQ(cudaMalloc(&pointer, bytes), cudaSuccess);
  for (int pair = 0; pair < 2; ++pair) {
    ASSERT_EQ(cudaMemcpy(device[2 * pair], x.bytes(), bytes, cudaMemcpyHostToDevice), cudaSuccess);
  }
  for (int round = 0; round < 2; ++round) {
    for (int pair = 0; pair < 2; ++pair) {
      ASSERT_EQ(cudaMemset(device[2 * pair + 1], 0, bytes), cudaSuccess);
      session.run_device({device[2 * pair]}, {device[2 * pair + 1]});
      Tensor output(x.type());
      ASSERT_EQ(cudaMemcpy(output.bytes(), device[2 * pair + 1], bytes, cudaMemcpyDeviceToHost),
                cudaSuccess);
      expect_matches_cpu(output, x);
    }
  }
  for (void* pointer : device) cudaFree(pointer);
}

// Each of many replays of the branches' graph, where steps 2 and 3 run at once, matches the CPU.
void expect_branches_match_cpu_on_every_replay(Program program) {
  Session session = Session::load(std::move(program));
  for (int seed = 0; seed < 50; ++seed) {
    const Tensor x = bias_relu_input(seed);
    const Tensor output = session.run({x})[0];
    const Tensor expected = branches_expected(x);
    for (int64_t i = 0; i < output.num_elements(); ++i) {
      ASSERT_NEAR(output.get_float(i), expected.get_float(i), 1e-6)
          << "run " << seed << ", element " << i;
    }
  }
}

TEST(SessionGpuTest, BranchesRunAtOnceAndMatchTheCpu) {
  expect_branches_match_cpu_on_every_replay(branches_program(nvcc_kernels(KILN_TEST_KERNELS_DIR)));
}

// `rectified` (steps 1-2) and `doubled_sum` (steps 3-4) in the same bytes, as a plan made for the
// steps in order puts them: the graph then orders step 3 after step 2 (ArenaSharing::kOrdersSteps).
TEST(SessionGpuTest, BranchesSharingArenaBytesAreOrdered) {
  Program program = branches_program(nvcc_kernels(KILN_TEST_KERNELS_DIR));
  program.buffers[6].offset = program.buffers[3].offset;
  expect_branches_match_cpu_on_every_replay(std::move(program));
}

TEST(SessionGpuTest, PtxOnlyProgramIsCompiledByTheDriver) {
  Program program = compiled_program();
  for (ProgramKernel& kernel : program.kernels) kernel.binaries.clear();
  Session session = Session::load(std::move(program));
  const Tensor x = bias_relu_input(4);
  expect_matches_cpu(session.run({x})[0], x);
}

TEST(SessionGpuTest, CubinForAnotherGpuWithoutPtxIsRejected) {
  int device = 0;
  int major = 0;
  ASSERT_EQ(cudaGetDevice(&device), cudaSuccess);
  ASSERT_EQ(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device), cudaSuccess);
  const std::string other_arch = major == 9 ? "sm_80" : "sm_90";
  Program program = compiled_program();
  program.archs = {other_arch};
  for (ProgramKernel& kernel : program.kernels) {
    std::erase_if(kernel.binaries,
                  [&](const KernelBinary& binary) { return binary.arch != other_arch; });
    kernel.ptx.clear();
  }
  try {
    Session::load(std::move(program));
    FAIL() << "expected an InputError";
  } catch (const InputError& error) {
    EXPECT_NE(std::string(error.what()).find("compiled for " + other_arch + ", this GPU is sm_"),
              std::string::npos)
        << error.what();
  }
}

TEST(SessionGpuTest, StepWithTheWrongArgumentCountIsRejected) {
  Program program = compiled_program();
  program.steps[1].args.push_back(0);
  try {
    Session::load(std::move(program));
    FAIL() << "expected an InputError";
  } catch (const InputError& error) {
    EXPECT_EQ(std::string(error.what()),
              "step 1 (kernel 'relu') passes 3 arguments; the kernel takes 2");
  }
}

// The load refuses it before allocating anything, as an InputError naming the bytes needed and
// free (without the check, cudaMalloc of the arena failed: an InternalError "out of memory"); a
// program that fits loads and runs after it.
TEST(SessionGpuTest, ProgramLargerThanTheGpuFailsAtLoadNamingTheBytes) {
  try {
    Session::load(too_large_program(nvcc_kernels(KILN_TEST_KERNELS_DIR)));
    FAIL() << "expected an InputError";
  } catch (const InputError& error) {
    const std::regex expected(
        R"(the program needs 1024\.00 GiB of GPU memory \(weights 1\.0 KiB, arena 1024\.00 GiB, )"
        R"(inputs and outputs 128\.0 KiB\); )"
        R"(the GPU has [0-9.]+ [KMG]iB free \(.+ \(sm_[0-9]+\)\))");
    EXPECT_TRUE(std::regex_match(error.what(), expected)) << error.what();
  }
  Session session = Session::load(compiled_program());
  const Tensor x = bias_relu_input(6);
  expect_matches_cpu(session.run({x})[0], x);
}

TEST(SessionGpuTest, WrongInputTypeNamesTheInput) {
  Session session = Session::load(compiled_program());
  try {
    session.run({Tensor(DType::kF32, {2, 2})});
    FAIL() << "expected an InputError";
  } catch (const InputError& error) {
    EXPECT_EQ(std::string(error.what()), "input 'x': the program takes f32[64,256], got f32[2,2]");
  }
  EXPECT_THROW(session.run({}), InputError);
  EXPECT_THROW(session.run_device({nullptr}, {nullptr}), InputError);
  // Checked before the pointers are used: kernels read 16 bytes at a time.
  void* const misaligned = reinterpret_cast<void*>(uintptr_t{0x10002});
  void* const aligned = reinterpret_cast<void*>(uintptr_t{0x20000});
  try {
    session.run_device({misaligned}, {aligned});
    FAIL() << "expected an InputError";
  } catch (const InputError& error) {
    EXPECT_EQ(std::string(error.what()), "input 'x': the device pointer is not 16-byte aligned");
  }
  // An output overlapping an input (x is 64 KiB): refused before anything runs.
  void* const inside_x = reinterpret_cast<void*>(uintptr_t{0x20000 + 0x8000});
  try {
    session.run_device({aligned}, {inside_x});
    FAIL() << "expected an InputError";
  } catch (const InputError& error) {
    EXPECT_NE(std::string(error.what()).find("overlaps input 'x'"), std::string::npos)
        << error.what();
  }
}

TEST(SessionGpuTest, TimesGraphReplays) {
  Session session = Session::load(compiled_program());
  const std::vector<float> milliseconds = session.time(20, 5);
  ASSERT_EQ(milliseconds.size(), 20u);
  for (const float ms : milliseconds) {
    EXPECT_GT(ms, 0.0f);
    EXPECT_LT(ms, 100.0f);
  }
  // Timing before any run replays zeros; the next run still computes its own inputs.
  const Tensor x = bias_relu_input(5);
  expect_matches_cpu(session.run({x})[0], x);
}

TEST(SessionGpuTest, ProfilesEachStepAndLeavesRunsCorrect) {
  Session session = Session::load(compiled_program());
  const Tensor x = bias_relu_input(2);
  expect_matches_cpu(session.run({x})[0], x);
  const std::vector<float> step_ms = session.profile_steps(10, 2);
  ASSERT_EQ(step_ms.size(), session.program().steps.size());
  for (const float ms : step_ms) {
    EXPECT_GT(ms, 0.0f);
    EXPECT_LT(ms, 100.0f);
  }
  // Profiling replays its own graph; the session's graph still reads new inputs.
  const Tensor y = bias_relu_input(3);
  expect_matches_cpu(session.run({y})[0], y);
  EXPECT_THROW(session.profile_steps(0, 0), InputError);
}

}  // namespace
}  // namespace kiln::test
