// The device functions kernels may call (all named kiln_*): 16-bit float conversions, the math
// the ops' CUDA expressions use (op_expressions.cc), and warp/block reductions. A kernel's
// source starts with exactly the ones it uses, so it needs no header and compiles on its own.
#pragma once

#include <string>
#include <string_view>

namespace kiln::codegen {

// The definitions of the kiln_* functions `code` calls, and of those they call, in an order
// that compiles (each after what it uses). Throws InternalError on an unknown kiln_* name.
std::string device_functions_for(std::string_view code);

}  // namespace kiln::codegen
