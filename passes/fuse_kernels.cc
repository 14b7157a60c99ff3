// fuse-kernels (see passes/fuse_kernels.h).
#include "passes/fuse_kernels.h"

#include "passes/fusion_outliner.h"
#include "passes/fusion_planner.h"

namespace kiln::passes {

bool FuseKernels::run(Graph& graph, PassContext& context) {
  const size_t nodes_before = graph.num_nodes();
  const std::vector<FusionGroup> groups = plan_fusion(graph, context, kName);
  outline_fusions(graph, groups);
  return !groups.empty() || graph.num_nodes() != nodes_before;
}

}  // namespace kiln::passes
