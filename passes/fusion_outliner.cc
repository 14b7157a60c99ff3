// The fusion outliner (see passes/fusion_outliner.h).
#include "passes/fusion_outliner.h"

#include <algorithm>
#include <unordered_map>
#include <unordered_set>

#include "ir/fusion.h"
#include "ir/op_registry.h"
#include "passes/rewrite_util.h"

namespace kiln::passes {
namespace {

// Removes body nodes nothing reads (a reshape whose value became a view outside).
void erase_dead_nodes(Graph& body) {
  const std::vector<Node*> nodes = body.nodes();
  for (auto node = nodes.rbegin(); node != nodes.rend(); ++node) {
    const bool used = std::any_of(
        (*node)->results().begin(), (*node)->results().end(),
        [&](const Value* result) { return !body.users(result).empty() || body.is_output(result); });
    if (!used) body.erase_node(*node);
  }
}

FusionKind kind_of(const FusionGroup& group) {
  if (group.attention) return FusionKind::kAttention;
  if (!group.anchor) return FusionKind::kLoop;
  if (group.anchor->info().category == OpCategory::kReduction) return FusionKind::kReduction;
  return FusionKind::kEpilogue;
}

bool inlined(const Value* value) {
  return value->is_constant() && value->has_data() &&
         value->type().num_elements() <= kMaxInlinedConstantElements;
}

class Outliner {
 public:
  Outliner(Graph& graph, const FusionGroup& group) : graph_(graph), group_(group) {
    for (const Node* node : group.nodes) members_.insert(node);
  }

  void run() {
    const std::vector<Value*> escaping = escaping_values();
    if (escaping.empty()) return;  // nothing reads the group (dead code): leave it as it is
    auto body = std::make_unique<Graph>(fusion_op_name(kind_of(group_)));
    std::vector<Value*> operands;
    // Each ONNX node once: an op rewritten as several kiln nodes (a normalization fold-batch-norm
    // made a multiply and an add) or a recomputed producer names it once.
    const std::vector<std::string> provenance = merged_provenance(group_.nodes);
    for (const Node* node : group_.nodes) {
      std::vector<Value*> inner_operands;
      for (Value* operand : node->operands()) {
        inner_operands.push_back(inner_value(*body, operand, operands));
      }
      std::vector<TensorType> types;
      for (const Value* result : node->results()) types.push_back(result->type());
      Node* copy = body->add_node_with_types(node->op(), inner_operands, node->attrs(), types,
                                             node->provenance());
      for (size_t r = 0; r < node->results().size(); ++r) {
        copy->result(r)->set_name(node->result(r)->name());
        inner_[node->result(r)] = copy->result(r);
      }
    }
    // A reshape of another escaping value is not written twice: it becomes a view of the
    // fusion's result outside.
    std::vector<Value*> written;
    std::vector<Value*> views;
    for (Value* value : escaping) {
      const bool view_of_written =
          is_view_op(*value->producer()) &&
          std::count(escaping.begin(), escaping.end(), value->producer()->operand(0)) != 0;
      (view_of_written ? views : written).push_back(value);
    }
    std::vector<Value*> yields;
    for (Value* value : written) yields.push_back(inner_.at(value));
    body->set_outputs(yields);
    erase_dead_nodes(*body);

    Node* fusion =
        graph_.add_fusion(fusion_op_name(kind_of(group_)), operands, std::move(body), provenance);
    graph_.move_before(fusion, group_.nodes.back());
    std::unordered_map<const Value*, Value*> outer;
    for (size_t i = 0; i < written.size(); ++i) {
      fusion->result(i)->set_name(written[i]->name());
      outer[written[i]] = fusion->result(i);
    }
    for (Value* value : views) {
      const Node& reshape = *value->producer();
      Node* view = graph_.add_node(reshape.op(), {outer.at(reshape.operand(0))}, reshape.attrs(),
                                   reshape.provenance());
      view->result()->set_name(value->name());
      outer[value] = view->result();
    }
    for (Value* value : escaping) graph_.replace_all_uses(value, outer.at(value));
    for (auto node = group_.nodes.rbegin(); node != group_.nodes.rend(); ++node) {
      graph_.erase_node(*node);
    }
  }

 private:
  // The body's value for `value`: a result of an earlier member, an inlined constant, or a new
  // body input (appended to `operands`).
  Value* inner_value(Graph& body, Value* value, std::vector<Value*>& operands) {
    auto found = inner_.find(value);
    if (found != inner_.end()) return found->second;
    // Body inputs need distinct names; a name the body already has is left out.
    const std::string name = names_.insert(value->name()).second ? value->name() : "";
    Value* inner = inlined(value) ? body.add_constant(name, value->data())
                                  : body.add_input(name, value->type());
    if (!inlined(value)) operands.push_back(value);
    inner_[value] = inner;
    return inner;
  }

  // Results of members that a non-member node or the graph's outputs read, in member order.
  std::vector<Value*> escaping_values() const {
    std::unordered_set<const Value*> read_outside(graph_.outputs().begin(), graph_.outputs().end());
    for (const Node* node : graph_.nodes()) {
      if (members_.count(node)) continue;
      read_outside.insert(node->operands().begin(), node->operands().end());
    }
    std::vector<Value*> values;
    for (const Node* node : group_.nodes) {
      for (Value* result : node->results()) {
        if (read_outside.count(result)) values.push_back(result);
      }
    }
    return values;
  }

  Graph& graph_;
  const FusionGroup& group_;
  std::unordered_set<const Node*> members_;
  std::unordered_map<const Value*, Value*> inner_;
  std::unordered_set<std::string> names_{""};
};

}  // namespace

void outline_fusions(Graph& graph, const std::vector<FusionGroup>& groups) {
  for (const FusionGroup& group : groups) Outliner(graph, group).run();
  graph.erase_unused_constants();
  graph.sort_topologically();
}

}  // namespace kiln::passes
