// Fusion kinds and kernel counting (see ir/fusion.h).
#include "ir/fusion.h"

#include <algorithm>

namespace kiln {
namespace {

constexpr FusionKind kAllKinds[] = {FusionKind::kLoop, FusionKind::kReduction,
                                    FusionKind::kEpilogue, FusionKind::kAttention,
                                    FusionKind::kMulti};

}  // namespace

std::string_view fusion_kind_name(FusionKind kind) {
  switch (kind) {
    case FusionKind::kLoop:
      return "loop";
    case FusionKind::kReduction:
      return "reduction";
    case FusionKind::kEpilogue:
      return "epilogue";
    case FusionKind::kAttention:
      return "attention";
    case FusionKind::kMulti:
      return "multi";
  }
  return "?";
}

std::string fusion_op_name(FusionKind kind) {
  return "fusion." + std::string(fusion_kind_name(kind));
}

std::optional<FusionKind> fusion_kind(const Node& node) {
  if (!node.body()) return std::nullopt;
  for (FusionKind kind : kAllKinds) {
    if (node.op() == fusion_op_name(kind)) return kind;
  }
  return std::nullopt;
}

bool attention_rows_agree(const Shape& scores, const Shape& softmax, const Shape& probabilities,
                          const Shape& output) {
  return !scores.empty() && softmax == scores && probabilities == scores &&
         output.size() == scores.size() &&
         std::equal(scores.begin(), scores.end() - 1, output.begin());
}

bool is_view_op(const Node& node) { return node.op() == "reshape"; }

KernelCounts count_kernels(const Graph& graph) {
  KernelCounts counts;
  for (const Node* node : graph.nodes()) {
    if (is_view_op(*node)) {
      ++counts.views;
      continue;
    }
    ++counts.kernels;
    if (std::optional<FusionKind> kind = fusion_kind(*node)) {
      ++counts.fusions;
      ++counts.fusions_by_kind[std::string(fusion_kind_name(*kind))];
    } else {
      ++counts.unfused_by_op[node->op()];
    }
  }
  return counts;
}

}  // namespace kiln
