// recognize-layer-norm: replaces the decomposed layer normalization over the last k axes,
// (x - mean(x)) / sqrt(mean((x - mean(x))^2) + eps), optionally times gamma and plus beta, by
// layer_normalization(x, gamma, beta) {axis, epsilon}; and the decomposed RMS normalization,
// x / sqrt(mean(x^2) + eps) optionally times gamma (Llama's RMSNorm), by
// rms_normalization(x, gamma) {axis, epsilon}.
#pragma once

#include "passes/pass.h"

namespace kiln::passes {

class RecognizeLayerNorm : public Pass {
 public:
  static constexpr const char* kName = "recognize-layer-norm";
  std::string_view name() const override { return kName; }
  bool run(Graph& graph, PassContext& context) override;
};

}  // namespace kiln::passes
