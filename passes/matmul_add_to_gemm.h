// matmul-add-to-gemm: matmul(A, B) + bias, with B of rank 2 and bias of shape [N] or [1, N]
// (N = B's columns), becomes gemm(A, B, bias); an A of rank above 2 is reshaped to [M, K] before
// and the result back after (reshapes are free views).
#pragma once

#include "passes/pass.h"

namespace kiln::passes {

class MatmulAddToGemm : public Pass {
 public:
  static constexpr const char* kName = "matmul-add-to-gemm";
  std::string_view name() const override { return kName; }
  bool run(Graph& graph, PassContext& context) override;
};

}  // namespace kiln::passes
