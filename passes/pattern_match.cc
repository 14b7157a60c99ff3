// Matching helpers and the pattern rewriter (see the header).
#include "passes/pattern_match.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "ir/error.h"
#include "ir/ops/op_helpers.h"
#include "passes/rewrite_util.h"

namespace kiln::passes {

bool near(double actual, double expected, double tolerance) {
  return std::abs(actual - expected) <= tolerance * std::abs(expected);
}

Node* producer_of(const Value* value, std::string_view op) {
  Node* producer = value->producer();
  return producer && producer->op() == op ? producer : nullptr;
}

std::optional<double> splat_value(const Value* value) {
  if (!value->is_constant() || !value->has_data() || value->type().num_elements() == 0) {
    return std::nullopt;
  }
  const std::vector<double> elements = value->data().to_doubles();
  if (std::any_of(elements.begin(), elements.end(),
                  [&](double element) { return element != elements[0]; })) {
    return std::nullopt;
  }
  return elements[0];
}

bool is_splat(const Value* value, double expected, double tolerance) {
  const std::optional<double> splat = splat_value(value);
  return splat && near(*splat, expected, tolerance);
}

Value* other_operand(const Node& node, const Value* operand) {
  return node.operand(0) == operand ? node.operand(1) : node.operand(0);
}

Node* sole_user(const Graph& graph, const Value* value) {
  const std::vector<Node*> users = graph.users(value);
  return users.size() == 1 && !graph.is_output(value) ? users[0] : nullptr;
}

std::string describe_value(const Value* value) {
  if (!value->name().empty()) return "%" + value->name();
  return value->producer() ? "the result of " + value->producer()->describe() : "a value";
}

std::vector<int64_t> reduced_axes(const Node& reduce) {
  const int64_t rank = reduce.operand(0)->type().rank();
  std::vector<int64_t> axes;
  for (int64_t axis : reduce.ints_attr("axes")) axes.push_back(normalize_axis(axis, rank));
  if (reduce.ints_attr("axes").empty() && reduce.int_attr("noop_with_empty_axes") == 0) {
    for (int64_t axis = 0; axis < rank; ++axis) axes.push_back(axis);
  }
  std::sort(axes.begin(), axes.end());
  return axes;
}

namespace {

// Reads `value` into `product`: through its producer when `read_through`, else as one factor.
void read_factors(const Graph& graph, Value* value, bool read_through, Product& product) {
  if (const std::optional<double> splat = splat_value(value)) {
    product.coefficient *= *splat;
    return;
  }
  Node* node = value->producer();
  if (read_through && node) {
    const std::optional<double> right = splat_value(node->operand(node->operands().size() - 1));
    const auto read_operand = [&](Value* operand) {
      read_factors(graph, operand, sole_user(graph, operand) != nullptr, product);
    };
    if (node->op() == "mul") {
      product.nodes.push_back(node);
      read_operand(node->operand(0));
      read_operand(node->operand(1));
      return;
    }
    if (node->op() == "div" && right && *right != 0) {
      product.nodes.push_back(node);
      read_operand(node->operand(0));
      product.coefficient /= *right;
      return;
    }
    if (node->op() == "pow" && right && *right >= 1 && *right <= 4 &&
        *right == std::floor(*right)) {
      product.nodes.push_back(node);
      for (int i = 0; i < static_cast<int>(*right); ++i) read_operand(node->operand(0));
      return;
    }
  }
  product.factors.push_back(value);
}

}  // namespace

Product read_product(const Graph& graph, Value* value) {
  Product product;
  read_factors(graph, value, true, product);
  return product;
}

std::string describe_product(const Product& product) {
  std::string text = fmt::format("{}", product.coefficient);
  for (const Value* factor : product.factors) text += " * " + describe_value(factor);
  return text;
}

void PatternRewriter::walk(const std::function<void(Node&)>& visit) {
  for (Node* node : graph_.nodes()) {
    if (!erased_.count(node)) visit(*node);
  }
}

void PatternRewriter::refuse(const Node& anchor, const std::string& reason) {
  context_.refusals.push_back(pass_name_ + ": " + anchor.describe() + ": " + reason);
}

std::string PatternRewriter::outside_use(const Match& match) const {
  for (const Node* node : match.nodes) {
    if (node == match.root) continue;
    for (const Value* result : node->results()) {
      if (graph_.is_output(result)) {
        return "intermediate " + describe_value(result) + " is a graph output";
      }
      for (const Node* user : graph_.users(result)) {
        if (std::find(match.nodes.begin(), match.nodes.end(), user) == match.nodes.end()) {
          return "intermediate " + describe_value(result) + " has another user, " +
                 user->describe();
        }
      }
    }
  }
  return "";
}

bool PatternRewriter::rewrite(const Node& anchor, const Match& match, const Builder& build) {
  if (const std::string why = outside_use(match); !why.empty()) {
    refuse(anchor, why);
    return false;
  }
  std::vector<Node*> ordered;  // the pattern's nodes in graph order, each once
  for (Node* node : graph_.nodes()) {
    if (std::find(match.nodes.begin(), match.nodes.end(), node) != match.nodes.end()) {
      ordered.push_back(node);
    }
  }
  Value* root_result = match.root->result();
  Value* replacement = build(graph_, merged_provenance(ordered));
  if (replacement->type() != root_result->type()) {
    throw InternalError(pass_name_ + ": replacement of " + match.root->describe() + " has type " +
                        type_to_string(replacement->type()) + ", not " +
                        type_to_string(root_result->type()));
  }
  replacement->set_name(root_result->name());
  graph_.replace_all_uses(root_result, replacement);
  erase_pattern(ordered);
  changed_ = true;
  return true;
}

bool PatternRewriter::rewrite(const Node& anchor, const Match& match, const std::string& op,
                              std::vector<Value*> operands, AttributeMap attrs) {
  const TensorType& root_type = match.root->result()->type();
  if (root_type != operands[0]->type()) {
    refuse(anchor, "the pattern's constants broadcast " + describe_value(operands[0]) + " to " +
                       type_to_string(root_type));
    return false;
  }
  return rewrite(anchor, match, [&](Graph& graph, const std::vector<std::string>& provenance) {
    return graph.add_node(op, operands, attrs, provenance)->result();
  });
}

void PatternRewriter::erase_pattern(const std::vector<Node*>& nodes) {
  for (auto node = nodes.rbegin(); node != nodes.rend(); ++node) {
    graph_.erase_node(*node);
    erased_.insert(*node);
  }
}

bool PatternRewriter::finish() {
  if (changed_) graph_.sort_topologically();
  return changed_;
}

}  // namespace kiln::passes
