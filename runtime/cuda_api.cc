// Error checking, device queries and handle creation over the CUDA runtime API (cuda_api.h).
#include "runtime/cuda_api.h"

#include "ir/error.h"

namespace kiln {

void cuda_check(cudaError_t status, const std::string& what) {
  if (status == cudaSuccess) return;
  throw InternalError("CUDA error in " + what + ": " + cudaGetErrorString(status));
}

int current_device_attribute(cudaDeviceAttr attribute) {
  int device = 0;
  cuda_check(cudaGetDevice(&device), "cudaGetDevice");
  int value = 0;
  cuda_check(cudaDeviceGetAttribute(&value, attribute, device), "cudaDeviceGetAttribute");
  return value;
}

ComputeCapability current_compute_capability() {
  return {current_device_attribute(cudaDevAttrComputeCapabilityMajor),
          current_device_attribute(cudaDevAttrComputeCapabilityMinor)};
}

DeviceMemory allocate_device_memory(size_t bytes, const std::string& what) {
  if (bytes == 0) return nullptr;
  void* pointer = nullptr;
  cuda_check(cudaMalloc(&pointer, bytes),
             "cudaMalloc of " + std::to_string(bytes) + " bytes for " + what);
  return DeviceMemory(pointer);
}

// A blocking stream: its work is ordered with the legacy default stream's, so a caller's
// cudaMemcpy/cudaMemset into buffers the session reads (which may still be in flight when they
// return) completes before the session's kernels run. A non-blocking stream raced with them.
CudaStream create_stream() {
  cudaStream_t stream = nullptr;
  cuda_check(cudaStreamCreateWithFlags(&stream, cudaStreamDefault), "cudaStreamCreate");
  return CudaStream(stream);
}

CudaStream create_non_blocking_stream() {
  cudaStream_t stream = nullptr;
  cuda_check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate");
  return CudaStream(stream);
}

CudaEvent create_ordering_event() {
  cudaEvent_t event = nullptr;
  cuda_check(cudaEventCreateWithFlags(&event, cudaEventDisableTiming), "cudaEventCreate");
  return CudaEvent(event);
}

CudaEvent create_event() {
  cudaEvent_t event = nullptr;
  cuda_check(cudaEventCreate(&event), "cudaEventCreate");
  return CudaEvent(event);
}

CurrentDevice::CurrentDevice(int device) : device_(device) {
  cuda_check(cudaGetDevice(&previous_), "cudaGetDevice");
  if (previous_ != device_) cuda_check(cudaSetDevice(device_), "cudaSetDevice");
}

CurrentDevice::CurrentDevice(int device, std::nothrow_t) : device_(device) {
  if (cudaGetDevice(&previous_) != cudaSuccess) previous_ = device_;
  if (previous_ != device_) cudaSetDevice(device_);
}

// Not checked: a destructor must not throw, and setting back a device that was current cannot
// fail short of the driver failing.
CurrentDevice::~CurrentDevice() {
  if (previous_ != device_) cudaSetDevice(previous_);
}

}  // namespace kiln
