// The Target of this machine's GPU (--arch native), asked of the CUDA driver, which is loaded
// with dlopen (libcuda.so.1) so that kiln starts without it.
#pragma once

#include "target/target.h"

namespace kiln {

// Device 0's Target: its arch ("sm_90"; never an arch-specific "a" target), name, SM count,
// shared memory, registers, L2 and memory clock x bus width. Throws InputError "no CUDA device;
// pass --arch sm_80 or sm_90 (<why>)" when there is none or no driver.
Target native_target();

}  // namespace kiln
