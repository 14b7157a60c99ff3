// Registers the layout / data-movement ops (reshape, transpose, slice, gather, pad, resize, ...).
#include "ir/op_registry.h"
#include "ir/ops/all_ops.h"
#include "ir/ops/layout_ops.h"

namespace kiln {

void register_layout_ops(OpRegistry& registry) {
  register_view_ops(registry);
  register_slice_ops(registry);
  register_select_ops(registry);
  register_resize_op(registry);
  register_scatter_ops(registry);
}

}  // namespace kiln
