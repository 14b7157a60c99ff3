// simplify-reshape-transpose. One walk in order, so chains collapse as it goes:
//   reshape(reshape(x))               -> reshape(x) to the outer shape
//   reshape(x) to x's own shape       -> x
//   transpose(transpose(x, p), q)     -> transpose(x, r), r[i] = p[q[i]]
//   transpose(x, identity perm)       -> x
//   transpose moving only size-1 dims -> reshape(x) (the other dims keep their order)
// The inner node of a chain stays while something else uses it. A removed node's graph output
// name goes to its operand; when the operand is a graph input or output itself the node stays,
// and the refusal says so.
#include "passes/simplify_reshape_transpose.h"

#include "passes/pattern_match.h"
#include "passes/rewrite_util.h"

namespace kiln::passes {
namespace {

bool is_identity(const std::vector<int64_t>& perm) {
  for (size_t i = 0; i < perm.size(); ++i) {
    if (perm[i] != static_cast<int64_t>(i)) return false;
  }
  return true;
}

// Whether transposing `shape` by `perm` keeps the order of the dims larger than 1.
bool moves_only_unit_dims(const Shape& shape, const std::vector<int64_t>& perm) {
  int64_t previous = -1;
  for (int64_t axis : perm) {
    if (shape[axis] == 1) continue;
    if (axis < previous) return false;
    previous = axis;
  }
  return true;
}

class Simplifier {
 public:
  Simplifier(Graph& graph, PassContext& context) : graph_(graph), context_(context) {}

  bool changed() const { return changed_; }

  void simplify_reshape(Node& reshape) {
    if (Node* inner = producer_of(reshape.operand(0), "reshape")) bypass(reshape, *inner);
    if (reshape.operand(0)->type() == reshape.result()->type()) remove(reshape);
  }

  void simplify_transpose(Node& transpose) {
    if (Node* inner = producer_of(transpose.operand(0), "transpose")) {
      const std::vector<int64_t>& inner_perm = inner->ints_attr("perm");
      std::vector<int64_t> perm = transpose.ints_attr("perm");
      for (int64_t& axis : perm) axis = inner_perm[axis];
      transpose.mutable_attrs()["perm"] = perm;
      bypass(transpose, *inner);
    }
    const std::vector<int64_t>& perm = transpose.ints_attr("perm");
    if (is_identity(perm)) return remove(transpose);
    if (!moves_only_unit_dims(transpose.operand(0)->type().shape, perm)) return;
    Node* reshape =
        graph_.add_node("reshape", {transpose.operand(0)},
                        {{"shape", transpose.result()->type().shape}}, transpose.provenance());
    reshape->result()->set_name(transpose.result()->name());
    graph_.replace_all_uses(transpose.result(), reshape->result());
    graph_.erase_node(&transpose);
    changed_ = true;
    simplify_reshape(*reshape);
  }

 private:
  // Makes `node` read the operand of `inner`, the node of the same op producing its operand,
  // taking over its provenance; erases `inner` when nothing else uses it.
  void bypass(Node& node, Node& inner) {
    node.set_operand(0, inner.operand(0));
    node.set_provenance(merged_provenance({&inner, &node}));
    if (graph_.users(inner.result()).empty() && !graph_.is_output(inner.result())) {
      graph_.erase_node(&inner);
    }
    changed_ = true;
  }

  // Replaces `node` by its operand.
  void remove(Node& node) {
    if (const std::string why = forward_to_operand(graph_, &node); !why.empty()) {
      context_.refusals.push_back(std::string(SimplifyReshapeTranspose::kName) + ": " +
                                  node.describe() + ": " + why);
      return;
    }
    changed_ = true;
  }

  Graph& graph_;
  PassContext& context_;
  bool changed_ = false;
};

}  // namespace

bool SimplifyReshapeTranspose::run(Graph& graph, PassContext& context) {
  Simplifier simplifier(graph, context);
  // Each step erases only the node at hand or nodes before it, never one the walk has ahead.
  for (Node* node : graph.nodes()) {
    if (node->op() == "reshape") {
      simplifier.simplify_reshape(*node);
    } else if (node->op() == "transpose") {
      simplifier.simplify_transpose(*node);
    }
  }
  if (simplifier.changed()) graph.sort_topologically();
  return simplifier.changed();
}

}  // namespace kiln::passes
