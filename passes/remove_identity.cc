// remove-identity: rewires the uses of each identity's result to its operand and erases the node.
// A graph output keeps its name: when the identity produced an output, the operand takes the
// output's name unless the operand is a graph input (whose name the caller binds by), in which
// case the identity stays.
#include "passes/remove_identity.h"

#include <algorithm>

namespace kiln::passes {

bool RemoveIdentity::run(Graph& graph, PassContext& context) {
  bool changed = false;
  for (Node* node : graph.nodes()) {
    if (node->op() != "identity") continue;
    Value* operand = node->operand(0);
    Value* result = node->result();
    const bool is_output =
        std::find(graph.outputs().begin(), graph.outputs().end(), result) != graph.outputs().end();
    if (is_output) {
      const bool operand_named_elsewhere = operand->kind() == Value::Kind::kInput ||
                                           std::find(graph.outputs().begin(), graph.outputs().end(),
                                                     operand) != graph.outputs().end();
      if (operand_named_elsewhere) {
        context.refusals.push_back(std::string(kName) + ": " + node->describe() +
                                   ": kept, it names graph output %" + result->name() +
                                   " after another input or output");
        continue;
      }
      operand->set_name(result->name());
    }
    graph.replace_all_uses(result, operand);
    graph.erase_node(node);
    changed = true;
  }
  return changed;
}

}  // namespace kiln::passes
