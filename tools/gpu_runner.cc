// Compiling and running a fused graph on this GPU (see the header).
#include "tools/gpu_runner.h"

#include <utility>

#include "codegen/compile_program.h"
#include "codegen/lower.h"
#include "runtime/memory_plan.h"
#include "runtime/session.h"
#include "target/native_target.h"

namespace kiln::tools {

Program compile_for_this_gpu(const Graph& fused_graph) {
  const codegen::CodegenOptions options = codegen::CodegenOptions::for_target(native_target());
  Program program = codegen::lower_graph(fused_graph, options);
  codegen::compile_program(program, options);
  plan_memory(program);
  return program;
}

std::vector<Tensor> run_on_gpu(Program program, const std::vector<Tensor>& inputs) {
  Session session = Session::load(std::move(program));
  return session.run(inputs);
}

}  // namespace kiln::tools
