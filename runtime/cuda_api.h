// A thin C++ layer over the CUDA runtime API (linked statically: the driver is loaded only when
// a function here first runs, so kiln starts on machines without one): errors as exceptions and
// owning handles that release on destruction. Used by the session; public headers do not include
// it, so users of session.h need no CUDA headers.
#pragma once

#include <cuda_runtime_api.h>

#include <memory>
#include <new>
#include <string>

namespace kiln {

// Throws InternalError "CUDA error in WHAT: <CUDA's message>" unless `status` is cudaSuccess.
void cuda_check(cudaError_t status, const std::string& what);

// The compute capability of the current device.
struct ComputeCapability {
  int major = 0;
  int minor = 0;
};
ComputeCapability current_compute_capability();
int current_device_attribute(cudaDeviceAttr attribute);

struct CudaFree {
  void operator()(void* pointer) const { cudaFree(pointer); }
};
struct CudaStreamDestroy {
  void operator()(cudaStream_t stream) const { cudaStreamDestroy(stream); }
};
struct CudaEventDestroy {
  void operator()(cudaEvent_t event) const { cudaEventDestroy(event); }
};
struct CudaGraphDestroy {
  void operator()(cudaGraph_t graph) const { cudaGraphDestroy(graph); }
};
struct CudaGraphExecDestroy {
  void operator()(cudaGraphExec_t graph) const { cudaGraphExecDestroy(graph); }
};
struct CudaLibraryUnload {
  void operator()(cudaLibrary_t library) const { cudaLibraryUnload(library); }
};

using DeviceMemory = std::unique_ptr<void, CudaFree>;
using CudaStream = std::unique_ptr<CUstream_st, CudaStreamDestroy>;
using CudaEvent = std::unique_ptr<CUevent_st, CudaEventDestroy>;
using CudaGraph = std::unique_ptr<CUgraph_st, CudaGraphDestroy>;
using CudaGraphExec = std::unique_ptr<CUgraphExec_st, CudaGraphExecDestroy>;
using CudaLibrary = std::unique_ptr<CUlib_st, CudaLibraryUnload>;

// `bytes` of device memory (null for 0 bytes); `what` names it in the error.
DeviceMemory allocate_device_memory(size_t bytes, const std::string& what);
CudaStream create_stream();
// A stream that does not synchronize with the legacy default stream (for capture only).
CudaStream create_non_blocking_stream();
// An event for ordering only (no timing); create_event's events also time.
CudaEvent create_ordering_event();
CudaEvent create_event();

struct KernelTensorMap;  // runtime/kernel_header.h

// A CUtensorMap's 128 bytes (cuda.h's type: kiln's runtime headers do not include cuda.h), as a
// kernel takes it by value.
struct alignas(128) TensorMapBytes {
  unsigned long long opaque[16];
};

// `map` encoded for the buffer at `pointer` by the driver's cuTensorMapEncodeTiled (fetched once
// through cudaGetDriverEntryPointByVersion: kiln links no libcuda). Throws InternalError naming
// `what` (the kernel and parameter) where the driver has no such function or refuses the map.
TensorMapBytes encode_tensor_map(const KernelTensorMap& map, void* pointer,
                                 const std::string& what);

// Makes `device` the calling thread's current CUDA device while it lives, then restores the device
// that was current before (so a session's calls leave the caller's current device as it was).
class CurrentDevice {
 public:
  explicit CurrentDevice(int device);
  // For destructors: never throws (a failure shows in the CUDA calls that follow).
  CurrentDevice(int device, std::nothrow_t);
  ~CurrentDevice();
  CurrentDevice(const CurrentDevice&) = delete;
  CurrentDevice& operator=(const CurrentDevice&) = delete;

 private:
  int previous_ = 0;
  int device_ = 0;
};

}  // namespace kiln
