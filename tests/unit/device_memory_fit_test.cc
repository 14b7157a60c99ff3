// Tests of the check that a program fits the GPU's free memory before a session loads it
// (runtime/device_memory_fit.h): the bytes it counts and the message naming them.
#include "runtime/device_memory_fit.h"

#include <gtest/gtest.h>

#include "tests/runtime/bias_relu_program.h"

namespace kiln {
namespace {

TEST(DeviceMemoryFitTest, CountsWeightsArenaInputsAndOutputs) {
  Program program = test::bias_relu_program(test::placeholder_kernels());
  program.arena_bytes = 128 * 1024;
  uint64_t io = 0;
  for (const ProgramBuffer& buffer : program.buffers) {
    if (buffer.kind == ProgramBuffer::Kind::kInput || buffer.kind == ProgramBuffer::Kind::kOutput) {
      io += buffer.type.num_bytes();
    }
  }
  ASSERT_GT(io, 0u);
  const uint64_t needed = program.weights.size() + 128 * 1024 + io;
  EXPECT_EQ(device_bytes_needed(program), needed);
  EXPECT_EQ(device_memory_shortfall(program, needed), "");
  EXPECT_EQ(device_memory_shortfall(program, needed - 1).substr(0, 29),
            "the program needs 257.0 KiB o");
}

TEST(DeviceMemoryFitTest, ALargeProgramNamesTheBytes) {
  Program program = test::bias_relu_program(test::placeholder_kernels());
  program.weights.assign(3u << 20, 0);  // 3 MiB
  program.arena_bytes = int64_t{2} << 30;
  const std::string message = device_memory_shortfall(program, uint64_t{1} << 30);
  EXPECT_NE(message.find("(weights 3.0 MiB, arena 2.00 GiB, inputs and outputs "),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("; the GPU has 1.00 GiB free"), std::string::npos) << message;
}

TEST(DeviceMemoryFitTest, ASharedSessionCountsItsArenaNotTheWeights) {
  Program program = test::bias_relu_program(test::placeholder_kernels());
  program.weights.assign(3u << 20, 0);  // 3 MiB, already on the device
  program.arena_bytes = 1 << 20;
  EXPECT_EQ(shared_session_shortfall(program, 1u << 20), "");
  EXPECT_EQ(shared_session_shortfall(program, 1u << 19),
            "a shared session of the program needs 1.0 MiB of GPU memory for its arena (the "
            "weights are shared); the GPU has 512.0 KiB free");
}

}  // namespace
}  // namespace kiln
