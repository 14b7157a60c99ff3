// A loaded model to a runnable Program: the pass pipeline to the fused stage (without the fusion
// passes for an unfused program), lowering to CUDA kernels, NVRTC compilation and memory
// planning. Shared by kiln compile and kiln bench.
#pragma once

#include <functional>

#include "codegen/compile_program.h"
#include "codegen/options.h"
#include "ir/graph.h"
#include "runtime/memory_plan.h"
#include "runtime/program.h"
#include "tools/pass_options.h"

namespace kiln::tools {

struct CompiledModel {
  Program program;
  codegen::CompileStats stats;
  MemoryFigures memory;
};

// Runs the pass pipeline to the fused stage on `graph` (in place); `fusion` false disables
// fuse-kernels and fuse-siblings (one kernel per op).
void optimize_model(Graph& graph, bool fusion, const PassOptions& passes);

// Lowers an optimized graph to a program, compiles its kernels and plans its memory. `lowered`,
// when given, sees the program after lowering and before NVRTC (kiln compile --emit-cuda writes
// the sources there, so they exist even when a kernel fails to compile).
CompiledModel compile_optimized_model(const Graph& graph, const codegen::CodegenOptions& options,
                                      const std::function<void(const Program&)>& lowered = {});

// optimize_model, then compile_optimized_model.
CompiledModel compile_model(Graph& graph, bool fusion, const PassOptions& passes,
                            const codegen::CodegenOptions& options);

}  // namespace kiln::tools
