// Registers the neural-network op family (conv, gemm, einsum, norms, pooling, reductions, softmax,
// top_k, cum_sum, cum_prod) into the op table; each group lives in its own ir/ops/nn_*.cc file.
#include "ir/ops/all_ops.h"
#include "ir/ops/nn_ops.h"

namespace kiln {

void register_nn_ops(OpRegistry& registry) {
  register_nn_conv_ops(registry);
  register_nn_gemm_ops(registry);
  register_nn_einsum_ops(registry);
  register_nn_norm_ops(registry);
  register_nn_channel_norm_ops(registry);
  register_nn_softmax_ops(registry);
  register_nn_reduce_ops(registry);
  register_nn_pool_ops(registry);
  register_nn_topk_ops(registry);
  register_nn_cumsum_ops(registry);
}

}  // namespace kiln
