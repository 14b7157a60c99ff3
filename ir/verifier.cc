// IR verifier: walks the graph in order, keeping the set of values defined so far.
//   1. Graph inputs: input values with distinct names.
//   2. Constants: constant values whose data, when present, has the declared type.
//   3. Nodes, in order: every operand defined earlier in this graph; operand count and
//      attributes against the op table; result types equal to the shape function's; results
//      belonging to the node and defined once.
//   4. Outputs: defined in this graph.
// A fusion node's body is verified the same way, as a graph of its own.
#include "ir/verifier.h"

#include <set>
#include <unordered_set>

#include "ir/error.h"
#include "ir/op_registry.h"

namespace kiln {
namespace {

std::string describe_value(const Value* value) {
  const std::string type = type_to_string(value->type());
  if (!value->name().empty()) return "%" + value->name() + " (" + type + ")";
  switch (value->kind()) {
    case Value::Kind::kInput:
      return "an unnamed input (" + type + ")";
    case Value::Kind::kConstant:
      return "an unnamed constant (" + type + ")";
    case Value::Kind::kResult:
      return "an unnamed result (" + type + ")";
  }
  return "?";
}

class Verifier {
 public:
  explicit Verifier(const Graph& graph) : graph_(graph) {}

  void run() {
    check_inputs();
    check_constants();
    for (const Node* node : graph_.nodes()) check_node(*node);
    check_outputs();
  }

 private:
  void define(const Value* value) {
    if (!defined_.insert(value).second) {
      throw InputError("value " + describe_value(value) + " is defined twice");
    }
  }

  void check_inputs() {
    std::set<std::string> names;
    for (const Value* input : graph_.inputs()) {
      if (!input) throw InputError("graph input is null");
      if (input->kind() != Value::Kind::kInput) {
        throw InputError("graph input " + describe_value(input) + " is not an input value");
      }
      if (!input->name().empty() && !names.insert(input->name()).second) {
        throw InputError("two graph inputs are named '" + input->name() + "'");
      }
      define(input);
    }
  }

  void check_constants() {
    for (const Value* constant : graph_.constants()) {
      if (!constant) throw InputError("graph constant is null");
      if (!constant->is_constant()) {
        throw InputError("constant " + describe_value(constant) + " is not a constant value");
      }
      if (constant->has_data() && constant->data().type() != constant->type()) {
        throw InputError("constant " + describe_value(constant) + " holds data of type " +
                         type_to_string(constant->data().type()));
      }
      define(constant);
    }
  }

  void check_node(const Node& node) {
    for (size_t i = 0; i < node.operands().size(); ++i) {
      const Value* operand = node.operand(i);
      if (!operand)
        throw InputError(node.describe() + ": operand " + std::to_string(i) + " is null");
      if (!defined_.count(operand)) {
        throw InputError(node.describe() + ": operand " + std::to_string(i) + ", " +
                         describe_value(operand) + ", is not defined before the node");
      }
    }
    verify_node(node);
    for (size_t i = 0; i < node.results().size(); ++i) {
      const Value* result = node.result(i);
      if (result->producer() != &node || result->result_index() != static_cast<int>(i)) {
        throw InputError(node.describe() + ": result " + std::to_string(i) +
                         " does not record the node as its producer");
      }
      define(result);
    }
  }

  void check_outputs() {
    const auto& outputs = graph_.outputs();
    for (size_t i = 0; i < outputs.size(); ++i) {
      if (!outputs[i]) throw InputError("graph output " + std::to_string(i) + " is null");
      if (!defined_.count(outputs[i])) {
        throw InputError("graph output " + std::to_string(i) + ", " + describe_value(outputs[i]) +
                         ", is not defined in the graph");
      }
    }
  }

  const Graph& graph_;
  std::unordered_set<const Value*> defined_;
};

// A fusion's body: a valid graph of its own, with no fusion inside.
void verify_body(const Node& node) {
  const Graph& body = *node.body();
  try {
    verify_graph(body);
  } catch (const InputError& error) {
    throw InputError(node.describe() + ": in its body: " + error.what());
  }
  for (const Node* inner : body.nodes()) {
    if (inner->body()) {
      throw InputError(node.describe() + ": its body holds another fusion, " + inner->describe());
    }
  }
}

}  // namespace

void verify_node(const Node& node) {
  check_node_against_schema(node);
  if (node.info().has_body != (node.body() != nullptr)) {
    throw InputError(node.describe() + (node.body() ? ": only fusion ops have a body"
                                                    : ": a fusion needs a body"));
  }
  if (node.body()) verify_body(node);
  std::vector<TensorType> inferred;
  try {
    inferred = infer_result_types(node);
  } catch (const InputError& error) {
    throw InputError(node.describe() + ": " + error.what());
  }
  if (inferred.size() != node.results().size()) {
    throw InputError(node.describe() + ": has " + std::to_string(node.results().size()) +
                     " results but shape inference gives " + std::to_string(inferred.size()));
  }
  for (size_t i = 0; i < inferred.size(); ++i) {
    const TensorType& declared = node.result(i)->type();
    if (declared != inferred[i]) {
      throw InputError(node.describe() + ": result " + std::to_string(i) + " declared " +
                       type_to_string(declared) + " but shape inference gives " +
                       type_to_string(inferred[i]));
    }
  }
}

void verify_graph(const Graph& graph) { Verifier(graph).run(); }

}  // namespace kiln
