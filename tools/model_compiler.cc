// Compiling a loaded model (see the header).
#include "tools/model_compiler.h"

#include "codegen/lower.h"
#include "passes/fuse_kernels.h"
#include "passes/fuse_siblings.h"
#include "passes/pipeline.h"

namespace kiln::tools {

void optimize_model(Graph& graph, bool fusion, const PassOptions& passes) {
  PassOptions pass_options = passes;
  if (!fusion) {
    pass_options.disabled.push_back(std::string(passes::FuseKernels::kName));
    pass_options.disabled.push_back(std::string(passes::FuseSiblings::kName));
  }
  run_pipeline(graph, passes::default_pipeline(passes::Stage::kFused), pass_options);
}

CompiledModel compile_optimized_model(const Graph& graph, const codegen::CodegenOptions& options,
                                      const std::function<void(const Program&)>& lowered) {
  CompiledModel compiled{codegen::lower_graph(graph, options), {}, {}};
  if (lowered) lowered(compiled.program);
  compiled.stats = codegen::compile_program(compiled.program, options);
  compiled.memory = plan_memory(compiled.program);
  return compiled;
}

CompiledModel compile_model(Graph& graph, bool fusion, const PassOptions& passes,
                            const codegen::CodegenOptions& options) {
  optimize_model(graph, fusion, passes);
  return compile_optimized_model(graph, options);
}

}  // namespace kiln::tools
