// fuse-siblings (see passes/fuse_siblings.h).
#include "passes/fuse_siblings.h"

#include <fmt/format.h>

#include <algorithm>
#include <unordered_map>
#include <unordered_set>

#include "ir/fusion.h"
#include "ir/op_registry.h"

namespace kiln::passes {
namespace {

// A loop kernel: a loop or multi fusion, or a light node that is not a free reshape.
bool is_loop_kernel(const Node& node) {
  if (const std::optional<FusionKind> kind = fusion_kind(node)) {
    return *kind == FusionKind::kLoop || *kind == FusionKind::kMulti;
  }
  return node.info().category <= OpCategory::kInjective && !is_view_op(node);
}

int64_t iteration_elements(const Node& node) { return node.result(0)->type().num_elements(); }

bool same_iteration_space(const Node& node) {
  return std::all_of(node.results().begin(), node.results().end(), [&](const Value* result) {
    return result->type().num_elements() == iteration_elements(node);
  });
}

// Whether `to` depends on `from`, following users forward.
bool depends_on(const Graph& graph, const Node* from, const Node* to,
                const std::unordered_map<const Node*, size_t>& position) {
  std::vector<const Node*> stack{from};
  std::unordered_set<const Node*> seen{from};
  while (!stack.empty()) {
    const Node* node = stack.back();
    stack.pop_back();
    if (node == to) return true;
    if (position.at(node) >= position.at(to)) continue;
    for (const Value* result : node->results()) {
      for (const Node* user : graph.users(result)) {
        if (seen.insert(user).second) stack.push_back(user);
      }
    }
  }
  return false;
}

// Copies `member`'s computation into `body`: its body's nodes for a fusion, else the node.
// `inner` maps outer values (and member-body values) to body values; returns the values that
// stand for the member's results.
std::vector<Value*> copy_member(const Node& member, Graph& body,
                                std::unordered_map<const Value*, Value*>& inner,
                                std::vector<Value*>& operands) {
  const auto body_value = [&](Value* outer) {
    auto found = inner.find(outer);
    if (found != inner.end()) return found->second;
    // Body inputs keep the outer names where they are distinct.
    const bool taken =
        std::any_of(body.inputs().begin(), body.inputs().end(),
                    [&](const Value* input) { return input->name() == outer->name(); });
    Value* added = body.add_input(taken ? "" : outer->name(), outer->type());
    operands.push_back(outer);
    inner[outer] = added;
    return added;
  };
  const auto copy_node = [&](const Node& node, const std::vector<Value*>& node_operands) {
    std::vector<TensorType> types;
    for (const Value* result : node.results()) types.push_back(result->type());
    Node* copy =
        body.add_node_with_types(node.op(), node_operands, node.attrs(), types, node.provenance());
    for (size_t r = 0; r < node.results().size(); ++r) {
      copy->result(r)->set_name(node.result(r)->name());
      inner[node.result(r)] = copy->result(r);
    }
  };
  if (!member.body()) {
    std::vector<Value*> node_operands;
    for (Value* operand : member.operands()) node_operands.push_back(body_value(operand));
    copy_node(member, node_operands);
    std::vector<Value*> results;
    for (const Value* result : member.results()) results.push_back(inner.at(result));
    return results;
  }
  const Graph& member_body = *member.body();
  for (size_t i = 0; i < member_body.inputs().size(); ++i) {
    inner[member_body.inputs()[i]] = body_value(member.operand(i));
  }
  for (const Value* constant : member_body.constants()) {
    inner[constant] = body.add_constant(constant->name(), constant->data());
  }
  for (const Node* node : member_body.nodes()) {
    std::vector<Value*> node_operands;
    for (const Value* operand : node->operands()) node_operands.push_back(inner.at(operand));
    copy_node(*node, node_operands);
  }
  std::vector<Value*> results;
  for (const Value* output : member_body.outputs()) results.push_back(inner.at(output));
  return results;
}

// Replaces `members` (siblings, in graph order) by one fusion.multi.
void merge_siblings(Graph& graph, const std::vector<Node*>& members) {
  auto body = std::make_unique<Graph>(fusion_op_name(FusionKind::kMulti));
  std::unordered_map<const Value*, Value*> inner;
  std::vector<Value*> operands;
  std::vector<Value*> yields;
  std::vector<Value*> replaced;
  std::vector<std::string> provenance;
  for (const Node* member : members) {
    const std::vector<Value*> results = copy_member(*member, *body, inner, operands);
    yields.insert(yields.end(), results.begin(), results.end());
    replaced.insert(replaced.end(), member->results().begin(), member->results().end());
    provenance.insert(provenance.end(), member->provenance().begin(), member->provenance().end());
  }
  body->set_outputs(yields);
  Node* multi =
      graph.add_fusion(fusion_op_name(FusionKind::kMulti), operands, std::move(body), provenance);
  graph.move_before(multi, members.back());
  for (size_t i = 0; i < replaced.size(); ++i) {
    multi->result(i)->set_name(replaced[i]->name());
    graph.replace_all_uses(replaced[i], multi->result(i));
  }
  for (Node* member : members) graph.erase_node(member);
}

}  // namespace

bool FuseSiblings::run(Graph& graph, PassContext& context) {
  bool changed = false;
  std::unordered_set<const Node*> reported;  // refusals are printed once a node
  for (;;) {
    std::unordered_map<const Node*, size_t> position;
    const std::vector<Node*> nodes = graph.nodes();
    for (size_t i = 0; i < nodes.size(); ++i) position[nodes[i]] = i;
    std::vector<Node*> siblings;
    // The first value read by two or more loop kernels that can share a kernel.
    std::vector<const Value*> candidates(graph.inputs().begin(), graph.inputs().end());
    for (const Node* node : nodes) {
      candidates.insert(candidates.end(), node->results().begin(), node->results().end());
    }
    for (const Value* shared : candidates) {
      std::vector<Node*> readers;
      for (Node* user : graph.users(shared)) {
        if (is_loop_kernel(*user) && same_iteration_space(*user)) readers.push_back(user);
      }
      if (readers.size() < 2) continue;
      siblings = {readers[0]};
      for (size_t i = 1; i < readers.size(); ++i) {
        Node* reader = readers[i];
        std::string why;
        if (iteration_elements(*reader) != iteration_elements(*siblings[0])) {
          why = fmt::format("it computes {} elements, {} computes {}", iteration_elements(*reader),
                            siblings[0]->describe(), iteration_elements(*siblings[0]));
        }
        for (const Node* sibling : siblings) {
          if (why.empty() && (depends_on(graph, sibling, reader, position) ||
                              depends_on(graph, reader, sibling, position))) {
            why = "it and " + sibling->describe() + " depend on each other";
          }
        }
        if (!why.empty()) {
          if (reported.insert(reader).second) {
            context.refusals.push_back(fmt::format("{}: {}: not fused with its sibling {}: {}",
                                                   kName, reader->describe(),
                                                   siblings[0]->describe(), why));
          }
          continue;
        }
        siblings.push_back(reader);
      }
      if (siblings.size() >= 2) break;
      siblings.clear();
    }
    if (siblings.empty()) break;
    merge_siblings(graph, siblings);
    graph.sort_topologically();
    changed = true;
  }
  return changed;
}

}  // namespace kiln::passes
