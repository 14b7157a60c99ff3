// require_cuda_device (runtime/session.h) names what is missing: on a machine without the CUDA
// driver (CI, this development machine), that the driver is absent, not a version mismatch.
#include <dlfcn.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "ir/error.h"
#include "runtime/session.h"

namespace kiln {
namespace {

bool driver_installed() {
  void* driver = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
  if (driver) dlclose(driver);
  return driver != nullptr;
}

TEST(CudaDeviceTest, SaysTheDriverIsMissingWhenItIs) {
  if (driver_installed()) GTEST_SKIP() << "a CUDA driver is installed here";
  EXPECT_THAT([] { require_cuda_device(); },
              ::testing::ThrowsMessage<UnsupportedError>(
                  ::testing::StrEq("no CUDA device: no CUDA driver (libcuda.so.1 not found)")));
}

}  // namespace
}  // namespace kiln
