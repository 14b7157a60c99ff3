// remove-identity: replaces every identity node (ONNX Identity and inference-mode Dropout) by
// its operand.
#pragma once

#include "passes/pass.h"

namespace kiln::passes {

class RemoveIdentity : public Pass {
 public:
  static constexpr const char* kName = "remove-identity";
  std::string_view name() const override { return kName; }
  bool run(Graph& graph, PassContext& context) override;
};

}  // namespace kiln::passes
