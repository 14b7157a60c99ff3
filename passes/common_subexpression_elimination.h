// common-subexpression-elimination: a node computing the same op on the same operands with the
// same attributes as an earlier node is replaced by that earlier node's results.
#pragma once

#include "passes/pass.h"

namespace kiln::passes {

class CommonSubexpressionElimination : public Pass {
 public:
  static constexpr const char* kName = "common-subexpression-elimination";
  std::string_view name() const override { return kName; }
  bool run(Graph& graph, PassContext& context) override;
};

}  // namespace kiln::passes
