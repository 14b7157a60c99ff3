// Import-time constant folding with the reference kernels.
#include "frontend/constant_folding.h"

#include "ir/error.h"
#include "ir/op_registry.h"

namespace kiln::onnx_import {

bool can_fold(const Node& node) {
  if (!node.info().reference) return false;
  for (const Value* operand : node.operands()) {
    if (!operand->is_constant() || !operand->has_data()) return false;
  }
  for (const Value* result : node.results()) {
    if (result->type().num_elements() > kMaxFoldedElements) return false;
  }
  return true;
}

std::vector<Tensor> evaluate_node(const Node& node) {
  std::vector<const Tensor*> inputs;
  for (const Value* operand : node.operands()) inputs.push_back(&operand->data());
  std::vector<Tensor> outputs;
  for (const Value* result : node.results()) outputs.emplace_back(result->type());
  try {
    node.info().reference(node, inputs, outputs);
  } catch (const InputError& error) {
    error.rethrow_prefixed(node.describe() + ": evaluating it at import failed: ");
  }
  return outputs;
}

}  // namespace kiln::onnx_import
