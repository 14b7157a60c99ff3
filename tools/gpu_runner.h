// Running a graph at the fused stage on this machine's GPU, as the GPU tests do: lowering
// (codegen/lower.h), NVRTC for this GPU's arch only, the memory planner, then the runtime
// Session. Shared by `kiln test-onnx --device gpu` and kiln_gpu_node_tests.
#pragma once

#include <vector>

#include "ir/graph.h"
#include "ir/tensor.h"
#include "runtime/program.h"

namespace kiln::tools {

// Lowers and compiles `fused_graph` (after the pass pipeline) for this GPU's arch and plans its
// memory. Throws lowering's UnsupportedError for a kernel the GPU backend does not generate,
// InputError when there is no CUDA device, InternalError when NVRTC rejects a kernel.
Program compile_for_this_gpu(const Graph& fused_graph);

// Loads `program` on the GPU and runs it once on `inputs` (the graph's inputs, in its order, of
// its dtypes and shapes); returns the outputs in order.
std::vector<Tensor> run_on_gpu(Program program, const std::vector<Tensor>& inputs);

}  // namespace kiln::tools
