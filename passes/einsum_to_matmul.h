// einsum-to-matmul: an einsum of one or two operands becomes the ops the contraction, reduction
// and loop kernels take: reshape, transpose, reduce_sum, matmul (batched) and mul. Two operands
// with a label summed in both are one matmul, the batch labels first, then the free labels of A
// (M), the summed ones (K) and those of B (N) (without batch labels, A's free labels but the last
// stay dims of their own, which B is shared by); two with none summed in both are a broadcast mul;
// one operand is a reduce_sum and a transpose. Diagonals (a label repeated in one operand), three
// or more operands, empty operands and matmuls of f64 or integers (which the contraction kernels
// would sum in f32) stay einsums, with the reason.
#pragma once

#include "passes/pass.h"

namespace kiln::passes {

class EinsumToMatmul : public Pass {
 public:
  static constexpr const char* kName = "einsum-to-matmul";
  std::string_view name() const override { return kName; }
  bool run(Graph& graph, PassContext& context) override;
};

}  // namespace kiln::passes
