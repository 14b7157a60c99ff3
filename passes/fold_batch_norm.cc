// fold-batch-norm. For y = scale * (conv(x, W) + b - mean) / sqrt(var + eps) + B, per output
// channel c with factor[c] = scale[c] / sqrt(var[c] + eps):
//   W'[c, ...] = W[c, ...] * factor[c]
//   b'[c]      = (b[c] - mean[c]) * factor[c] + B[c]      (b = 0 when the conv has no bias)
// The convolution takes W' and b' and the normalization's place; the folded values are computed
// in double and rounded once into the weights' dtype. Refusals say which condition failed.
#include "passes/fold_batch_norm.h"

#include <algorithm>
#include <cmath>

namespace kiln::passes {
namespace {

bool has_constant_data(const Value* value) { return value->is_constant() && value->has_data(); }

// Why `norm` cannot fold into the node producing its input, or "" when it can.
std::string refusal(const Graph& graph, const Node& norm) {
  const Node* conv = norm.operand(0)->producer();
  if (!conv || conv->op() != "conv") return "its input is not a conv";
  if (graph.users(conv->result()).size() != 1 ||
      std::count(graph.outputs().begin(), graph.outputs().end(), conv->result()) != 0) {
    return "the conv's result has other uses";
  }
  for (size_t i = 1; i < conv->operands().size(); ++i) {
    if (!has_constant_data(conv->operand(i))) return "the conv's weight or bias is not constant";
  }
  for (size_t i = 1; i < norm.operands().size(); ++i) {
    if (!has_constant_data(norm.operand(i))) return "its scale, bias, mean or var is not constant";
  }
  return "";
}

}  // namespace

bool FoldBatchNorm::run(Graph& graph, PassContext& context) {
  bool changed = false;
  for (Node* norm : graph.nodes()) {
    if (norm->op() != "batch_normalization") continue;
    if (const std::string why = refusal(graph, *norm); !why.empty()) {
      context.refusals.push_back(std::string(kName) + ": " + norm->describe() + ": not folded, " +
                                 why);
      continue;
    }
    Node* conv = norm->operand(0)->producer();
    const Tensor& weight = conv->operand(1)->data();
    const bool has_bias = conv->operands().size() > 2;
    const std::vector<double> scale = norm->operand(1)->data().to_doubles();
    const std::vector<double> shift = norm->operand(2)->data().to_doubles();
    const std::vector<double> mean = norm->operand(3)->data().to_doubles();
    const std::vector<double> var = norm->operand(4)->data().to_doubles();
    const double epsilon = norm->float_attr("epsilon");
    const int64_t channels = weight.shape()[0];
    const int64_t per_channel = weight.num_elements() / channels;

    Tensor folded_weight(weight.type());
    Tensor folded_bias(weight.dtype(), {channels});
    for (int64_t c = 0; c < channels; ++c) {
      const double factor = scale[c] / std::sqrt(var[c] + epsilon);
      for (int64_t i = c * per_channel; i < (c + 1) * per_channel; ++i) {
        folded_weight.set_double(i, weight.get_double(i) * factor);
      }
      const double bias = has_bias ? conv->operand(2)->data().get_double(c) : 0.0;
      folded_bias.set_double(c, (bias - mean[c]) * factor + shift[c]);
    }
    Value* new_weight = graph.add_constant(conv->operand(1)->name() + ".bn", folded_weight);
    Value* new_bias = graph.add_constant(norm->operand(2)->name() + ".bn", folded_bias);
    conv->set_operands({conv->operand(0), new_weight, new_bias});

    std::vector<std::string> provenance = conv->provenance();
    provenance.insert(provenance.end(), norm->provenance().begin(), norm->provenance().end());
    conv->set_provenance(provenance);
    if (!norm->result()->name().empty()) conv->result()->set_name(norm->result()->name());
    graph.replace_all_uses(norm->result(), conv->result());
    graph.erase_node(norm);
    changed = true;
  }
  if (changed) graph.erase_unused_constants();
  return changed;
}

}  // namespace kiln::passes
