// mixed-precision: retypes a graph for the precision in PassContext::precision, following the
// policy of passes/precision_policy.h (which ops run in 16 bits, which in f32, TF32 rounding).
// The first pass of the fused stage: fusion passes after it fold the casts it inserts into the
// kernels next to them.
#pragma once

#include "passes/pass.h"

namespace kiln::passes {

class MixedPrecision : public Pass {
 public:
  static constexpr const char* kName = "mixed-precision";
  std::string_view name() const override { return kName; }
  bool run(Graph& graph, PassContext& context) override;
};

}  // namespace kiln::passes
