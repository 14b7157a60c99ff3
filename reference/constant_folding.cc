// Folding one node with its reference kernel (see the header).
#include "reference/constant_folding.h"

#include <algorithm>

#include "reference/reference_interpreter.h"

namespace kiln {

bool can_fold(const Node& node) {
  for (const Value* operand : node.operands()) {
    if (!operand->is_constant() || !operand->has_data()) return false;
  }
  return std::all_of(node.results().begin(), node.results().end(), [](const Value* result) {
    return result->type().num_elements() <= kMaxFoldedElements;
  });
}

std::vector<Tensor> fold_node(const Node& node) {
  std::vector<const Tensor*> operands;
  for (const Value* operand : node.operands()) operands.push_back(&operand->data());
  return run_node(node, operands);
}

}  // namespace kiln
