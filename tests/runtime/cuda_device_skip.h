// The skip of the GPU test programs (gpu_gtest_main.cc, session_soak): without a usable CUDA
// device they print "no CUDA device: skipped" and exit with kSkippedExitCode, which ctest counts
// as skipped (SKIP_RETURN_CODE 77), never as passed.
#pragma once

namespace kiln::test {

inline constexpr int kSkippedExitCode = 77;

// True, after printing "no CUDA device: skipped" (and on stderr why), when no CUDA device can be
// used (require_cuda_device).
bool skip_without_cuda_device();

}  // namespace kiln::test
