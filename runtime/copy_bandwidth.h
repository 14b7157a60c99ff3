// The copy bandwidth of a GPU as the CUDA runtime's device-to-device copy achieves it: the
// yardstick for memory-bound kernels (`kiln bench --profile` prints it beside each launch's
// GB/s), measured rather than taken from the card's datasheet.
#pragma once

#include <cstddef>

namespace kiln {

struct CopyBandwidth {
  double gb_per_second = 0;  // bytes read plus bytes written, per second, / 1e9
  size_t bytes = 0;          // of each copy
  int copies = 0;            // timed; the median taken
};

// Times `copies` cudaMemcpyAsync copies of `bytes` between two buffers on `device` (after two
// untimed ones), each between CUDA events. Throws InternalError naming the CUDA call that failed
// (no device, not enough memory for the two buffers).
CopyBandwidth measure_copy_bandwidth(int device, size_t bytes = size_t{256} << 20, int copies = 20);

}  // namespace kiln
