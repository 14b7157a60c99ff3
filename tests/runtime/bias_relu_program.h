// A hand-written program for the runtime's tests, as codegen would emit it:
//   y = twice(relu(x + bias)) + x     x: f32[64,256] input, bias: f32[256] weight, y: output
// in four steps (add_bias, relu, twice, add; bias_relu_kernels.cu) through three intermediates
// of 64 KiB: `sum` (steps 0-1), `rectified` (1-2) and `doubled` (2-3), so `doubled` can reuse
// the bytes of `sum`: arena 128 KiB, naive 192 KiB, lower bound 128 KiB.
//
// And a program of two branches that may run at once, from the same kernels:
//   y = twice(x + bias) + twice(relu(x))
//   steps 0 add_bias -> sum, 1 relu -> rectified, 2 twice(rectified) -> doubled,
//         3 twice(sum) -> doubled_sum, 4 add(doubled_sum, doubled) -> y
// Step graph: 0 -> 3, 1 -> 2, {2, 3} -> 4 (4 edges, 3 levels, widest level 2). In program
// order `rectified` (steps 1-2) dies before `doubled_sum` (3-4) is born, but steps 2 and 3 run
// at once: no two intermediates may share bytes (arena 256 KiB; lower bound 192 KiB).
#pragma once

#include <string>
#include <vector>

#include "ir/tensor.h"
#include "runtime/program.h"

namespace kiln::test {

// Code for all four kernels: one module compiled per arch, shared by every ProgramKernel.
struct CompiledKernels {
  std::string source;
  std::vector<KernelBinary> binaries;
  std::string ptx;
};

// Placeholder code: bytes enough for the .kiln format and its checks, not for a GPU.
CompiledKernels placeholder_kernels();
// The code nvcc built from bias_relu_kernels.cu into `dir` at build time (tests/runtime/
// CMakeLists.txt): bias_relu_kernels.cu, .sm_80.cubin, .sm_90.cubin and .ptx.
CompiledKernels nvcc_kernels(const std::string& dir);

// The program with its memory planned.
Program bias_relu_program(const CompiledKernels& code);
// The program with an arena of 1 TiB (its intermediates where the plan put them): larger than any
// GPU's free memory, so a session refuses it at load, naming the bytes (device_memory_fit.h).
Program too_large_program(const CompiledKernels& code);

// The program of two branches with its memory planned.
Program branches_program(const CompiledKernels& code);

// An input with values in [-1, 1) that vary with `seed`, and the output each program must give.
Tensor bias_relu_input(int seed);
Tensor bias_relu_expected(const Tensor& x);
Tensor branches_expected(const Tensor& x);

}  // namespace kiln::test
