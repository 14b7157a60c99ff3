// fold-constants: evaluates every node whose operands are all constants with data, using the
// op's reference kernel (reference/constant_folding.h, which the ONNX importer folds with too),
// and replaces its results with constants.
#pragma once

#include "passes/pass.h"

namespace kiln::passes {

class FoldConstants : public Pass {
 public:
  static constexpr const char* kName = "fold-constants";
  std::string_view name() const override { return kName; }
  bool run(Graph& graph, PassContext& context) override;
};

}  // namespace kiln::passes
