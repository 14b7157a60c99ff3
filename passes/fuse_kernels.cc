// fuse-kernels (see passes/fuse_kernels.h).
#include "passes/fuse_kernels.h"

#include <algorithm>

#include "passes/fusion_outliner.h"
#include "passes/fusion_planner.h"

namespace kiln::passes {

namespace {

// Removes group members that nothing reads any more: a producer the cost model recomputed in
// every consumer is left without users.
void drop_dead_members(Graph& graph, std::vector<FusionGroup>& groups) {
  for (FusionGroup& group : groups) {
    for (auto node = group.nodes.rbegin(); node != group.nodes.rend();) {
      const bool dead = std::none_of(
          (*node)->results().begin(), (*node)->results().end(), [&](const Value* result) {
            return graph.is_output(result) || !graph.users(result).empty();
          });
      if (!dead) {
        ++node;
        continue;
      }
      graph.erase_node(*node);
      node = std::make_reverse_iterator(group.nodes.erase(std::next(node).base()));
    }
  }
  std::erase_if(groups, [](const FusionGroup& group) { return group.nodes.size() < 2; });
}

}  // namespace

bool FuseKernels::run(Graph& graph, PassContext& context) {
  const size_t nodes_before = graph.num_nodes();
  std::vector<FusionGroup> groups = plan_fusion(graph, context, kName);
  drop_dead_members(graph, groups);
  outline_fusions(graph, groups);
  return !groups.empty() || graph.num_nodes() != nodes_before;
}

}  // namespace kiln::passes
