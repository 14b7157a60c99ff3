// dead-code-elimination: removes nodes whose results reach no graph output, and constants no
// node uses.
#pragma once

#include "passes/pass.h"

namespace kiln::passes {

class DeadCodeElimination : public Pass {
 public:
  static constexpr const char* kName = "dead-code-elimination";
  std::string_view name() const override { return kName; }
  bool run(Graph& graph, PassContext& context) override;
};

}  // namespace kiln::passes
