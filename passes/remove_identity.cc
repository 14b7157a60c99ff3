// remove-identity: rewires the uses of each identity's result to its operand and erases the node.
// A graph output keeps its name: when the identity produced an output, the operand takes the
// output's name unless the operand is a graph input (whose name the caller binds by), in which
// case the identity stays.
#include "passes/remove_identity.h"

#include "passes/rewrite_util.h"

namespace kiln::passes {

bool RemoveIdentity::run(Graph& graph, PassContext& context) {
  bool changed = false;
  for (Node* node : graph.nodes()) {
    if (node->op() != "identity") continue;
    if (const std::string why = forward_to_operand(graph, node); !why.empty()) {
      context.refusals.push_back(std::string(kName) + ": " + node->describe() + ": " + why);
      continue;
    }
    changed = true;
  }
  return changed;
}

}  // namespace kiln::passes
