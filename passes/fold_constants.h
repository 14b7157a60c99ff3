// fold-constants: evaluates every node whose operands are all constants with data, using the
// op's reference kernel, and replaces its results with constants. The ONNX importer folds the
// same way as it builds the graph (this is what makes exporters' Shape -> Gather -> Concat ->
// Reshape chains static), through can_fold and fold_node.
#pragma once

#include <vector>

#include "passes/pass.h"

namespace kiln::passes {

// Results larger than this many elements stay nodes, so folding never bloats the model with big
// computed weights.
inline constexpr int64_t kMaxFoldedElements = int64_t{1} << 20;

// Whether `node` can be evaluated now: every operand is a constant with data and no result
// exceeds kMaxFoldedElements.
bool can_fold(const Node& node);
// The node's results, computed with its reference kernel.
std::vector<Tensor> fold_node(const Node& node);

class FoldConstants : public Pass {
 public:
  static constexpr const char* kName = "fold-constants";
  std::string_view name() const override { return kName; }
  bool run(Graph& graph, PassContext& context) override;
};

}  // namespace kiln::passes
