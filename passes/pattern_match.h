// Matching helpers the pattern-recognition passes share, and the rewriter that applies a match.
//
// A pass walks the graph's nodes, anchors a pattern at a distinctive node (an erf, a sigmoid, a
// reduce_sum...), follows operands and users from there, and hands the PatternRewriter a Match:
// the pattern's nodes and its root, the node whose result the replacement takes over. The
// rewriter refuses a match whose intermediate results are used outside the pattern, builds the
// replacement with the pattern's merged provenance, rewires the root's uses (the root's name goes
// to the replacement, so graph outputs keep theirs) and erases the pattern's nodes.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

#include "ir/graph.h"
#include "passes/pass.h"

namespace kiln::passes {

// Relative tolerance for expected constants that binary floating point cannot hold exactly
// (1/sqrt(2), sqrt(2/pi), 0.044715, 1/6); exact ones (0.5, 1, 3, 6) must match exactly.
inline constexpr double kConstantTolerance = 1e-3;

// Whether `actual` is within relative `tolerance` of `expected` (equal, for tolerance 0).
bool near(double actual, double expected, double tolerance);

// The node producing `value` when it is a node of `op`, else null.
Node* producer_of(const Value* value, std::string_view op);

// The value every element of a constant holds: a scalar, or a tensor of equal elements.
std::optional<double> splat_value(const Value* value);
// Whether `value` is a splat constant near `expected`.
bool is_splat(const Value* value, double expected, double tolerance = 0);

// The operand of binary `node` that is not `operand`.
Value* other_operand(const Node& node, const Value* operand);

// Calls match(a, b) with binary `node`'s operands in order, then swapped, until one returns true.
template <class MatchFn>
bool match_either_order(const Node& node, MatchFn&& match) {
  return match(node.operand(0), node.operand(1)) || match(node.operand(1), node.operand(0));
}

// The one node using `value`, or null when several or none do or it is a graph output.
Node* sole_user(const Graph& graph, const Value* value);

// "%name", or "the result of <producer>" for an unnamed value, for messages.
std::string describe_value(const Value* value);

// The axes a reduce_* node reduces, non-negative and sorted: all axes for empty `axes`, none
// when noop_with_empty_axes makes that the identity.
std::vector<int64_t> reduced_axes(const Node& reduce);

// A value read as coefficient * factors[0] * factors[1] * ...: through mul nodes, div by a splat
// constant and pow by a splat integer from 1 to 4 (its factor repeated), with splat constants
// gathered into the coefficient. The value's own producer is always read through; the producers
// of its operands only when nothing else uses their result.
struct Product {
  double coefficient = 1;
  std::vector<Value*> factors;
  std::vector<Node*> nodes;  // the nodes read through
};
Product read_product(const Graph& graph, Value* value);
// "0.5 * %x * %y", for messages.
std::string describe_product(const Product& product);

// A matched pattern: its nodes, one of which is the root, whose result the replacement takes.
struct Match {
  Node* root = nullptr;
  std::vector<Node*> nodes;
};

class PatternRewriter {
 public:
  PatternRewriter(Graph& graph, PassContext& context, std::string_view pass_name)
      : graph_(graph), context_(context), pass_name_(pass_name) {}

  // Calls visit on each node the graph had when the walk began, skipping those rewrites erased.
  void walk(const std::function<void(Node&)>& visit);

  // Logs "pass: anchor: reason" in the context's refusals.
  void refuse(const Node& anchor, const std::string& reason);

  // Replaces the match by what `build` adds to the graph (its nodes take the given provenance,
  // the match's merged one), which must have the root's result type. Refused, and logged
  // against `anchor`, when a pattern node other than the root has a use outside the pattern.
  // Returns whether it rewrote.
  using Builder = std::function<Value*(Graph& graph, const std::vector<std::string>& provenance)>;
  bool rewrite(const Node& anchor, const Match& match, const Builder& build);
  // The same, replacing the match by one `op` node whose result has operand 0's type; refused
  // when the root's type differs (a constant of the pattern broadcasts the result).
  bool rewrite(const Node& anchor, const Match& match, const std::string& op,
               std::vector<Value*> operands, AttributeMap attrs = {});

  // Restores topological order after the walk's rewrites; returns whether there were any.
  bool finish();

 private:
  // Why the match cannot be rewritten, or "" when it can.
  std::string outside_use(const Match& match) const;
  void erase_pattern(const std::vector<Node*>& nodes);

  Graph& graph_;
  PassContext& context_;
  std::string pass_name_;
  std::unordered_set<const Node*> erased_;
  bool changed_ = false;
};

}  // namespace kiln::passes
