// matmul-add-to-gemm. Anchored at an add with a matmul operand (either side; the other is the
// bias): gemm computes A[M,K] * B[K,N] + C with C broadcast to [M,N] (alpha = beta = 1), so the
// bias must be a row, [N] or [1,N], and A is flattened to [M, K] by a reshape when it has more
// than two dims, the result reshaped back to [..., N]. Refused, with the reason: B not of rank 2,
// A of rank 1, a bias of another shape, a matmul result used elsewhere (the PatternRewriter's
// check).
#include "passes/matmul_add_to_gemm.h"

#include "passes/pattern_match.h"

namespace kiln::passes {
namespace {

// Why matmul + bias is no gemm, or "".
std::string gemm_mismatch(const Node& matmul, const Value* bias) {
  const Shape& a = matmul.operand(0)->type().shape;
  const Shape& b = matmul.operand(1)->type().shape;
  if (b.size() != 2)
    return "the matmul's B " + type_to_string(matmul.operand(1)->type()) + " is not of rank 2";
  if (a.size() < 2)
    return "the matmul's A " + type_to_string(matmul.operand(0)->type()) + " is of rank 1";
  const Shape& bias_shape = bias->type().shape;
  if (bias_shape != Shape{b[1]} && bias_shape != Shape{1, b[1]}) {
    return "the bias " + type_to_string(bias->type()) + " is not a row of " + std::to_string(b[1]);
  }
  return "";
}

// gemm(A, B, bias) for `matmul` + `bias`, between reshapes when A has more than two dims.
Value* build_gemm(Graph& graph, const Node& matmul, Value* bias,
                  const std::vector<std::string>& provenance) {
  Value* a = matmul.operand(0);
  const Shape& a_shape = a->type().shape;
  if (a_shape.size() > 2) {
    const Shape rows(a_shape.begin(), a_shape.end() - 1);
    const Shape matrix{num_elements(rows), a_shape.back()};
    a = graph.add_node("reshape", {a}, {{"shape", matrix}}, provenance)->result();
  }
  AttributeMap attrs = matmul.attrs();
  attrs.insert({{"alpha", 1.0}, {"beta", 1.0}, {"transA", 0}, {"transB", 0}});
  Value* product =
      graph.add_node("gemm", {a, matmul.operand(1), bias}, attrs, provenance)->result();
  if (a_shape.size() == 2) return product;
  const Shape& result_shape = matmul.result()->type().shape;
  return graph.add_node("reshape", {product}, {{"shape", result_shape}}, provenance)->result();
}

void match_matmul_add(PatternRewriter& rewriter, Node& add) {
  std::string refusal;
  for (int side = 0; side < 2; ++side) {
    Node* matmul = producer_of(add.operand(side), "matmul");
    if (!matmul) continue;
    Value* bias = add.operand(1 - side);
    if (const std::string why = gemm_mismatch(*matmul, bias); !why.empty()) {
      if (refusal.empty()) refusal = why;
      continue;
    }
    rewriter.rewrite(add, {&add, {matmul, &add}},
                     [&](Graph& graph, const std::vector<std::string>& provenance) {
                       return build_gemm(graph, *matmul, bias, provenance);
                     });
    return;
  }
  if (!refusal.empty()) rewriter.refuse(add, refusal);
}

}  // namespace

bool MatmulAddToGemm::run(Graph& graph, PassContext& context) {
  PatternRewriter rewriter(graph, context, kName);
  rewriter.walk([&](Node& node) {
    if (node.op() == "add") match_matmul_add(rewriter, node);
  });
  return rewriter.finish();
}

}  // namespace kiln::passes
