// Fusion nodes: the kinds, and counting the kernels of a graph.
//
// A fusion node is one GPU kernel; its op names its kind and its body (Node::body()) holds the
// ops the kernel computes:
//   fusion.loop       elementwise, broadcast and injective ops over one iteration space
//   fusion.reduction  a reduction (reduce_*, softmax, layer_normalization, pooling, ...) with
//                     the elementwise producers it reads through and consumers it writes through
//   fusion.epilogue   a GEMM or convolution with elementwise prologue on its activation operand
//                     and elementwise epilogue (bias, activation, residual, scale, cast)
//   fusion.attention  matmul(Q, Kᵀ) → elementwise → softmax → matmul(·, V) as one kernel
//   fusion.multi      sibling loop fusions that read the same inputs, computed in one kernel
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "ir/graph.h"

namespace kiln {

enum class FusionKind { kLoop, kReduction, kEpilogue, kAttention, kMulti };

// "loop", "reduction", ...
std::string_view fusion_kind_name(FusionKind kind);
// "fusion.loop", "fusion.reduction", ...
std::string fusion_op_name(FusionKind kind);
// The kind of a fusion node, or nullopt for any other node.
std::optional<FusionKind> fusion_kind(const Node& node);

// The shapes a fusion.attention holds to: the scores (the first matmul's result), the softmax,
// the probabilities the second matmul reads and that matmul's result share their rows (batch
// dims, then queries; keys, or the output's columns, last). A reshape between them (BLOOM's
// heads flattened into the batch around the softmax) breaks it: the planner then forms no
// attention fusion, and the attention kernels rely on it.
bool attention_rows_agree(const Shape& scores, const Shape& softmax, const Shape& probabilities,
                          const Shape& output);

// Ops that change only how a buffer is indexed, not its bytes (reshape): they cost no kernel.
bool is_view_op(const Node& node);

// Kernels a graph launches: one per top-level node except views. `by_kind` counts fusion
// nodes by kind name and unfused nodes by op name.
struct KernelCounts {
  int kernels = 0;
  int fusions = 0;
  std::map<std::string, int> fusions_by_kind;
  std::map<std::string, int> unfused_by_op;
  int views = 0;
};
KernelCounts count_kernels(const Graph& graph);

}  // namespace kiln
