// Registration functions of the neural-network op family's groups, one per ir/ops/nn_*.cc file;
// nn_register.cc calls them all from register_nn_ops().
#pragma once

#include "ir/op_registry.h"

namespace kiln {

void register_nn_conv_ops(OpRegistry& registry);          // conv, conv_transpose
void register_nn_gemm_ops(OpRegistry& registry);          // gemm, matmul
void register_nn_einsum_ops(OpRegistry& registry);        // einsum
void register_nn_norm_ops(OpRegistry& registry);          // batch/layer/instance normalization
void register_nn_channel_norm_ops(OpRegistry& registry);  // group/mean-variance norm, lrn
void register_nn_softmax_ops(OpRegistry& registry);       // softmax, log_softmax, hardmax
void register_nn_reduce_ops(OpRegistry& registry);        // reduce_*, arg_max, arg_min
void register_nn_pool_ops(OpRegistry& registry);          // global/average/max pooling
void register_nn_topk_ops(OpRegistry& registry);          // top_k
void register_nn_cumsum_ops(OpRegistry& registry);        // cum_sum, cum_prod

}  // namespace kiln
