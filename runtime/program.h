// A compiled program: what `kiln compile` produces from a fused graph and what a `.kiln` file
// stores. The contract between codegen/ (which fills kernels, buffers and steps) and runtime/
// (which plans memory, serializes, loads, validates and executes).
//
//   buffers  one per tensor the program touches: graph inputs and outputs, weights (constants,
//            their bytes in `weights`), and intermediates. A view (a reshape) is not a buffer:
//            its users get the buffer of the value it views.
//   kernels  one per distinct kernel: its name, CUDA source, and the compiled CUBIN per target
//            arch plus PTX.
//   steps    the launch schedule in order: which kernel, the launch geometry, and the
//            arguments as buffer indices (each kernel's parameters are `T*` pointers in the same
//            order; kernels take no other parameters: shapes are compiled in).
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "ir/tensor.h"

namespace kiln {

struct ProgramBuffer {
  enum class Kind { kInput, kOutput, kWeight, kIntermediate };
  Kind kind = Kind::kIntermediate;
  std::string name;  // the IR value's name (inputs and outputs: the graph's names)
  TensorType type;
  // Inputs and outputs: position in the graph's signature. Weights: byte offset in
  // Program::weights (aligned to kWeightAlignment). Intermediates: byte offset in the arena,
  // assigned by the memory planner (runtime/memory_plan.h). -1 until assigned.
  int64_t offset = -1;
};
// A graph output that is also a graph input, a weight, or another output gets its own output
// buffer, filled by a copy kernel that codegen adds, so every output buffer is written by
// exactly one step.

inline constexpr int64_t kWeightAlignment = 256;

struct KernelBinary {
  std::string arch;            // "sm_80", "sm_90", ...
  std::vector<uint8_t> cubin;  // NVRTC's CUBIN for that arch
};

struct ProgramKernel {
  std::string name;                     // the extern "C" __global__ function
  std::string source;                   // what NVRTC compiled (comment names the ONNX nodes)
  std::vector<std::string> provenance;  // the ONNX nodes the kernel covers
  std::vector<KernelBinary> binaries;   // one per target arch
  std::string ptx;                      // for GPUs newer than every target arch
};

struct ProgramStep {
  int kernel = 0;  // index into Program::kernels
  std::array<uint32_t, 3> grid{1, 1, 1};
  std::array<uint32_t, 3> block{1, 1, 1};
  uint32_t shared_bytes = 0;
  std::vector<int> args;  // indices into Program::buffers, in the kernel's parameter order
};

struct Program {
  std::string name;  // the graph's name
  std::vector<std::string> archs;
  std::vector<ProgramBuffer> buffers;
  std::vector<int> inputs;   // buffer indices, in the graph's input order
  std::vector<int> outputs;  // buffer indices, in the graph's output order
  std::vector<ProgramKernel> kernels;
  std::vector<ProgramStep> steps;
  std::vector<uint8_t> weights;  // every weight buffer's bytes, at its offset
  int64_t arena_bytes = 0;       // intermediates' arena size, from the memory planner
};

}  // namespace kiln
