// merge-sibling-gemms. Siblings are gemm (or matmul) nodes whose A is one value, or reshapes of
// one value to one type (matmul-add-to-gemm gives each gemm its own reshape; CSE merges them
// only later). The same A means the same K and dtype. A sibling can merge when
//   gemm:   transA = 0, B a constant with data, C absent or a constant with data of one element,
//           [N] or [1, N] (the same for every row);
//   matmul: B a constant matrix with data;
// and it merges with the siblings whose attributes (transB, alpha, beta, ...) all equal its own
// and which, like it, all have a C or all have none. Their B's are joined along N (B's axis 1,
// axis 0 with transB = 1) and their C's into one [sum N] row, into new constants named after the
// first sibling's + ".merged". The merged product, with the siblings' provenance, takes the
// first sibling's place; each sibling becomes a slice of its columns that keeps its result's
// name and its provenance. Every output element is the same sum as before, so the results are
// bit-exact on the reference interpreter. Refusals name the sibling left alone and why.
#include "passes/merge_sibling_gemms.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <tuple>

#include "ir/op_registry.h"
#include "passes/pattern_match.h"
#include "passes/rewrite_util.h"

namespace kiln::passes {
namespace {

bool has_constant_data(const Value* value) { return value->is_constant() && value->has_data(); }

bool has_bias(const Node& product) { return product.operands().size() > 2; }

// N: the product's result columns.
int64_t columns(const Node& product) { return product.result()->type().shape.back(); }

// The value `a` views: a reshape's operand, else `a` itself.
const Value* viewed_value(const Value* a) {
  const Node* reshape = producer_of(a, "reshape");
  return reshape ? reshape->operand(0) : a;
}

// The gemms and matmuls of the graph grouped by op and A, in graph order.
std::vector<std::vector<Node*>> sibling_groups(const Graph& graph) {
  std::map<std::tuple<std::string, const Value*, std::string>, size_t> group_of;
  std::vector<std::vector<Node*>> groups;
  for (Node* node : graph.nodes()) {
    if (node->op() != "gemm" && node->op() != "matmul") continue;
    const Value* a = node->operand(0);
    const auto key = std::make_tuple(node->op(), viewed_value(a), type_to_string(a->type()));
    const auto [entry, added] = group_of.emplace(key, groups.size());
    if (added) groups.emplace_back();
    groups[entry->second].push_back(node);
  }
  return groups;
}

// Why `product` cannot merge with any sibling, or "".
std::string unmergeable(const Node& product) {
  if (product.op() == "gemm" && product.int_attr("transA") != 0) return "transA=1";
  const Value* b = product.operand(1);
  if (!has_constant_data(b)) return "its B " + describe_value(b) + " is not a constant";
  if (b->type().rank() != 2) return "its B " + type_to_string(b->type()) + " is not a matrix";
  if (!has_bias(product)) return "";
  const Value* c = product.operand(2);
  if (!has_constant_data(c)) return "its C " + describe_value(c) + " is not a constant";
  const Shape& shape = c->type().shape;
  const int64_t n = columns(product);
  if (c->type().num_elements() != 1 && shape != Shape{n} && shape != Shape{1, n}) {
    return "its C " + type_to_string(c->type()) + " differs by row";
  }
  return "";
}

// An int or float attribute as text.
std::string attribute_text(const Attribute& attribute) {
  return attribute.kind() == AttrKind::kInt ? std::to_string(attribute.as_int())
                                            : fmt::format("{}", attribute.as_float());
}

// How `product` differs from `sibling` in what a merged product must share, or "".
std::string difference(const Node& product, const Node& sibling) {
  for (const AttrSpec& spec : product.info().attrs) {
    const Attribute& own = product.attr(spec.name);
    const Attribute& other = sibling.attr(spec.name);
    if (!(own == other)) {
      return fmt::format("{}={} where {} has {}={}", spec.name, attribute_text(own),
                         sibling.describe(), spec.name, attribute_text(other));
    }
  }
  if (has_bias(product) != has_bias(sibling)) {
    return has_bias(product) ? "it has a C where " + sibling.describe() + " has none"
                             : "it has no C where " + sibling.describe() + " has one";
  }
  return "";
}

// The mergeable siblings split into classes without differences, in graph order; the others
// are refused.
std::vector<std::vector<Node*>> merge_classes(const std::vector<Node*>& siblings,
                                              std::vector<std::string>& refusals) {
  std::vector<std::vector<Node*>> classes;
  for (Node* sibling : siblings) {
    if (const std::string why = unmergeable(*sibling); !why.empty()) {
      refusals.push_back(sibling->describe() + ": not merged, " + why);
      continue;
    }
    const auto same = std::find_if(classes.begin(), classes.end(), [&](const auto& members) {
      return difference(*sibling, *members.front()).empty();
    });
    if (same != classes.end()) {
      same->push_back(sibling);
    } else {
      classes.push_back({sibling});
    }
  }
  return classes;
}

// Refuses each sibling left alone in a class of its own, naming how it differs from the first
// sibling that merges (or, when none does, from the first class's).
void refuse_singles(const std::vector<std::vector<Node*>>& classes,
                    std::vector<std::string>& refusals) {
  if (classes.empty()) return;
  const auto merging = std::find_if(classes.begin(), classes.end(),
                                    [](const auto& members) { return members.size() > 1; });
  const Node& reference = *(merging != classes.end() ? *merging : classes.front()).front();
  for (const std::vector<Node*>& members : classes) {
    if (members.size() > 1 || members.front() == &reference) continue;
    refusals.push_back(members.front()->describe() + ": not merged, " +
                       difference(*members.front(), reference));
  }
}

// Row-major matrices [rows, columns_i] side by side: [rows, sum columns_i], of `shape`.
Tensor join_columns(const std::vector<Tensor>& parts, int64_t rows, Shape shape) {
  Tensor joined(parts.front().dtype(), std::move(shape));
  std::byte* out = joined.bytes();
  for (int64_t row = 0; row < rows; ++row) {
    for (const Tensor& part : parts) {
      const size_t width = part.num_bytes() / static_cast<size_t>(rows);
      out = std::copy_n(part.bytes() + row * width, width, out);
    }
  }
  return joined;
}

// Bias `c` as a row of n: itself, or its one element n times.
Tensor bias_row(const Tensor& c, int64_t n) {
  if (c.num_elements() == n) return c;
  Tensor row(c.dtype(), {n});
  for (int64_t i = 0; i < n; ++i)
    std::copy_n(c.bytes(), c.num_bytes(), row.bytes() + i * c.num_bytes());
  return row;
}

// Replaces `siblings` by one product on the first one's A and joined weights, and a slice each.
void merge(Graph& graph, const std::vector<Node*>& siblings) {
  const Node& first = *siblings.front();
  const bool transposed = first.op() == "gemm" && first.int_attr("transB") != 0;
  std::vector<Tensor> weights;
  std::vector<Tensor> biases;
  int64_t total = 0;
  for (const Node* sibling : siblings) {
    weights.push_back(sibling->operand(1)->data());
    if (has_bias(*sibling))
      biases.push_back(bias_row(sibling->operand(2)->data(), columns(*sibling)));
    total += columns(*sibling);
  }
  const Shape& b = first.operand(1)->type().shape;
  std::vector<Value*> operands{first.operand(0)};
  operands.push_back(graph.add_constant(first.operand(1)->name() + ".merged",
                                        transposed ? join_columns(weights, 1, {total, b[1]})
                                                   : join_columns(weights, b[0], {b[0], total})));
  if (!biases.empty()) {
    operands.push_back(
        graph.add_constant(first.operand(2)->name() + ".merged", join_columns(biases, 1, {total})));
  }
  Node* merged = graph.add_node(first.op(), operands, first.attrs(), merged_provenance(siblings));
  graph.move_before(merged, &first);
  const int64_t last_axis = merged->result()->type().rank() - 1;
  int64_t start = 0;
  for (Node* sibling : siblings) {
    const int64_t end = start + columns(*sibling);
    Node* slice = graph.add_node("slice", {merged->result()},
                                 {{"starts", std::vector<int64_t>{start}},
                                  {"ends", std::vector<int64_t>{end}},
                                  {"axes", std::vector<int64_t>{last_axis}},
                                  {"steps", std::vector<int64_t>{1}}},
                                 sibling->provenance());
    graph.move_before(slice, sibling);
    slice->result()->set_name(sibling->result()->name());
    graph.replace_all_uses(sibling->result(), slice->result());
    graph.erase_node(sibling);
    start = end;
  }
}

}  // namespace

bool MergeSiblingGemms::run(Graph& graph, PassContext& context) {
  bool changed = false;
  for (const std::vector<Node*>& siblings : sibling_groups(graph)) {
    if (siblings.size() < 2) continue;
    std::vector<std::string> refusals;
    const std::vector<std::vector<Node*>> classes = merge_classes(siblings, refusals);
    refuse_singles(classes, refusals);  // before merging erases the nodes it names
    for (const std::string& refusal : refusals) {
      context.refusals.push_back(std::string(kName) + ": " + refusal);
    }
    for (const std::vector<Node*>& members : classes) {
      if (members.size() < 2) continue;
      merge(graph, members);
      changed = true;
    }
  }
  if (changed) graph.erase_unused_constants();
  return changed;
}

}  // namespace kiln::passes
