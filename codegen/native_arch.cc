// native_arch: cuInit, cuDeviceGet and the compute capability attributes of device 0.
#include "codegen/native_arch.h"

#include <dlfcn.h>

#include "ir/error.h"

namespace kiln::codegen {
namespace {

constexpr int kComputeCapabilityMajor = 75;  // CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR
constexpr int kComputeCapabilityMinor = 76;  // CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR

[[noreturn]] void no_device(const std::string& reason) {
  throw InputError("no CUDA device; pass --arch sm_80 or sm_90 (" + reason + ")");
}

}  // namespace

std::string native_arch() {
  void* driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!driver) no_device("the CUDA driver libcuda.so.1 is not installed");
  using Init = int (*)(unsigned);
  using DeviceGet = int (*)(int*, int);
  using Attribute = int (*)(int*, int, int);
  const auto init = reinterpret_cast<Init>(dlsym(driver, "cuInit"));
  const auto device_get = reinterpret_cast<DeviceGet>(dlsym(driver, "cuDeviceGet"));
  const auto attribute = reinterpret_cast<Attribute>(dlsym(driver, "cuDeviceGetAttribute"));
  if (!init || !device_get || !attribute) no_device("libcuda.so.1 lacks the driver API");
  if (int result = init(0); result != 0) {
    no_device("cuInit failed with CUDA error " + std::to_string(result));
  }
  int device = 0;
  if (device_get(&device, 0) != 0) no_device("the driver reports no device");
  int major = 0, minor = 0;
  if (attribute(&major, kComputeCapabilityMajor, device) != 0 ||
      attribute(&minor, kComputeCapabilityMinor, device) != 0) {
    no_device("the driver does not tell device 0's compute capability");
  }
  return "sm_" + std::to_string(major) + std::to_string(minor);
}

}  // namespace kiln::codegen
