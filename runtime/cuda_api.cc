// Error checking, device queries and handle creation over the CUDA runtime API (cuda_api.h).
#include "runtime/cuda_api.h"

#include <cuda.h>
#include <fmt/format.h>

#include <array>
#include <cstring>

#include "ir/error.h"
#include "runtime/kernel_header.h"

namespace kiln {

void cuda_check(cudaError_t status, const std::string& what) {
  if (status == cudaSuccess) return;
  throw InternalError("CUDA error in " + what + ": " + cudaGetErrorString(status));
}

namespace {

using EncodeTiled = CUresult (*)(CUtensorMap*, CUtensorMapDataType, cuuint32_t, void*,
                                 const cuuint64_t*, const cuuint64_t*, const cuuint32_t*,
                                 const cuuint32_t*, CUtensorMapInterleave, CUtensorMapSwizzle,
                                 CUtensorMapL2promotion, CUtensorMapFloatOOBfill);

// cuTensorMapEncodeTiled from the driver the static runtime loaded (a function-local static: a
// failed lookup throws and is tried again by the next call).
EncodeTiled encode_tiled(const std::string& what) {
  static const EncodeTiled function = [&] {
    void* entry = nullptr;
    cudaDriverEntryPointQueryResult found = cudaDriverEntryPointSymbolNotFound;
    cuda_check(cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &entry, 12000,
                                                cudaEnableDefault, &found),
               what + ": looking up cuTensorMapEncodeTiled");
    if (found != cudaDriverEntryPointSuccess || entry == nullptr) {
      throw InternalError(what + ": the CUDA driver has no cuTensorMapEncodeTiled");
    }
    return reinterpret_cast<EncodeTiled>(entry);
  }();
  return function;
}

CUtensorMapDataType tensor_map_type(DType dtype, const std::string& what) {
  switch (dtype) {
    case DType::kF16:
      return CU_TENSOR_MAP_DATA_TYPE_FLOAT16;
    case DType::kBF16:
      return CU_TENSOR_MAP_DATA_TYPE_BFLOAT16;
    case DType::kF32:
      return CU_TENSOR_MAP_DATA_TYPE_FLOAT32;
    case DType::kF64:
      return CU_TENSOR_MAP_DATA_TYPE_FLOAT64;
    case DType::kI32:
      return CU_TENSOR_MAP_DATA_TYPE_INT32;
    case DType::kI64:
      return CU_TENSOR_MAP_DATA_TYPE_INT64;
    case DType::kU8:
    case DType::kI8:
    case DType::kBool:
      return CU_TENSOR_MAP_DATA_TYPE_UINT8;
  }
  throw InternalError(what + ": a tensor map of an unknown element type");
}

CUtensorMapSwizzle tensor_map_swizzle(int bytes) {
  switch (bytes) {
    case 32:
      return CU_TENSOR_MAP_SWIZZLE_32B;
    case 64:
      return CU_TENSOR_MAP_SWIZZLE_64B;
    case 128:
      return CU_TENSOR_MAP_SWIZZLE_128B;
    default:
      return CU_TENSOR_MAP_SWIZZLE_NONE;
  }
}

}  // namespace

static_assert(sizeof(TensorMapBytes) == sizeof(CUtensorMap) &&
              alignof(TensorMapBytes) == alignof(CUtensorMap));

TensorMapBytes encode_tensor_map(const KernelTensorMap& map, void* pointer,
                                 const std::string& what) {
  const size_t rank = map.dims.size();
  if (rank < 2 || rank > 5 || map.strides.size() + 1 != rank || map.box.size() != rank) {
    throw InternalError(what + ": a tensor map of inconsistent rank");
  }
  std::array<cuuint64_t, 5> dims{}, strides{};
  std::array<cuuint32_t, 5> box{}, element_strides{};
  for (size_t d = 0; d < rank; ++d) {
    dims[d] = static_cast<cuuint64_t>(map.dims[d]);
    box[d] = static_cast<cuuint32_t>(map.box[d]);
    element_strides[d] = 1;
    if (d > 0) strides[d - 1] = static_cast<cuuint64_t>(map.strides[d - 1]);
  }
  CUtensorMap encoded;
  // Elements outside the tensor read as zeros (FLOAT_OOB_FILL_NONE), as cp.async's zero-fill.
  const CUresult status =
      encode_tiled(what)(&encoded, tensor_map_type(map.dtype, what), static_cast<cuuint32_t>(rank),
                         pointer, dims.data(), strides.data(), box.data(), element_strides.data(),
                         CU_TENSOR_MAP_INTERLEAVE_NONE, tensor_map_swizzle(map.swizzle),
                         CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (status != CUDA_SUCCESS) {
    throw InternalError(fmt::format("{}: cuTensorMapEncodeTiled failed (CUresult {}) for {} at {}",
                                    what, static_cast<int>(status), format_tensor_maps({map}),
                                    fmt::ptr(pointer)));
  }
  TensorMapBytes bytes;
  std::memcpy(&bytes, &encoded, sizeof(bytes));
  return bytes;
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
