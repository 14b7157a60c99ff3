// simplify-reshape-transpose: merges chains of reshapes and of transposes, removes reshapes and
// transposes that leave their operand as it is, and turns a transpose that moves only size-1
// dims into a reshape.
#pragma once

#include "passes/pass.h"

namespace kiln::passes {

class SimplifyReshapeTranspose : public Pass {
 public:
  static constexpr const char* kName = "simplify-reshape-transpose";
  std::string_view name() const override { return kName; }
  bool run(Graph& graph, PassContext& context) override;
};

}  // namespace kiln::passes
