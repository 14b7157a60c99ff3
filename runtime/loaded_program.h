// A program loaded onto one CUDA device: each kernel's CUBIN or PTX chosen for the device
// (kernel_image.h), loaded and checked against its steps, the steps' dependencies (the edges of
// the sessions' CUDA graphs, step_dependencies.h), and the weights uploaded once. It does
// not change after loading, so every Session of the program on that device may share one
// (Session::share): the weights are on the GPU once, and the last session to go frees them.
// Programs with the same weight bytes (a dynamic program's variants) may share them too.
// Internal to the runtime: session.h does not include it.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "runtime/cuda_api.h"
#include "runtime/kernel_header.h"
#include "runtime/library_gemm_plan.h"
#include "runtime/program.h"
#include "runtime/step_dependencies.h"

namespace kiln {

struct LoadedProgram {
  Program program;
  int device = 0;
  std::string device_description;     // "device 0: NVIDIA H100 80GB HBM3 (sm_90)"
  std::vector<CudaLibrary> libraries;
  std::vector<cudaKernel_t> kernels;  // per program kernel
  // Per program kernel, the tensor maps its header states (kernel_header.h): the session encodes
  // them for each step's pointers.
  std::vector<std::vector<KernelTensorMap>> tensor_maps;
  // (kernel, the device address of its kiln_bad_index) for each kernel that resolves indices
  // read from data (gathers, scatters): set when one was out of range (codegen's
  // kiln_resolve_index).
  std::vector<std::pair<int, unsigned int*>> index_flags;
  // Per program kernel: whether the code loaded for this device waits for the kernels it
  // depends on (kernel_waits_for_prior_grids, compiled for sm_90 or newer), so that a graph may
  // launch it while they finish.
  std::vector<bool> launches_early;
  // Per step: the plan of its library call (library_gemm_plan.h), or null where it runs its
  // kernel; and for people, the plan's description, or why its kernel stands in for the call
  // ("cuBLASLt not found (...)"), or "" for a step without a call.
  std::vector<std::shared_ptr<const LibraryGemmPlan>> library_plans;
  std::vector<std::string> library_notes;
  StepGraph dependencies;             // with ArenaSharing::kOrdersSteps
  std::shared_ptr<void> weights;      // the device copy of program.weights, maybe shared

  LoadedProgram() = default;
  LoadedProgram(const LoadedProgram&) = delete;
  LoadedProgram& operator=(const LoadedProgram&) = delete;
  // Unloads the kernels and frees the weights with `device` current.
  ~LoadedProgram();
};

// Loads a validated `program` onto `device` (an index check_device_index accepted), first
// checking that the program, its arena and its inputs and outputs included, fits the device's
// free memory (device_memory_fit.h). Sets and restores the current device itself. With
// `weights_of` (a program loaded on the same device whose weights are the same bytes), reads
// its weights instead of uploading them again.
std::shared_ptr<const LoadedProgram> load_program(
    Program program, int device, const std::shared_ptr<const LoadedProgram>& weights_of = nullptr);

}  // namespace kiln
