// The skip of the GPU test programs (see the header).
#include "tests/runtime/cuda_device_skip.h"

#include <cstdio>

#include "ir/error.h"
#include "runtime/session.h"

namespace kiln::test {

bool skip_without_cuda_device() {
  try {
    require_cuda_device();
    return false;
  } catch (const UnsupportedError& error) {
    std::printf("no CUDA device: skipped\n");
    std::fprintf(stderr, "%s\n", error.what());
    return true;
  }
}

}  // namespace kiln::test
