// Runs a graph on the CPU, node by node, freeing each intermediate after its last use. A fusion
// node runs its body the same way.
#include "reference/reference_interpreter.h"

#include <unordered_map>

#include "ir/error.h"
#include "ir/op_registry.h"

namespace kiln {

void check_inputs(const Graph& graph, const std::vector<Tensor>& inputs) {
  if (inputs.size() != graph.inputs().size()) {
    throw InputError("graph @" + graph.name() + " takes " + std::to_string(graph.inputs().size()) +
                     " inputs, got " + std::to_string(inputs.size()));
  }
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Value* input = graph.inputs()[i];
    if (inputs[i].type() != input->type()) {
      throw InputError("input '" + input->name() + "' must be " + type_to_string(input->type()) +
                       ", got " + type_to_string(inputs[i].type()));
    }
  }
}

std::vector<Tensor> run_node(const Node& node, const std::vector<const Tensor*>& operands) {
  if (const Graph* body = node.body()) {
    // A fusion computes exactly what its body computes, op by op.
    std::vector<Tensor> inputs;
    for (const Tensor* operand : operands) inputs.push_back(*operand);
    try {
      return run_reference(*body, inputs);
    } catch (const InputError& error) {
      error.rethrow_prefixed(node.describe() + ": ");
    }
  }
  std::vector<Tensor> results;
  for (const Value* result : node.results()) results.emplace_back(result->type());
  try {
    node.info().reference(node, operands, results);
  } catch (const InputError& error) {
    error.rethrow_prefixed(node.describe() + ": ");
  }
  return results;
}

std::vector<Tensor> run_reference(const Graph& graph, const std::vector<Tensor>& inputs) {
  check_inputs(graph, inputs);
  const std::vector<Node*> nodes = graph.nodes();

  // Position of each value's last use, so intermediates are freed early (ResNet-50 at batch 32
  // would not fit otherwise).
  std::unordered_map<const Value*, size_t> last_use;
  for (size_t i = 0; i < nodes.size(); ++i) {
    for (const Value* operand : nodes[i]->operands()) last_use[operand] = i;
  }
  for (const Value* output : graph.outputs()) last_use[output] = nodes.size();

  std::unordered_map<const Value*, Tensor> values;
  for (size_t i = 0; i < inputs.size(); ++i) values[graph.inputs()[i]] = inputs[i];
  for (const Value* constant : graph.constants()) values[constant] = constant->data();

  for (size_t i = 0; i < nodes.size(); ++i) {
    const Node& node = *nodes[i];
    std::vector<const Tensor*> operands;
    for (const Value* operand : node.operands()) {
      auto it = values.find(operand);
      if (it == values.end()) {
        throw InternalError(node.describe() + ": operand used before it is defined");
      }
      operands.push_back(&it->second);
    }
    std::vector<Tensor> results = run_node(node, operands);
    for (size_t r = 0; r < results.size(); ++r) values[node.result(r)] = std::move(results[r]);
    for (const Value* operand : node.operands()) {
      if (last_use[operand] == i && operand->kind() == Value::Kind::kResult) values.erase(operand);
    }
  }

  std::vector<Tensor> outputs;
  for (const Value* output : graph.outputs()) outputs.push_back(values.at(output));
  return outputs;
}

}  // namespace kiln
