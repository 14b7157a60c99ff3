// dead-code-elimination: walks nodes from last to first and erases every node none of whose
// results is used by a later node or a graph output; then drops unused constants.
#include "passes/dead_code_elimination.h"

#include <algorithm>
#include <unordered_set>

namespace kiln::passes {

bool DeadCodeElimination::run(Graph& graph, PassContext& context) {
  std::unordered_set<const Value*> live(graph.outputs().begin(), graph.outputs().end());
  std::vector<Node*> dead;
  const std::vector<Node*> nodes = graph.nodes();
  for (auto it = nodes.rbegin(); it != nodes.rend(); ++it) {
    Node* node = *it;
    const bool used = std::any_of(node->results().begin(), node->results().end(),
                                  [&](const Value* result) { return live.count(result) != 0; });
    if (!used) {
      dead.push_back(node);
      continue;
    }
    live.insert(node->operands().begin(), node->operands().end());
  }
  for (Node* node : dead) graph.erase_node(node);  // last first, so no erased node is in use
  const size_t constants_before = graph.constants().size();
  graph.erase_unused_constants();
  return !dead.empty() || graph.constants().size() != constants_before;
}

}  // namespace kiln::passes
