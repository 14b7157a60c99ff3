// Graph construction and rewiring.
#include "ir/graph.h"

#include <algorithm>
#include <set>
#include <unordered_map>

#include "ir/error.h"
#include "ir/op_registry.h"

namespace kiln {

const Tensor& Value::data() const {
  if (kind_ != Kind::kConstant) throw InternalError("value %" + name_ + " is not a constant");
  if (!data_) {
    throw InputError("constant %" + name_ + " has no data (it was elided in the IR text)");
  }
  return *data_;
}

Node::Node() = default;
Node::~Node() = default;

const Attribute& Node::attr(const std::string& name) const {
  auto it = attrs_.find(name);
  if (it != attrs_.end()) return it->second;
  const AttrSpec* spec = info_->find_attr(name);
  if (spec && spec->default_value) return *spec->default_value;
  throw InputError(describe() + ": missing attribute '" + name + "'");
}

std::string Node::describe() const {
  std::string text = op_;
  if (!provenance_.empty()) {
    text += " (onnx: ";
    for (size_t i = 0; i < provenance_.size(); ++i) {
      text += (i ? ", " : "") + provenance_[i];
    }
    text += ")";
  } else if (!results_.empty() && !results_[0]->name().empty()) {
    text += " producing %" + results_[0]->name();
  }
  return text;
}

Value* Graph::new_value(Value::Kind kind, std::string name, TensorType type) {
  auto value = std::make_unique<Value>();
  value->kind_ = kind;
  value->name_ = std::move(name);
  value->type_ = std::move(type);
  values_.push_back(std::move(value));
  return values_.back().get();
}

Value* Graph::add_input(std::string name, TensorType type) {
  Value* value = new_value(Value::Kind::kInput, std::move(name), std::move(type));
  inputs_.push_back(value);
  return value;
}

Value* Graph::add_constant(std::string name, Tensor data) {
  Value* value = new_value(Value::Kind::kConstant, std::move(name), data.type());
  value->data_ = std::move(data);
  constants_.push_back(value);
  return value;
}

Value* Graph::add_elided_constant(std::string name, TensorType type) {
  Value* value = new_value(Value::Kind::kConstant, std::move(name), std::move(type));
  constants_.push_back(value);
  return value;
}

Node* Graph::add_node(const std::string& op, std::vector<Value*> operands, AttributeMap attrs,
                      std::vector<std::string> provenance) {
  return add_node_with_types(op, std::move(operands), std::move(attrs), {}, std::move(provenance));
}

Node* Graph::add_node_with_types(const std::string& op, std::vector<Value*> operands,
                                 AttributeMap attrs, std::vector<TensorType> result_types,
                                 std::vector<std::string> provenance) {
  const OpInfo* info = OpRegistry::global().find(op);
  if (!info) throw InputError("unknown op '" + op + "'");
  if (info->has_body) throw InputError(op + " needs a body (build it with add_fusion)");
  auto node = std::make_unique<Node>();
  node->op_ = op;
  node->info_ = info;
  node->operands_ = std::move(operands);
  node->attrs_ = std::move(attrs);
  node->provenance_ = std::move(provenance);
  return append_node(std::move(node), std::move(result_types));
}

Node* Graph::add_fusion(const std::string& op, std::vector<Value*> operands,
                        std::unique_ptr<Graph> body, std::vector<std::string> provenance) {
  const OpInfo* info = OpRegistry::global().find(op);
  if (!info) throw InputError("unknown op '" + op + "'");
  if (!info->has_body) throw InputError(op + " is not a fusion op: it takes no body");
  auto node = std::make_unique<Node>();
  node->op_ = op;
  node->info_ = info;
  node->operands_ = std::move(operands);
  node->provenance_ = std::move(provenance);
  node->body_ = std::move(body);
  return append_node(std::move(node), {});
}

// Checks the node against its op's schema, gives it results of `result_types` (inferred when
// empty) and appends it.
Node* Graph::append_node(std::unique_ptr<Node> node, std::vector<TensorType> result_types) {
  const OpInfo* info = node->info_;
  check_node_against_schema(*node);
  if (result_types.empty()) {
    try {
      result_types = infer_result_types(*node);
    } catch (const InputError& error) {
      error.rethrow_prefixed(node->describe() + ": ");
    }
  }
  if (info->num_results != OpInfo::kVariadic &&
      static_cast<int>(result_types.size()) != info->num_results) {
    throw InputError(node->describe() + ": has " + std::to_string(info->num_results) +
                     " results, got " + std::to_string(result_types.size()) + " types");
  }
  for (size_t i = 0; i < result_types.size(); ++i) {
    Value* result = new_value(Value::Kind::kResult, "", std::move(result_types[i]));
    result->producer_ = node.get();
    result->result_index_ = static_cast<int>(i);
    node->results_.push_back(result);
  }
  nodes_.push_back(std::move(node));
  return nodes_.back().get();
}

std::vector<Node*> Graph::nodes() const {
  std::vector<Node*> list;
  list.reserve(nodes_.size());
  for (const auto& node : nodes_) list.push_back(node.get());
  return list;
}

bool Graph::is_output(const Value* value) const {
  return std::find(outputs_.begin(), outputs_.end(), value) != outputs_.end();
}

std::vector<Node*> Graph::users(const Value* value) const {
  std::vector<Node*> list;
  for (const auto& node : nodes_) {
    if (std::find(node->operands_.begin(), node->operands_.end(), value) != node->operands_.end()) {
      list.push_back(node.get());
    }
  }
  return list;
}

void Graph::replace_all_uses(Value* from, Value* to) {
  for (const auto& node : nodes_)
    std::replace(node->operands_.begin(), node->operands_.end(), from, to);
  std::replace(outputs_.begin(), outputs_.end(), from, to);
}

void Graph::erase_node(Node* node) {
  for (Value* result : node->results_) {
    if (!users(result).empty() ||
        std::find(outputs_.begin(), outputs_.end(), result) != outputs_.end()) {
      throw InternalError("erase_node: result of " + node->describe() + " is still used");
    }
  }
  std::erase_if(values_,
                [&](const std::unique_ptr<Value>& value) { return value->producer_ == node; });
  std::erase_if(nodes_, [&](const std::unique_ptr<Node>& owned) { return owned.get() == node; });
}

void Graph::erase_unused_constants() {
  std::vector<Value*> unused;
  for (Value* constant : constants_) {
    if (users(constant).empty() &&
        std::find(outputs_.begin(), outputs_.end(), constant) == outputs_.end()) {
      unused.push_back(constant);
    }
  }
  for (Value* constant : unused) {
    std::erase(constants_, constant);
    std::erase_if(values_,
                  [&](const std::unique_ptr<Value>& value) { return value.get() == constant; });
  }
}

void Graph::move_before(Node* node, const Node* anchor) {
  auto owner = [](const Node* wanted) {
    return [wanted](const std::unique_ptr<Node>& owned) { return owned.get() == wanted; };
  };
  auto from = std::find_if(nodes_.begin(), nodes_.end(), owner(node));
  if (from == nodes_.end() || std::none_of(nodes_.begin(), nodes_.end(), owner(anchor))) {
    throw InternalError("move_before: node is not in graph @" + name_);
  }
  std::unique_ptr<Node> moved = std::move(*from);
  nodes_.erase(from);
  nodes_.insert(std::find_if(nodes_.begin(), nodes_.end(), owner(anchor)), std::move(moved));
}

void Graph::sort_topologically() {
  // Kahn's algorithm, always taking the ready node that comes first in the current order.
  std::unordered_map<const Node*, size_t> position;
  for (size_t i = 0; i < nodes_.size(); ++i) position[nodes_[i].get()] = i;
  std::vector<int> pending(nodes_.size(), 0);
  std::vector<std::vector<size_t>> users_of(nodes_.size());
  for (size_t i = 0; i < nodes_.size(); ++i) {
    std::set<size_t> producers;
    for (const Value* operand : nodes_[i]->operands_) {
      if (operand->producer_) producers.insert(position.at(operand->producer_));
    }
    for (size_t producer : producers) users_of[producer].push_back(i);
    pending[i] = static_cast<int>(producers.size());
  }
  std::set<size_t> ready;
  for (size_t i = 0; i < nodes_.size(); ++i) {
    if (pending[i] == 0) ready.insert(i);
  }
  std::vector<size_t> order;
  while (!ready.empty()) {
    const size_t next = *ready.begin();
    ready.erase(ready.begin());
    order.push_back(next);
    for (size_t user : users_of[next]) {
      if (--pending[user] == 0) ready.insert(user);
    }
  }
  if (order.size() != nodes_.size()) {
    for (size_t i = 0; i < nodes_.size(); ++i) {
      if (pending[i] > 0) {
        throw InternalError("the graph has a cycle through " + nodes_[i]->describe());
      }
    }
  }
  std::vector<std::unique_ptr<Node>> sorted;
  sorted.reserve(nodes_.size());
  for (size_t i : order) sorted.push_back(std::move(nodes_[i]));
  nodes_ = std::move(sorted);
}

}  // namespace kiln
