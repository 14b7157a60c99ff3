// The list of op families that make up the op table.
#include "ir/ops/all_ops.h"

namespace kiln {

void register_all_ops(OpRegistry& registry) {
  register_elementwise_ops(registry);
  register_nn_ops(registry);
  register_layout_ops(registry);
  register_fusion_ops(registry);
}

}  // namespace kiln
