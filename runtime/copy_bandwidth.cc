// The copy bandwidth of a GPU (see the header).
#include "runtime/copy_bandwidth.h"

#include <vector>

#include "ir/error.h"
#include "runtime/cuda_api.h"
#include "runtime/timing_stats.h"

namespace kiln {

CopyBandwidth measure_copy_bandwidth(int device, size_t bytes, int copies) {
  const CurrentDevice current(device);
  const DeviceMemory from = allocate_device_memory(bytes, "the copy bandwidth's source");
  const DeviceMemory to = allocate_device_memory(bytes, "the copy bandwidth's destination");
  const CudaStream stream = create_stream();
  const auto copy = [&] {
    cuda_check(cudaMemcpyAsync(to.get(), from.get(), bytes, cudaMemcpyDeviceToDevice, stream.get()),
               "cudaMemcpyAsync");
  };
  copy();
  copy();
  std::vector<CudaEvent> events;
  for (int i = 0; i <= copies; ++i) events.push_back(create_event());
  cuda_check(cudaEventRecord(events[0].get(), stream.get()), "cudaEventRecord");
  for (int i = 0; i < copies; ++i) {
    copy();
    cuda_check(cudaEventRecord(events[i + 1].get(), stream.get()), "cudaEventRecord");
  }
  cuda_check(cudaStreamSynchronize(stream.get()), "cudaStreamSynchronize");
  std::vector<float> milliseconds(copies);
  for (int i = 0; i < copies; ++i) {
    cuda_check(cudaEventElapsedTime(&milliseconds[i], events[i].get(), events[i + 1].get()),
               "cudaEventElapsedTime");
  }
  const double ms = median(milliseconds);
  if (ms <= 0) throw InternalError("copy bandwidth: the copies timed 0 ms");
  return {.gb_per_second = 2.0 * static_cast<double>(bytes) / (ms * 1e6),
          .bytes = bytes,
          .copies = copies};
}

}  // namespace kiln
