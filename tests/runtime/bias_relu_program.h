// A hand-written program for the runtime's tests, as codegen would emit it:
//   y = twice(relu(x + bias)) + x     x: f32[64,256] input, bias: f32[256] weight, y: output
// in four steps (add_bias, relu, twice, add; bias_relu_kernels.cu) through three intermediates
// of 64 KiB: `sum` (steps 0-1), `rectified` (1-2) and `doubled` (2-3), so `doubled` can reuse
// the bytes of `sum`: arena 128 KiB, naive 192 KiB, lower bound 128 KiB.
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

// An input with values in [-1, 1) that vary with `seed`, and the output the program must give.
Tensor bias_relu_input(int seed);
Tensor bias_relu_expected(const Tensor& x);

}  // namespace kiln::test
