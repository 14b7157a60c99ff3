// native_target: cuInit, cuDeviceGet, cuDeviceGetName, the attributes of device 0 and the
// driver's version.
#include "target/native_target.h"

#include <dlfcn.h>

#include "ir/error.h"

namespace kiln {
namespace {

// CUdevice_attribute values (cuda.h).
constexpr int kMaxRegistersPerBlock = 12;
constexpr int kMultiprocessorCount = 16;
constexpr int kMemoryClockRateKHz = 36;
constexpr int kGlobalMemoryBusWidthBits = 37;
constexpr int kL2CacheSize = 38;
constexpr int kMaxThreadsPerMultiprocessor = 39;
constexpr int kComputeCapabilityMajor = 75;
constexpr int kComputeCapabilityMinor = 76;
constexpr int kMaxSharedMemoryPerMultiprocessor = 81;
constexpr int kMaxRegistersPerMultiprocessor = 82;
constexpr int kMaxSharedMemoryPerBlockOptin = 97;

[[noreturn]] void no_device(const std::string& reason) {
  throw InputError("no CUDA device; pass --arch sm_80 or sm_90 (" + reason + ")");
}

}  // namespace

Target native_target() {
  void* driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!driver) no_device("the CUDA driver libcuda.so.1 is not installed");
  using Init = int (*)(unsigned);
  using DeviceGet = int (*)(int*, int);
  using DeviceGetName = int (*)(char*, int, int);
  using Attribute = int (*)(int*, int, int);
  const auto init = reinterpret_cast<Init>(dlsym(driver, "cuInit"));
  const auto device_get = reinterpret_cast<DeviceGet>(dlsym(driver, "cuDeviceGet"));
  const auto device_name = reinterpret_cast<DeviceGetName>(dlsym(driver, "cuDeviceGetName"));
  const auto attribute = reinterpret_cast<Attribute>(dlsym(driver, "cuDeviceGetAttribute"));
  if (!init || !device_get || !device_name || !attribute) {
    no_device("libcuda.so.1 lacks the driver API");
  }
  if (int result = init(0); result != 0) {
    no_device("cuInit failed with CUDA error " + std::to_string(result));
  }
  int device = 0;
  if (device_get(&device, 0) != 0) no_device("the driver reports no device");
  const auto read = [&](int which, const char* what) {
    int value = 0;
    if (attribute(&value, which, device) != 0) {
      no_device(std::string("the driver does not tell device 0's ") + what);
    }
    return value;
  };
  const int major = read(kComputeCapabilityMajor, "compute capability");
  const int minor = read(kComputeCapabilityMinor, "compute capability");
  // Compute capability 9.0 gets the arch-specific sm_90a: its kernels run only on that
  // architecture, which this GPU is, and may use Hopper's warpgroup MMA.
  const std::string suffix = major == 9 && minor == 0 ? "a" : "";
  Target target =
      target_for_arch("sm_" + std::to_string(major) + std::to_string(minor) + suffix);
  char name[256] = {};
  target.device = device_name(name, sizeof name - 1, device) == 0 ? name : "device 0";
  target.from_device = true;
  target.sm_count = read(kMultiprocessorCount, "SM count");
  target.shared_memory_per_sm = read(kMaxSharedMemoryPerMultiprocessor, "shared memory per SM");
  target.shared_memory_per_block = read(kMaxSharedMemoryPerBlockOptin, "shared memory per block");
  target.registers_per_sm = read(kMaxRegistersPerMultiprocessor, "registers per SM");
  target.registers_per_block = read(kMaxRegistersPerBlock, "registers per block");
  target.max_threads_per_sm = read(kMaxThreadsPerMultiprocessor, "threads per SM");
  target.l2_bytes = read(kL2CacheSize, "L2 size");
  // Double data rate: two transfers per memory clock.
  const double clock_khz = read(kMemoryClockRateKHz, "memory clock");
  const double bus_bytes = read(kGlobalMemoryBusWidthBits, "memory bus width") / 8.0;
  target.memory_bandwidth_gb_s = 2 * clock_khz * 1e3 * bus_bytes / 1e9;
  using DriverGetVersion = int (*)(int*);
  if (const auto driver_version =
          reinterpret_cast<DriverGetVersion>(dlsym(driver, "cuDriverGetVersion"))) {
    driver_version(&target.driver_version);
  }
  return target;
}

}  // namespace kiln
