// recognize-softmax. Anchored at the div e / s where e = exp(t) and s = reduce_sum(e) with
// keepdims=1 over one axis a: t = x - reduce_max(x) (keepdims=1, the same axis) gives
// softmax(x) {axis=a}; any other t gives softmax(t), which is the form without the max
// subtraction (kiln's softmax subtracts the max itself). Other reductions are refused.
#include "passes/recognize_softmax.h"

#include "ir/ops/layout_helpers.h"
#include "passes/pattern_match.h"

namespace kiln::passes {
namespace {

// Why reduce_* node `reduce` does not reduce exactly `axes` keeping dims, or "".
std::string reduction_mismatch(const Node& reduce, const std::vector<int64_t>& axes) {
  if (reduce.int_attr("keepdims") == 0) return reduce.op() + " drops the reduced axis";
  if (reduced_axes(reduce) != axes) {
    return reduce.op() + " reduces axes " + ints_to_string(reduced_axes(reduce)) + ", not " +
           ints_to_string(axes);
  }
  return "";
}

void match_softmax(PatternRewriter& rewriter, Node& div) {
  Node* exp = producer_of(div.operand(0), "exp");
  Node* sum = producer_of(div.operand(1), "reduce_sum");
  if (!exp || !sum || sum->operand(0) != div.operand(0)) return;
  const std::vector<int64_t> axes = reduced_axes(*sum);
  if (axes.size() != 1) {
    return rewriter.refuse(
        div, "reduce_sum reduces axes " + ints_to_string(axes) + ", softmax needs one axis");
  }
  if (const std::string why = reduction_mismatch(*sum, axes); !why.empty()) {
    return rewriter.refuse(div, why);
  }
  Match match{&div, {exp, sum, &div}};
  Value* x = exp->operand(0);
  Node* sub = producer_of(x, "sub");
  Node* max = sub ? producer_of(sub->operand(1), "reduce_max") : nullptr;
  if (max && max->operand(0) == sub->operand(0)) {
    if (const std::string why = reduction_mismatch(*max, axes); !why.empty()) {
      return rewriter.refuse(div, why);
    }
    x = sub->operand(0);
    match.nodes.insert(match.nodes.end(), {max, sub});
  }
  rewriter.rewrite(div, match, "softmax", {x}, {{"axis", axes[0]}});
}

}  // namespace

bool RecognizeSoftmax::run(Graph& graph, PassContext& context) {
  PatternRewriter rewriter(graph, context, kName);
  rewriter.walk([&](Node& node) {
    if (node.op() == "div") match_softmax(rewriter, node);
  });
  return rewriter.finish();
}

}  // namespace kiln::passes
