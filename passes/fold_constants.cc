// fold-constants: one walk in order, so a chain of foldable nodes folds in one run (each folded
// node's constants make the next node foldable). A folded result that is a graph output gives
// its name to the constant replacing it. Nodes too large to fold are logged as refusals.
#include "passes/fold_constants.h"

#include <algorithm>

#include "reference/constant_folding.h"

namespace kiln::passes {

bool FoldConstants::run(Graph& graph, PassContext& context) {
  bool changed = false;
  for (Node* node : graph.nodes()) {
    if (!can_fold(*node)) {
      const bool constant_operands =
          std::all_of(node->operands().begin(), node->operands().end(),
                      [](const Value* operand) { return operand->is_constant(); });
      if (constant_operands && !node->operands().empty()) {
        context.refusals.push_back(std::string(kName) + ": " + node->describe() +
                                   ": not folded, its operands' data is elided or a result "
                                   "has more than 2^20 elements");
      }
      continue;
    }
    std::vector<Tensor> folded = fold_node(*node);
    for (size_t i = 0; i < folded.size(); ++i) {
      Value* result = node->result(i);
      Value* constant = graph.add_constant(result->name(), std::move(folded[i]));
      graph.replace_all_uses(result, constant);
    }
    graph.erase_node(node);
    changed = true;
  }
  return changed;
}

}  // namespace kiln::passes
