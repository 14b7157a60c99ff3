// merge-sibling-gemms: gemms that read the same A with constant weights (an attention layer's
// Q, K and V projections) become one gemm with the weights and biases concatenated along N,
// followed by one slice per original gemm along the last axis; matmuls with a constant matrix B
// are merged the same way. One larger product replaces several small ones, and the slices are
// injective ops that fusion folds into their consumers' loads.
#pragma once

#include "passes/pass.h"

namespace kiln::passes {

class MergeSiblingGemms : public Pass {
 public:
  static constexpr const char* kName = "merge-sibling-gemms";
  std::string_view name() const override { return kName; }
  bool run(Graph& graph, PassContext& context) override;
};

}  // namespace kiln::passes
