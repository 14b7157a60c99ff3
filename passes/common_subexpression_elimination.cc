// common-subexpression-elimination: one walk in order. Nodes are bucketed by (op, operands); a
// node equal to an earlier one in its bucket (same attributes) hands its uses to the earlier
// node's results and is erased. Since uses are rewired as the walk goes, chains of duplicates
// collapse in one run. A duplicate producing a graph output is kept when the earlier node
// already produces an output under another name, so outputs keep their names.
#include "passes/common_subexpression_elimination.h"

#include <algorithm>
#include <map>
#include <utility>

namespace kiln::passes {
namespace {

using BucketKey = std::pair<std::string, std::vector<const Value*>>;

// Whether rewiring `duplicate`'s results to `original`'s would merge two named graph outputs.
bool merges_outputs(const Graph& graph, const Node& original, const Node& duplicate) {
  for (size_t i = 0; i < duplicate.results().size(); ++i) {
    if (graph.is_output(duplicate.result(i)) && graph.is_output(original.result(i))) return true;
  }
  return false;
}

}  // namespace

bool CommonSubexpressionElimination::run(Graph& graph, PassContext& context) {
  std::map<BucketKey, std::vector<Node*>> buckets;
  bool changed = false;
  for (Node* node : graph.nodes()) {
    if (node->body()) continue;  // fusions differ by body; CSE runs before fusion anyway
    BucketKey key{node->op(), {node->operands().begin(), node->operands().end()}};
    std::vector<Node*>& bucket = buckets[key];
    auto original = std::find_if(bucket.begin(), bucket.end(), [&](const Node* earlier) {
      return earlier->attrs() == node->attrs();
    });
    if (original == bucket.end()) {
      bucket.push_back(node);
      continue;
    }
    if (merges_outputs(graph, **original, *node)) {
      context.refusals.push_back(std::string(kName) + ": " + node->describe() + ": kept, it and " +
                                 (*original)->describe() + " produce two named graph outputs");
      continue;
    }
    for (size_t i = 0; i < node->results().size(); ++i) {
      Value* result = node->result(i);
      Value* replacement = (*original)->result(i);
      if (graph.is_output(result)) replacement->set_name(result->name());
      graph.replace_all_uses(result, replacement);
    }
    graph.erase_node(node);
    changed = true;
  }
  return changed;
}

}  // namespace kiln::passes
