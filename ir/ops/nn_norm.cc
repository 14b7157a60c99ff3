// The normalization ops: batch_normalization (ONNX BatchNormalization, inference form),
// instance_normalization, layer_normalization, layer_normalization_with_stats (the same
// with ONNX's optional Mean and InvStdDev outputs as results 1 and 2), and rms_normalization
// (x / sqrt(mean(x^2) + epsilon) * scale over the last axes, as ONNX RMSNormalization and Llama's
// RMSNorm). The normalizations over many elements compute their statistics and results in double
// and round once, when stored.
#include <cmath>

#include "ir/ops/nn_kernel_util.h"
#include "ir/ops/nn_ops.h"
#include "ir/ops/op_helpers.h"

namespace kiln {
namespace {

using nn::read_values;
using nn::write_values;

// Checks that operands [first, last] are float vectors of `channels` elements.
void require_channel_vectors(const Node& node, size_t first, size_t last, int64_t channels,
                             const std::vector<std::string>& roles) {
  for (size_t i = first; i <= last; ++i) {
    const std::string& role = roles[i - first];
    nn::require_operand_dtype(node, i, nn::is_float_dtype, role, "a float tensor");
    if (operand_type(node, i).shape != Shape{channels}) {
      throw InputError("operand " + std::to_string(i) + " (" + role + ") must be [" +
                       std::to_string(channels) + "], got " +
                       type_to_string(operand_type(node, i)));
    }
  }
}

const Shape& channel_input_shape(const Node& node) {
  nn::require_operand_dtype(node, 0, nn::is_float_dtype, "X", "a float tensor");
  const Shape& x = operand_type(node, 0).shape;
  if (x.size() < 2) throw InputError("X must be [N,C,...], got [" + shape_to_string(x) + "]");
  return x;
}

// ---- batch_normalization ----------------------------------------------------------------------

std::vector<TensorType> infer_batch_normalization(const Node& node) {
  const Shape& x = channel_input_shape(node);
  require_channel_vectors(node, 1, 4, x[1], {"scale", "B", "input_mean", "input_var"});
  return {operand_type(node, 0)};
}

template <class T>
void run_batch_normalization(const Node& node, std::span<const Tensor* const> inputs,
                             Tensor& output) {
  const std::vector<T> x = read_values<T>(*inputs[0]);
  const std::vector<T> scale = read_values<T>(*inputs[1]);
  const std::vector<T> bias = read_values<T>(*inputs[2]);
  const std::vector<T> mean = read_values<T>(*inputs[3]);
  const std::vector<T> var = read_values<T>(*inputs[4]);
  const T epsilon = static_cast<T>(node.float_attr("epsilon"));
  const Shape& shape = inputs[0]->shape();
  const int64_t channels = shape[1];
  const int64_t spatial = product(shape, 2, shape.size());
  std::vector<T> y(x.size());
  for (int64_t plane = 0; plane < shape[0] * channels; ++plane) {
    const int64_t c = plane % channels;
    const T std_dev = std::sqrt(var[c] + epsilon);
    for (int64_t i = plane * spatial; i < (plane + 1) * spatial; ++i) {
      y[i] = scale[c] * (x[i] - mean[c]) / std_dev + bias[c];
    }
  }
  write_values(output, y);
}

void batch_normalization_reference(const Node& node, std::span<const Tensor* const> inputs,
                                   std::span<Tensor> outputs) {
  nn::visit_float_compute_type(outputs[0].dtype(), [&](auto tag) {
    run_batch_normalization<decltype(tag)>(node, inputs, outputs[0]);
  });
}

// ---- instance_normalization -------------------------------------------------------------------

std::vector<TensorType> infer_instance_normalization(const Node& node) {
  const Shape& x = channel_input_shape(node);
  require_channel_vectors(node, 1, 2, x[1], {"scale", "B"});
  return {operand_type(node, 0)};
}

void instance_normalization_reference(const Node& node, std::span<const Tensor* const> inputs,
                                      std::span<Tensor> outputs) {
  const std::vector<double> x = read_values<double>(*inputs[0]);
  const std::vector<double> scale = read_values<double>(*inputs[1]);
  const std::vector<double> bias = read_values<double>(*inputs[2]);
  const double epsilon = node.float_attr("epsilon");
  const Shape& shape = inputs[0]->shape();
  const int64_t channels = shape[1];
  const int64_t spatial = product(shape, 2, shape.size());
  std::vector<double> y(x.size());
  for (int64_t plane = 0; plane < shape[0] * channels; ++plane) {
    const double* values = x.data() + plane * spatial;
    const auto [mean, inv_std] = nn::mean_and_inv_std(values, spatial, epsilon);
    const int64_t c = plane % channels;
    for (int64_t i = 0; i < spatial; ++i) {
      y[plane * spatial + i] = (values[i] - mean) * inv_std * scale[c] + bias[c];
    }
  }
  write_values(outputs[0], y);
}

// ---- layer_normalization ----------------------------------------------------------------------

// Checks X, Scale and optional B; returns the normalized axis (non-negative).
int64_t check_layer_normalization(const Node& node) {
  nn::require_operand_dtype(node, 0, nn::is_float_dtype, "X", "a float tensor");
  const Shape& x = operand_type(node, 0).shape;
  const int64_t axis = normalize_axis(node.int_attr("axis"), static_cast<int64_t>(x.size()));
  const std::vector<std::string> roles = {"X", "Scale", "B"};
  for (size_t i = 1; i < node.operands().size(); ++i) {
    require_same_dtype(node, 0, i);
    const Shape& operand = operand_type(node, i).shape;
    if (!nn::broadcasts_to(operand, x)) {
      throw InputError("operand " + std::to_string(i) + " (" + roles[i] + ") [" +
                       shape_to_string(operand) + "] does not broadcast to X [" +
                       shape_to_string(x) + "]");
    }
  }
  return axis;
}

std::vector<TensorType> infer_layer_normalization(const Node& node) {
  check_layer_normalization(node);
  return {operand_type(node, 0)};
}

std::vector<TensorType> infer_layer_normalization_with_stats(const Node& node) {
  const int64_t axis = check_layer_normalization(node);
  const TensorType& x = operand_type(node, 0);
  const DType stash = node.attr("stash_type").as_dtype();
  if (!is_float(stash)) throw InputError("attribute 'stash_type' must be a float dtype");
  Shape stats_shape(x.shape.begin(), x.shape.begin() + axis);
  stats_shape.resize(x.shape.size(), 1);
  return {x, {stash, stats_shape}, {stash, stats_shape}};
}

// What layer_normalization and rms_normalization read: X in double as `rows` rows of `cols`
// (the axes from `axis` on), epsilon, and Scale with the index of its element for each of X's.
struct NormalizedRows {
  NormalizedRows(const Node& node, std::span<const Tensor* const> inputs)
      : shape(inputs[0]->shape()),
        axis(normalize_axis(node.int_attr("axis"), static_cast<int64_t>(shape.size()))),
        rows(product(shape, 0, axis)),
        cols(product(shape, axis, shape.size())),
        epsilon(node.float_attr("epsilon")),
        x(read_values<double>(*inputs[0])),
        scale(read_values<double>(*inputs[1])),
        scale_index(broadcast_index_map(inputs[1]->shape(), shape)) {}

  const Shape& shape;
  int64_t axis, rows, cols;
  double epsilon;
  std::vector<double> x, scale;
  std::vector<int64_t> scale_index;
};

// In double whatever stash_type says (it is the least precision the statistics may have); Mean
// and InvStdDev are rounded to it when stored.
void layer_normalization_reference(const Node& node, std::span<const Tensor* const> inputs,
                                   std::span<Tensor> outputs) {
  const NormalizedRows in(node, inputs);
  std::vector<double> bias;
  std::vector<int64_t> bias_index;
  if (inputs.size() == 3) {
    bias = read_values<double>(*inputs[2]);
    bias_index = broadcast_index_map(inputs[2]->shape(), in.shape);
  }
  std::vector<double> y(in.x.size()), means(in.rows), inv_stds(in.rows);
  for (int64_t row = 0; row < in.rows; ++row) {
    const int64_t start = row * in.cols;
    const auto [mean, inv_std] = nn::mean_and_inv_std(in.x.data() + start, in.cols, in.epsilon);
    means[row] = mean;
    inv_stds[row] = inv_std;
    for (int64_t i = start; i < start + in.cols; ++i) {
      y[i] = (in.x[i] - mean) * inv_std * in.scale[in.scale_index[i]];
      if (!bias.empty()) y[i] += bias[bias_index[i]];
    }
  }
  write_values(outputs[0], y);
  if (outputs.size() == 3) {
    write_values(outputs[1], means);
    write_values(outputs[2], inv_stds);
  }
}

// ---- rms_normalization ------------------------------------------------------------------------

// X and Scale are checked as layer_normalization's (infer_layer_normalization); no bias.
void rms_normalization_reference(const Node& node, std::span<const Tensor* const> inputs,
                                 std::span<Tensor> outputs) {
  const NormalizedRows in(node, inputs);
  std::vector<double> y(in.x.size());
  for (int64_t row = 0; row < in.rows; ++row) {
    const int64_t start = row * in.cols;
    double square_sum = 0;
    for (int64_t i = start; i < start + in.cols; ++i) square_sum += in.x[i] * in.x[i];
    const double inv_rms = 1 / std::sqrt(square_sum / static_cast<double>(in.cols) + in.epsilon);
    for (int64_t i = start; i < start + in.cols; ++i) {
      y[i] = in.x[i] * inv_rms * in.scale[in.scale_index[i]];
    }
  }
  write_values(outputs[0], y);
}

}  // namespace

void register_nn_norm_ops(OpRegistry& registry) {
  const AttrSpec epsilon{"epsilon", AttrKind::kFloat, Attribute(1e-5)};
  const AttrSpec axis{"axis", AttrKind::kInt, Attribute(-1)};
  // At inference batch_normalization is a per-channel affine map of each element: it fuses like
  // a broadcasting elementwise op (nothing is reduced).
  registry.add({.name = "batch_normalization",
                .category = OpCategory::kBroadcast,
                .attrs = {epsilon},
                .min_operands = 5,
                .max_operands = 5,
                .infer = infer_batch_normalization,
                .reference = batch_normalization_reference,
                .precision = PrecisionClass::kF32});
  registry.add({.name = "instance_normalization",
                .category = OpCategory::kReduction,
                .attrs = {epsilon},
                .min_operands = 3,
                .max_operands = 3,
                .infer = infer_instance_normalization,
                .reference = instance_normalization_reference,
                .precision = PrecisionClass::kF32,
                .reduced_axes = ReducedAxes::kSpatial});
  registry.add({.name = "layer_normalization",
                .category = OpCategory::kReduction,
                .attrs = {axis, epsilon},
                .min_operands = 2,
                .max_operands = 3,
                .infer = infer_layer_normalization,
                .reference = layer_normalization_reference,
                .precision = PrecisionClass::kF32,
                .reduced_axes = ReducedAxes::kFromAxis});
  registry.add({.name = "rms_normalization",
                .category = OpCategory::kReduction,
                .attrs = {axis, epsilon},
                .min_operands = 2,
                .max_operands = 2,
                .infer = infer_layer_normalization,
                .reference = rms_normalization_reference,
                .precision = PrecisionClass::kF32,
                .reduced_axes = ReducedAxes::kFromAxis});
  registry.add({.name = "layer_normalization_with_stats",
                .category = OpCategory::kReduction,
                .attrs = {axis, epsilon, {"stash_type", AttrKind::kDType, Attribute(DType::kF32)}},
                .min_operands = 2,
                .max_operands = 3,
                .num_results = 3,
                .infer = infer_layer_normalization_with_stats,
                .reference = layer_normalization_reference,
                .precision = PrecisionClass::kF32,
                .reduced_axes = ReducedAxes::kFromAxis});
}

}  // namespace kiln
