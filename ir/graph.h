// The IR: SSA values, nodes and graphs.
//
// A Graph owns its Values and Nodes. A Value is a graph input, a constant (owning its tensor,
// or "elided" when parsed from text that did not spell out the data), or a node result. Nodes
// are kept in topological order. Every node records `provenance`: the ONNX node names it came
// from, so dumps and kernels can say which part of the model they implement.
//
// A fusion node (op fusion.loop, fusion.reduction, ...; see ir/fusion.h) owns a body: a nested
// Graph whose inputs take the node's operands in order and whose outputs are the node's results.
// A body is closed: it uses only its inputs and its own constants.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ir/attribute.h"
#include "ir/tensor.h"

namespace kiln {

class Node;
struct OpInfo;

class Value {
 public:
  enum class Kind { kInput, kConstant, kResult };

  Kind kind() const { return kind_; }
  const std::string& name() const { return name_; }
  void set_name(std::string name) { name_ = std::move(name); }
  const TensorType& type() const { return type_; }
  void set_type(TensorType type) { type_ = std::move(type); }

  // For results: the producing node and which of its results this is.
  Node* producer() const { return producer_; }
  int result_index() const { return result_index_; }

  bool is_constant() const { return kind_ == Kind::kConstant; }
  // A constant parsed from text without its data has none.
  bool has_data() const { return data_.has_value(); }
  // The data of a constant; throws InputError naming the value if it is elided or not constant.
  const Tensor& data() const;

 private:
  friend class Graph;
  Kind kind_ = Kind::kResult;
  std::string name_;
  TensorType type_;
  Node* producer_ = nullptr;
  int result_index_ = 0;
  std::optional<Tensor> data_;
};

class Graph;

class Node {
 public:
  Node();
  ~Node();
  Node(const Node&) = delete;
  Node& operator=(const Node&) = delete;

  const std::string& op() const { return op_; }
  const OpInfo& info() const { return *info_; }
  const std::vector<Value*>& operands() const { return operands_; }
  Value* operand(size_t i) const { return operands_.at(i); }
  const std::vector<Value*>& results() const { return results_; }
  Value* result(size_t i = 0) const { return results_.at(i); }
  const AttributeMap& attrs() const { return attrs_; }
  AttributeMap& mutable_attrs() { return attrs_; }
  const std::vector<std::string>& provenance() const { return provenance_; }
  void set_provenance(std::vector<std::string> names) { provenance_ = std::move(names); }
  void set_operand(size_t i, Value* value) { operands_.at(i) = value; }
  // Replaces every operand; the caller keeps the count within the op's schema.
  void set_operands(std::vector<Value*> values) { operands_ = std::move(values); }

  // Attribute lookup: the node's own value, else the op table's default; throws InputError
  // naming the node and attribute when neither exists.
  const Attribute& attr(const std::string& name) const;
  bool has_attr(const std::string& name) const { return attrs_.count(name) != 0; }
  int64_t int_attr(const std::string& name) const { return attr(name).as_int(); }
  double float_attr(const std::string& name) const { return attr(name).as_float(); }
  const std::string& string_attr(const std::string& name) const { return attr(name).as_string(); }
  const std::vector<int64_t>& ints_attr(const std::string& name) const {
    return attr(name).as_ints();
  }
  const std::vector<double>& floats_attr(const std::string& name) const {
    return attr(name).as_floats();
  }

  // "conv (onnx: /layer1/Conv)" for error messages.
  std::string describe() const;

  // The nested graph of a fusion node; null for every other node.
  const Graph* body() const { return body_.get(); }
  Graph* mutable_body() { return body_.get(); }

 private:
  friend class Graph;
  std::string op_;
  std::unique_ptr<Graph> body_;
  const OpInfo* info_ = nullptr;
  std::vector<Value*> operands_;
  std::vector<Value*> results_;
  AttributeMap attrs_;
  std::vector<std::string> provenance_;
};

class Graph {
 public:
  explicit Graph(std::string name = "main") : name_(std::move(name)) {}
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;

  const std::string& name() const { return name_; }
  void set_name(std::string name) { name_ = std::move(name); }

  Value* add_input(std::string name, TensorType type);
  Value* add_constant(std::string name, Tensor data);
  Value* add_elided_constant(std::string name, TensorType type);

  // Appends a node after the existing ones. Result types are inferred with the op table's shape
  // function unless given; throws InputError if the op is unknown or inference fails.
  Node* add_node(const std::string& op, std::vector<Value*> operands, AttributeMap attrs = {},
                 std::vector<std::string> provenance = {});
  Node* add_node_with_types(const std::string& op, std::vector<Value*> operands, AttributeMap attrs,
                            std::vector<TensorType> result_types,
                            std::vector<std::string> provenance = {});

  // Appends a fusion node (an op whose OpInfo::has_body is set) owning `body`; its operands
  // must match the body's inputs in number and type, and its results take the body's output
  // types. Throws InputError otherwise.
  Node* add_fusion(const std::string& op, std::vector<Value*> operands, std::unique_ptr<Graph> body,
                   std::vector<std::string> provenance = {});

  void set_outputs(std::vector<Value*> outputs) { outputs_ = std::move(outputs); }

  const std::vector<Value*>& inputs() const { return inputs_; }
  const std::vector<Value*>& constants() const { return constants_; }
  const std::vector<Value*>& outputs() const { return outputs_; }
  // Nodes in topological order.
  std::vector<Node*> nodes() const;
  size_t num_nodes() const { return nodes_.size(); }

  // Nodes that use `value` as an operand, in order.
  std::vector<Node*> users(const Value* value) const;
  // Whether `value` is one of the graph's outputs.
  bool is_output(const Value* value) const;

  // Rewiring, for passes: every use of `from` (operands and graph outputs) becomes `to`.
  void replace_all_uses(Value* from, Value* to);
  // Removes a node whose results are unused (throws InternalError otherwise).
  void erase_node(Node* node);
  // Removes constants no node or output uses.
  void erase_unused_constants();
  // Moves `node` to just before `anchor` in the node order (both nodes of this graph). The
  // caller restores topological order if the move broke it.
  void move_before(Node* node, const Node* anchor);
  // Restores topological order after a pass appended nodes that earlier nodes use: a stable
  // sort that keeps the current order wherever dependencies allow. Throws InternalError on a
  // cycle, naming a node on it.
  void sort_topologically();

 private:
  Value* new_value(Value::Kind kind, std::string name, TensorType type);
  Node* append_node(std::unique_ptr<Node> node, std::vector<TensorType> result_types);

  std::string name_;
  std::vector<std::unique_ptr<Value>> values_;
  std::vector<std::unique_ptr<Node>> nodes_;
  std::vector<Value*> inputs_;
  std::vector<Value*> constants_;
  std::vector<Value*> outputs_;
};

}  // namespace kiln
