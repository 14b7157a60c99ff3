// The main of the GoogleTest GPU test programs (session_gpu_tests, session_api_gpu_tests):
// skipped (kSkippedExitCode) without a usable CUDA device, else every test.
#include <gtest/gtest.h>

#include "tests/runtime/cuda_device_skip.h"

int main(int argc, char** argv) {
  if (kiln::test::skip_without_cuda_device()) return kiln::test::kSkippedExitCode;
  testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
