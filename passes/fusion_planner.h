// The fusion planner: decides which nodes of a graph share a kernel, XLA-style, from the op
// table's ordered categories (ir/op_registry.h). It does not build fusion nodes; the outliner
// (passes/fusion_outliner.h) does.
//
// Each node starts in a group of its own. Walking the graph in order, the planner tries to merge
// each node's group with the group of every operand's producer. A group holds at most one heavy
// op, its anchor: a reduction (reduce_*, softmax, layer_normalization, pooling, ...) or a
// contraction (conv, conv_transpose, gemm, matmul); every other member is light (elementwise,
// broadcast or injective). Opaque ops stay alone. The rules:
//   light + light                      loop fusion
//   light producers → reduction        the reduction reads through them (prologue); a windowed
//                                      pool takes no concat (GoogLeNet's and Inception's block
//                                      concats: b32 pools reading through one ran at 7% of the
//                                      copy bandwidth, the stored concat's pool at 60%)
//   reduction → light consumers        epilogue, elementwise or broadcast over the reduction's
//                                      output elements (reshapes allowed: they keep the order)
//   contraction → light consumers      epilogue: bias, activation, residual, scale, cast over
//                                      the contraction's output elements (reshapes allowed)
//   light producers → contraction      prologue on the operands: elementwise or injective only
//                                      (no broadcast, which every tile load would recompute;
//                                      but an attention's Q, whose tile a block loads once:
//                                      Llama's rotary embedding on Q joins the attention)
//   heavy + heavy                      refused, except matmul → softmax → matmul (attention)
//   heavy → widening cast → reductions the cast stays out of the heavy op's epilogue and joins
//                                      the reductions' prologues (softmax excepted): the heavy
//                                      kernel writes the narrower value
// A merge is refused when it would close a cycle (a path leaving the group and coming back).
// A consumer's refused producers are tried again once another of its producers has merged (the
// grown group may close no cycle now); refusals that later merges overtake are not logged.
// When a producer group's results are also used outside the consumer, the merged group keeps
// them as extra outputs if they share the kernel's iteration space; otherwise a cost model
// recomputes a cheap light producer inside the consumer (a clone) when reading its inputs costs
// no more bytes than reading its stored result, and refuses the merge otherwise: also where it
// reads as many bytes and a convolution, which takes no element-moving prologue, keeps the result
// stored anyway (Inception's block concat, read by the next block's convs and its pool). Every
// refusal is logged in PassContext::refusals with both nodes and the reason.
#pragma once

#include <vector>

#include "passes/pass.h"

namespace kiln::passes {

struct FusionGroup {
  std::vector<Node*> nodes;  // in topological order
  Node* anchor = nullptr;    // the heavy op, if any (the first matmul for attention)
  bool attention = false;    // matmul → softmax → matmul
};

// The groups of two or more nodes, in the order of their first node. May add nodes to `graph`
// (clones of producers the cost model recomputes in a consumer); it never removes any.
std::vector<FusionGroup> plan_fusion(Graph& graph, PassContext& context, const char* pass_name);

}  // namespace kiln::passes
