// The architecture of this machine's GPU (--arch native), asked of the CUDA driver, which is
// loaded with dlopen (libcuda.so.1) so that kiln runs without it.
#pragma once

#include <string>

namespace kiln::codegen {

// "sm_90" for device 0; throws InputError "no CUDA device; pass --arch sm_80 or sm_90" (with
// the driver's reason) when there is none.
std::string native_arch();

}  // namespace kiln::codegen
