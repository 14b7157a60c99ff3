// fuse-kernels: groups the graph's nodes into kernels (passes/fusion_planner.h) and replaces
// each group of two or more nodes by a fusion node (passes/fusion_outliner.h). Refusals, with
// both nodes and the reason, go to PassContext::refusals (--explain-fusion).
#pragma once

#include "passes/pass.h"

namespace kiln::passes {

class FuseKernels : public Pass {
 public:
  static constexpr const char* kName = "fuse-kernels";
  std::string_view name() const override { return kName; }
  bool run(Graph& graph, PassContext& context) override;
};

}  // namespace kiln::passes
