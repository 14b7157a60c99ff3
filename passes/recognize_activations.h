// recognize-activations: replaces the decomposed forms exporters write for activations by one op
// each: gelu (erf and tanh forms), silu (x * sigmoid(x)) and hard_swish (x * hard_sigmoid(x) with
// alpha 1/6, and x * clip(x + 3, 0, 6) / 6). Partial matches are refused with a reason.
#pragma once

#include "passes/pass.h"

namespace kiln::passes {

class RecognizeActivations : public Pass {
 public:
  static constexpr const char* kName = "recognize-activations";
  std::string_view name() const override { return kName; }
  bool run(Graph& graph, PassContext& context) override;
};

}  // namespace kiln::passes
