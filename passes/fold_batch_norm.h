// fold-batch-norm: a batch_normalization whose input is a convolution or a gemm used by nothing
// else, with constant weights and statistics, is folded into the convolution's (gemm's) weight
// and bias.
#pragma once

#include "passes/pass.h"

namespace kiln::passes {

class FoldBatchNorm : public Pass {
 public:
  static constexpr const char* kName = "fold-batch-norm";
  std::string_view name() const override { return kName; }
  bool run(Graph& graph, PassContext& context) override;
};

}  // namespace kiln::passes
