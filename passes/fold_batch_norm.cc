// fold-batch-norm. For y = scale * (z - mean) / sqrt(var + eps) + B, per channel c (axis 1 of z)
// with factor[c] = scale[c] / sqrt(var[c] + eps), and z the result of
//   conv(x, W, b)  W'[c, ...] = W[c, ...] * factor[c]
//                  b'[c]      = (b[c] - mean[c]) * factor[c] + B[c]      (b = 0 without bias)
//   gemm(A, W, C)  the channels are the output columns: W' scales column c of W (row c with
//                  transB), C'[c] = (beta * C[c] - mean[c]) * factor[c] + B[c], and beta becomes
//                  1; C (absent: 0) must be the same for every row: one element, [N] or [1, N].
// The producer takes W' and b' (C') and the normalization's place; the folded values are computed
// in double and rounded once into the weights' dtype. Refusals say which condition failed.
// A normalization that cannot fold but has constant statistics (DenseNet's, after a concat)
// becomes y = z * factor + (B - mean * factor), a multiply and an add by per-channel constants of
// shape [C, 1, ..., 1]: its kernel then computes no square root and division per element
// (DenseNet-121's concat + normalization + ReLU loops ran at 619 GB/s on an H200, session 23), and
// channels-last moves the multiply and add like any broadcast op.
#include "passes/fold_batch_norm.h"

#include <algorithm>
#include <cmath>

#include "passes/rewrite_util.h"

namespace kiln::passes {
namespace {

bool has_constant_data(const Value* value) { return value->is_constant() && value->has_data(); }

// Whether gemm's C (if any) adds the same to every row of its [M, N] result.
bool same_bias_for_every_row(const Node& gemm) {
  if (gemm.operands().size() < 3) return true;
  const TensorType& c = gemm.operand(2)->type();
  const int64_t columns = gemm.result()->type().shape[1];
  return c.num_elements() == 1 || c.shape == Shape{columns} || c.shape == Shape{1, columns};
}

// Why `norm` cannot fold into the node producing its input, or "" when it can.
std::string refusal(const Graph& graph, const Node& norm) {
  const Node* producer = norm.operand(0)->producer();
  if (!producer || (producer->op() != "conv" && producer->op() != "gemm")) {
    return "its input is not a conv or gemm";
  }
  const std::string& op = producer->op();
  if (op == "conv" && producer->int_attr("channels_last") != 0) {
    return "the conv is channels-last (batch_normalization normalizes axis 1)";
  }
  if (graph.users(producer->result()).size() != 1 || graph.is_output(producer->result())) {
    return "the " + op + "'s result has other uses";
  }
  for (size_t i = 1; i < producer->operands().size(); ++i) {
    if (!has_constant_data(producer->operand(i))) {
      return "the " + op + "'s weight or bias is not constant";
    }
  }
  for (size_t i = 1; i < norm.operands().size(); ++i) {
    if (!has_constant_data(norm.operand(i))) return "its scale, bias, mean or var is not constant";
  }
  if (op == "gemm" && !same_bias_for_every_row(*producer)) {
    return "the gemm's C " + type_to_string(producer->operand(2)->type()) + " differs by row";
  }
  return "";
}

// The normalization as y = factor * (z - mean) + shift per channel.
struct ChannelAffine {
  explicit ChannelAffine(const Node& norm)
      : mean(norm.operand(3)->data().to_doubles()), shift(norm.operand(2)->data().to_doubles()) {
    const std::vector<double> scale = norm.operand(1)->data().to_doubles();
    const std::vector<double> var = norm.operand(4)->data().to_doubles();
    const double epsilon = norm.float_attr("epsilon");
    for (size_t c = 0; c < scale.size(); ++c)
      factor.push_back(scale[c] / std::sqrt(var[c] + epsilon));
  }
  // The folded bias of channel c for the producer's bias b.
  double bias(int64_t c, double b) const { return (b - mean[c]) * factor[c] + shift[c]; }

  std::vector<double> factor, mean, shift;
};

// `weight` viewed as a rows x columns matrix, each element times the factor of its row
// (`by_row`) or column, computed in double and rounded once into the weight's dtype.
Tensor scaled_weight(const Tensor& weight, const std::vector<double>& factor, int64_t rows,
                     int64_t columns, bool by_row) {
  Tensor scaled(weight.type());
  const auto scale_each = [&](auto scale_element) {
    for (int64_t row = 0, i = 0; row < rows; ++row) {
      for (int64_t column = 0; column < columns; ++column, ++i) {
        scale_element(i, factor[by_row ? row : column]);
      }
    }
  };
  if (weight.dtype() == DType::kF32) {
    // The usual case, read and written directly: the same arithmetic as get_double/set_double,
    // which element by element would take most of the pass's time.
    const float* in = weight.data<float>();
    float* out = scaled.data<float>();
    scale_each([&](int64_t i, double f) { out[i] = static_cast<float>(in[i] * f); });
  } else {
    scale_each([&](int64_t i, double f) { scaled.set_double(i, weight.get_double(i) * f); });
  }
  return scaled;
}

// conv(x, W, b) -> conv(x, W', b').
void fold_into_conv(Graph& graph, Node& conv, const Node& norm, const ChannelAffine& affine) {
  const Tensor& weight = conv.operand(1)->data();
  const bool has_bias = conv.operands().size() > 2;
  const int64_t channels = weight.shape()[0];
  const Tensor folded_weight =
      scaled_weight(weight, affine.factor, channels, weight.num_elements() / channels, true);
  Tensor folded_bias(weight.dtype(), {channels});
  for (int64_t c = 0; c < channels; ++c) {
    folded_bias.set_double(c, affine.bias(c, has_bias ? conv.operand(2)->data().get_double(c) : 0));
  }
  conv.set_operands({conv.operand(0),
                     graph.add_constant(conv.operand(1)->name() + ".bn", folded_weight),
                     graph.add_constant(norm.operand(2)->name() + ".bn", folded_bias)});
}

// gemm(A, W, C) -> gemm(A, W', C') with beta 1.
void fold_into_gemm(Graph& graph, Node& gemm, const Node& norm, const ChannelAffine& affine) {
  const Tensor& weight = gemm.operand(1)->data();
  const bool transposed = gemm.int_attr("transB") != 0;
  const int64_t columns = gemm.result()->type().shape[1];
  const int64_t depth = weight.num_elements() / std::max<int64_t>(columns, 1);
  // W is [depth, columns], or [columns, depth] with transB.
  const Tensor folded_weight = transposed
                                   ? scaled_weight(weight, affine.factor, columns, depth, true)
                                   : scaled_weight(weight, affine.factor, depth, columns, false);
  const double beta = gemm.float_attr("beta");
  Tensor folded_bias(weight.dtype(), {columns});
  for (int64_t n = 0; n < columns; ++n) {
    double c = 0;
    if (gemm.operands().size() > 2) {
      const Tensor& bias = gemm.operand(2)->data();
      c = beta * bias.get_double(bias.num_elements() == 1 ? 0 : n);
    }
    folded_bias.set_double(n, affine.bias(n, c));
  }
  gemm.set_operands({gemm.operand(0),
                     graph.add_constant(gemm.operand(1)->name() + ".bn", folded_weight),
                     graph.add_constant(norm.operand(2)->name() + ".bn", folded_bias)});
  gemm.mutable_attrs()["beta"] = 1.0;
}

// Whether the normalization's scale, bias, mean and var are constants with data.
bool has_constant_statistics(const Node& norm) {
  for (size_t i = 1; i < norm.operands().size(); ++i) {
    if (!has_constant_data(norm.operand(i))) return false;
  }
  return true;
}

// batch_normalization(z) -> add(mul(z, factor), shift - mean * factor), the constants [C, 1, ...]
// in z's dtype, computed in double and rounded once.
void decompose(Graph& graph, Node& norm, const ChannelAffine& affine) {
  Value* input = norm.operand(0);
  const TensorType& type = input->type();
  const int64_t channels = static_cast<int64_t>(affine.factor.size());
  Shape shape(type.shape.size() - 1, 1);
  shape[0] = channels;
  Tensor factor(type.dtype, shape), shift(type.dtype, shape);
  for (int64_t c = 0; c < channels; ++c) {
    factor.set_double(c, affine.factor[c]);
    shift.set_double(c, affine.bias(c, 0));
  }
  const std::string& base = norm.operand(1)->name();
  Node* scaled = graph.add_node("mul", {input, graph.add_constant(base + ".factor", factor)}, {},
                                norm.provenance());
  Node* shifted = graph.add_node(
      "add", {scaled->result(), graph.add_constant(base + ".shift", shift)}, {}, norm.provenance());
  graph.move_before(scaled, &norm);
  graph.move_before(shifted, &norm);
  if (!norm.result()->name().empty()) shifted->result()->set_name(norm.result()->name());
  graph.replace_all_uses(norm.result(), shifted->result());
  graph.erase_node(&norm);
}

}  // namespace

bool FoldBatchNorm::run(Graph& graph, PassContext& context) {
  bool changed = false;
  for (Node* norm : graph.nodes()) {
    if (norm->op() != "batch_normalization") continue;
    if (const std::string why = refusal(graph, *norm); !why.empty()) {
      const bool decomposes = has_constant_statistics(*norm) && norm->results().size() == 1 &&
                              norm->operand(0)->type().rank() >= 2;
      context.refusals.push_back(
          std::string(kName) + ": " + norm->describe() + ": not folded, " + why +
          (decomposes ? "; it becomes a multiply and an add by per-channel constants" : ""));
      if (decomposes) {
        decompose(graph, *norm, ChannelAffine(*norm));
        changed = true;
      }
      continue;
    }
    Node* producer = norm->operand(0)->producer();
    const ChannelAffine affine(*norm);
    if (producer->op() == "conv") {
      fold_into_conv(graph, *producer, *norm, affine);
    } else {
      fold_into_gemm(graph, *producer, *norm, affine);
    }
    producer->set_provenance(merged_provenance({producer, norm}));
    if (!norm->result()->name().empty()) producer->result()->set_name(norm->result()->name());
    graph.replace_all_uses(norm->result(), producer->result());
    graph.erase_node(norm);
    changed = true;
  }
  if (changed) graph.erase_unused_constants();
  return changed;
}

}  // namespace kiln::passes
