// Checks that a Program is safe to execute: every index, offset, size and launch dimension
// within its bounds. read_program runs it on every .kiln file before anything uses the program.
//
//   archs      at least one; each "sm_<major><minor>[a|f]", none twice
//   kernels    a C identifier as name; a CUBIN (for one of the archs, each arch once) or PTX;
//              PTX without NUL bytes
//   buffers    dims >= 0, element and byte counts within int64; weights inside the weights blob
//              and intermediates inside the arena, at kWeightAlignment / kArenaAlignment
//              offsets; two intermediates live at the same step share no byte (enough for
//              steps run at once: the session orders steps whose intermediates share bytes,
//              step_dependencies.h)
//   signature  every input (output) buffer listed once in inputs (outputs), its offset its
//              position there, names distinct
//   steps      a valid kernel; grid and block within CUDA's limits, shared memory within
//              kMaxSharedBytes; arguments valid buffer indices; the parameters the kernel's
//              header says it writes among the step's arguments; a library call's operands
//              inside those arguments' buffers (library_gemm_validation.h)
//   outputs    each passed to at least one step (program.h gives arguments no direction, so
//              "written" can only mean "passed")
#pragma once

#include <cstdint>

#include "runtime/program.h"

namespace kiln {

// The largest dynamic shared memory a block may opt into on the GPUs kiln targets (sm_90's
// 227 KiB); the session also checks the limit of the GPU it runs on.
inline constexpr uint32_t kMaxSharedBytes = 227 * 1024;

// Throws InputError naming the first problem found ("step 3 (kernel 'add'): block 2048x1x1 has
// more than 1024 threads").
void validate_program(const Program& program);

}  // namespace kiln
