// recognize-softmax: replaces exp(x - reduce_max(x)) / reduce_sum(exp(..)) over one axis, and the
// same without the max subtraction, by softmax(x) {axis}.
#pragma once

#include "passes/pass.h"

namespace kiln::passes {

class RecognizeSoftmax : public Pass {
 public:
  static constexpr const char* kName = "recognize-softmax";
  std::string_view name() const override { return kName; }
  bool run(Graph& graph, PassContext& context) override;
};

}  // namespace kiln::passes
