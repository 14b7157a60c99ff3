// Registration entry points of the op families in ir/ops/. all_ops.cc calls every one.
#pragma once

namespace kiln {

class OpRegistry;

void register_all_ops(OpRegistry& registry);

void register_elementwise_ops(OpRegistry& registry);  // unary, binary, compare, logic, cast
void register_nn_ops(OpRegistry& registry);           // conv, gemm, norms, pooling, reductions
void register_layout_ops(OpRegistry& registry);       // reshape, transpose, slice, gather, ...
void register_fusion_ops(OpRegistry& registry);       // fusion.loop, fusion.reduction, ...

}  // namespace kiln
