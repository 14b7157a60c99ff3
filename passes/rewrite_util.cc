// Graph edits the rewriting passes share.
#include "passes/rewrite_util.h"

#include <algorithm>

namespace kiln::passes {

std::vector<std::string> merged_provenance(const std::vector<Node*>& nodes) {
  std::vector<std::string> names;
  for (const Node* node : nodes) {
    for (const std::string& name : node->provenance()) {
      if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);
    }
  }
  return names;
}

std::string forward_to_operand(Graph& graph, Node* node) {
  Value* operand = node->operand(0);
  Value* result = node->result();
  if (graph.is_output(result)) {
    if (operand->kind() == Value::Kind::kInput || graph.is_output(operand)) {
      return "kept, it names graph output %" + result->name() + " after another input or output";
    }
    operand->set_name(result->name());
  }
  graph.replace_all_uses(result, operand);
  graph.erase_node(node);
  return "";
}

}  // namespace kiln::passes
