// fuse-siblings: multi-output (horizontal) fusion. Loop kernels that read the same value — loop
// fusions and single elementwise, broadcast or injective nodes — become one fusion.multi kernel
// that reads the shared input once and writes every sibling's results, when their results all
// have as many elements (one iteration space) and neither depends on the other. Runs after
// fuse-kernels; refusals go to PassContext::refusals.
#pragma once

#include "passes/pass.h"

namespace kiln::passes {

class FuseSiblings : public Pass {
 public:
  static constexpr const char* kName = "fuse-siblings";
  std::string_view name() const override { return kName; }
  bool run(Graph& graph, PassContext& context) override;
};

}  // namespace kiln::passes
