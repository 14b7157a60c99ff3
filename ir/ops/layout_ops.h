// Registration functions of the layout op files, called by register_layout_ops
// (ir/ops/layout_register.cc).
#pragma once

namespace kiln {

class OpRegistry;

void register_view_ops(OpRegistry& registry);     // reshape, transpose, expand, tile, d2s, s2d
void register_slice_ops(OpRegistry& registry);    // slice, concat, pad
void register_select_ops(OpRegistry& registry);   // gather, gather_elements, trilu
void register_resize_op(OpRegistry& registry);    // resize
void register_scatter_ops(OpRegistry& registry);  // gather_nd, scatter_nd, scatter_elements

}  // namespace kiln
