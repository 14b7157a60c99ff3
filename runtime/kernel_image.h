// Which compiled code of a kernel a GPU runs, and the arch names ("sm_90") that choice reads.
//
//   1. The CUBIN built for the GPU's own compute capability ("sm_90" or "sm_90a" on a 9.0 GPU).
//   2. Else the CUBIN of the highest lower minor version of the same major, without a suffix
//      ("sm_80" runs on an 8.6 GPU: CUBINs are compatible upwards within a major version).
//   3. Else the PTX, which the driver compiles for the GPU when it is loaded, if the GPU can run
//      it: its `.target` (ptx_target) is this GPU's arch or an older one (of the same major
//      for a family-specific "f" target, exactly this arch for an arch-specific "a" one).
//      PTX without a `.target` line is left to the driver.
//   4. Else an InputError: "kernel 'k': compiled for sm_90, this GPU is sm_80 (no PTX)", or
//      "(its PTX is for sm_90, newer than this GPU)".
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "runtime/program.h"

namespace kiln {

// "sm_<major><minor>[suffix]": the last digit is the minor version ("sm_100a" is 10.0, "a").
struct GpuArch {
  int major = 0;
  int minor = 0;
  std::string suffix;  // "", "a" (arch-specific) or "f" (family-specific)
};
std::optional<GpuArch> parse_gpu_arch(std::string_view name);
std::string gpu_arch_name(int major, int minor);

// The arch of a PTX module's `.target sm_90` directive; nullopt when there is none.
std::optional<GpuArch> ptx_target(std::string_view ptx);
// Whether a GPU of compute capability major.minor can JIT-compile PTX for `target`.
bool can_jit_ptx(const GpuArch& target, int major, int minor);

struct KernelImage {
  const void* code = nullptr;  // a CUBIN, or NUL-terminated PTX; owned by the ProgramKernel
  std::string description;     // "CUBIN sm_90" or "PTX"
  // The compute capability major the code was compiled for (its __CUDA_ARCH__ / 100); 0 for
  // PTX without a `.target` line.
  int arch_major = 0;
};

KernelImage choose_kernel_image(const ProgramKernel& kernel, int major, int minor);

}  // namespace kiln
