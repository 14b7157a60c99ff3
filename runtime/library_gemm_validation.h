// The checks validate_program (program_validation.h) makes of a step's library call
// (ProgramLibraryGemm): cuBLASLt reads and writes through raw pointers, so every element it may
// touch must lie inside the buffers the step passes, as the kernel's own accesses do.
//
//   operands   positions among the step's arguments (C and bias: -1 or one); D among the
//              parameters the kernel writes, A, B, C and bias not; A and B f16 or both bf16, D
//              and C of A's type, bias f16, bf16 or f32
//   sizes      m, n, k, batch >= 1 (batch within 32 bits); leading dimensions at least the
//              stored matrices' rows; batch strides >= 0, D's matrices apart; the last element
//              of each operand (D's extent for C, m for the bias) inside its buffer
//   workspace  0 to kMaxLibraryWorkspaceBytes, at an aligned arena offset, inside the arena,
//              sharing no byte with an intermediate the step passes (others may: the step
//              graph orders the steps that touch the same arena bytes)
#pragma once

#include <cstdint>
#include <vector>

#include "runtime/program.h"

namespace kiln {

inline constexpr int64_t kMaxLibraryWorkspaceBytes = int64_t{1} << 30;

// Throws InputError naming the step and what is wrong. `written`: the parameter positions the
// step's kernel writes (kernel_header.h).
void check_library_gemm(const Program& program, size_t step, const std::vector<int>& written);

}  // namespace kiln
