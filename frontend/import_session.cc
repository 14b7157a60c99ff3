// Building the kiln graph for one ONNX import, with import-time constant folding.
#include "frontend/import_session.h"

#include "onnx/onnx.pb.h"
#include "reference/constant_folding.h"

namespace kiln::onnx_import {

std::string onnx_node_name(const onnx::NodeProto& node, size_t index) {
  if (!node.name().empty()) return node.name();
  return node.op_type() + " #" + std::to_string(index);
}

bool is_default_domain(const std::string& domain) { return domain.empty() || domain == "ai.onnx"; }

std::vector<Value*> ImportSession::emit(const std::string& op, std::vector<Value*> operands,
                                        AttributeMap attrs, const std::string& onnx_node) {
  Node* node = graph_.add_node(op, std::move(operands), std::move(attrs), {onnx_node});
  if (!fold_constants_ || !can_fold(*node)) return node->results();
  std::vector<Tensor> folded = fold_node(*node);
  // The node was just added, so nothing uses its results yet.
  graph_.erase_node(node);
  std::vector<Value*> constants;
  for (Tensor& tensor : folded) constants.push_back(graph_.add_constant("", std::move(tensor)));
  return constants;
}

}  // namespace kiln::onnx_import
