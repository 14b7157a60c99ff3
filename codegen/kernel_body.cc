// KernelBody: a kernel's inputs, outputs and ops.
#include "codegen/kernel_body.h"

#include <algorithm>

#include "ir/fusion.h"

namespace kiln::codegen {

KernelBody kernel_body_of(const Node& node) {
  KernelBody body;
  body.provenance = node.provenance();
  if (const std::optional<FusionKind> kind = fusion_kind(node)) {
    body.kind = std::string(fusion_kind_name(*kind));
    const Graph& graph = *node.body();
    body.inputs.assign(graph.inputs().begin(), graph.inputs().end());
    for (size_t k = 0; k < body.inputs.size(); ++k) {
      if (node.operand(k)->is_constant()) body.weight_inputs.insert(body.inputs[k]);
    }
    body.outputs.assign(graph.outputs().begin(), graph.outputs().end());
    for (const Node* member : graph.nodes()) body.nodes.push_back(member);
    return body;
  }
  body.kind = node.op();
  for (const Value* operand : node.operands()) {
    const bool listed =
        std::find(body.inputs.begin(), body.inputs.end(), operand) != body.inputs.end();
    if (!operand->is_constant() && !listed) body.inputs.push_back(operand);
  }
  body.outputs.assign(node.results().begin(), node.results().end());
  body.nodes.push_back(&node);
  return body;
}

KernelBody copy_kernel_body(const Value* value) {
  return {.kind = "copy",
          .inputs = {value},
          .weight_inputs = {},
          .outputs = {value},
          .placements = {},
          .nodes = {},
          .provenance = {}};
}

const Node* first_node_of(const KernelBody& body, std::initializer_list<std::string_view> ops) {
  for (const Node* node : body.nodes) {
    if (std::find(ops.begin(), ops.end(), node->op()) != ops.end()) return node;
  }
  return nullptr;
}

std::vector<std::string> distinct_ops(const KernelBody& body) {
  std::vector<std::string> ops;
  for (const Node* node : body.nodes) {
    if (std::find(ops.begin(), ops.end(), node->op()) == ops.end()) ops.push_back(node->op());
  }
  return ops;
}

std::string index_type_for(const KernelBody& body, int64_t slack) {
  int64_t largest = 0;
  const auto consider = [&](const Value* value) {
    largest = std::max(largest, value->type().num_elements());
  };
  for (const Value* value : body.inputs) consider(value);
  for (const Value* value : body.outputs) consider(value);
  for (const Node* node : body.nodes) {
    for (const Value* value : node->operands()) consider(value);
    for (const Value* value : node->results()) consider(value);
  }
  return largest + slack < (int64_t{1} << 31) ? "int" : "long long";
}

}  // namespace kiln::codegen
