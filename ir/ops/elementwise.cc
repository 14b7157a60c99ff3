// The elementwise op family: unary math and activations, broadcasting arithmetic, comparisons
// and logic, cast and identity. Each sub-family lives in its own ir/ops/elementwise_*.cc.
#include "ir/ops/all_ops.h"
#include "ir/ops/elementwise_helpers.h"

namespace kiln {

void register_elementwise_ops(OpRegistry& registry) {
  register_elementwise_unary_ops(registry);
  register_elementwise_binary_ops(registry);
  register_elementwise_cast_ops(registry);
}

}  // namespace kiln
