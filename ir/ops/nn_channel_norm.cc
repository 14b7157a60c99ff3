// Normalizations over groups of channels, chosen axes or channel windows:
// group_normalization (ONNX GroupNormalization-21: per-channel scale and bias),
// mean_variance_normalization (ONNX MeanVarianceNormalization) and lrn (ONNX LRN). All three
// compute their sums, statistics and results in double and round once, when stored.
#include <algorithm>
#include <cmath>

#include "ir/ops/nn_kernel_util.h"
#include "ir/ops/nn_ops.h"
#include "ir/ops/op_helpers.h"

namespace kiln {
namespace {

using nn::read_values;
using nn::write_values;

// X of a float dtype with at least [N,C]; returns its shape.
const Shape& require_channel_input(const Node& node) {
  nn::require_operand_dtype(node, 0, nn::is_float_dtype, "X", "a float tensor");
  const Shape& x = operand_type(node, 0).shape;
  if (x.size() < 2) throw InputError("X must be [N,C,...], got [" + shape_to_string(x) + "]");
  return x;
}

// ---- group_normalization ----------------------------------------------------------------------

std::vector<TensorType> infer_group_normalization(const Node& node) {
  const Shape& x = require_channel_input(node);
  const std::vector<std::string> roles = {"scale", "bias"};
  for (size_t i = 1; i <= 2; ++i) {
    require_same_dtype(node, 0, i);
    if (operand_type(node, i).shape != Shape{x[1]}) {
      throw InputError("operand " + std::to_string(i) + " (" + roles[i - 1] + ") must be [" +
                       std::to_string(x[1]) + "] (one value per channel), got " +
                       type_to_string(operand_type(node, i)));
    }
  }
  const int64_t groups = node.int_attr("num_groups");
  if (groups <= 0 || x[1] % groups != 0) {
    throw InputError("attribute 'num_groups' (" + std::to_string(groups) +
                     ") must be positive and divide the channel count " + std::to_string(x[1]));
  }
  if (!is_float(node.attr("stash_type").as_dtype())) {
    throw InputError("attribute 'stash_type' must be a float dtype");
  }
  return {operand_type(node, 0)};
}

// In double whatever stash_type says: it is the least precision the statistics may have.
void group_normalization_reference(const Node& node, std::span<const Tensor* const> inputs,
                                   std::span<Tensor> outputs) {
  const Shape& shape = inputs[0]->shape();
  const int64_t channels = shape[1];
  const int64_t groups = node.int_attr("num_groups");
  const int64_t spatial = product(shape, 2, shape.size());
  const int64_t group_size = channels / groups * spatial;
  const double epsilon = node.float_attr("epsilon");
  const std::vector<double> x = read_values<double>(*inputs[0]);
  const std::vector<double> scale = read_values<double>(*inputs[1]);
  const std::vector<double> bias = read_values<double>(*inputs[2]);
  std::vector<double> y(x.size());
  for (int64_t block = 0; block < shape[0] * groups; ++block) {
    const double* values = x.data() + block * group_size;
    const auto [mean, inv_std] = nn::mean_and_inv_std(values, group_size, epsilon);
    for (int64_t i = 0; i < group_size; ++i) {
      const int64_t flat = block * group_size + i;
      const int64_t c = (flat / spatial) % channels;
      y[flat] = scale[c] * ((values[i] - mean) * inv_std) + bias[c];
    }
  }
  write_values(outputs[0], y);
}

// ---- mean_variance_normalization --------------------------------------------------------------

// The attribute `axes` made non-negative; throws InputError on an out-of-range or repeated axis.
std::vector<int64_t> normalized_axes(const Node& node, int64_t rank) {
  std::vector<int64_t> axes = node.ints_attr("axes");
  for (int64_t& axis : axes) axis = normalize_axis(axis, rank, "attribute 'axes'");
  std::vector<int64_t> sorted = axes;
  std::sort(sorted.begin(), sorted.end());
  if (std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end()) {
    throw InputError("attribute 'axes' repeats an axis");
  }
  return axes;
}

std::vector<TensorType> infer_mean_variance_normalization(const Node& node) {
  nn::require_operand_dtype(node, 0, nn::is_float_dtype, "X", "a float tensor");
  normalized_axes(node, operand_type(node, 0).rank());
  return {operand_type(node, 0)};
}

// (x - mean) / (sqrt(variance) + 1e-9) with mean and variance over `axes`, as ONNX's function
// body defines it.
void mean_variance_normalization_reference(const Node& node, std::span<const Tensor* const> inputs,
                                           std::span<Tensor> outputs) {
  const Tensor& input = *inputs[0];
  const Shape& shape = input.shape();
  const std::vector<int64_t> axes = normalized_axes(node, input.rank());
  // Each element's statistics slot: its index with the normalized axes dropped.
  Shape kept_shape = shape;
  int64_t count = 1;
  for (int64_t axis : axes) {
    count *= shape[axis];
    kept_shape[axis] = 1;
  }
  const std::vector<int64_t> slot = broadcast_index_map(kept_shape, shape);
  const std::vector<double> x = read_values<double>(input);
  const size_t slots = static_cast<size_t>(num_elements(kept_shape));
  std::vector<double> mean(slots, 0.0), squares(slots, 0.0);
  for (size_t i = 0; i < x.size(); ++i) mean[slot[i]] += x[i];
  for (double& value : mean) value /= static_cast<double>(count);
  for (size_t i = 0; i < x.size(); ++i) {
    const double centered = x[i] - mean[slot[i]];
    squares[slot[i]] += centered * centered;
  }
  std::vector<double> y(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    const double std_dev = std::sqrt(squares[slot[i]] / static_cast<double>(count));
    y[i] = (x[i] - mean[slot[i]]) / (std_dev + 1e-9);
  }
  write_values(outputs[0], y);
}

// ---- lrn --------------------------------------------------------------------------------------

std::vector<TensorType> infer_lrn(const Node& node) {
  require_channel_input(node);
  if (node.int_attr("size") <= 0) {
    throw InputError("attribute 'size' must be positive, got " +
                     std::to_string(node.int_attr("size")));
  }
  return {operand_type(node, 0)};
}

// y = x / (bias + alpha / size * sum of x^2 over the channel window)^beta, where the window of
// channel c is [c - floor((size-1)/2), c + ceil((size-1)/2)] clipped to the channels.
void lrn_reference(const Node& node, std::span<const Tensor* const> inputs,
                   std::span<Tensor> outputs) {
  const Tensor& input = *inputs[0];
  const Shape& shape = input.shape();
  const int64_t channels = shape[1];
  const int64_t spatial = product(shape, 2, shape.size());
  const int64_t size = node.int_attr("size");
  const int64_t before = (size - 1) / 2;
  const int64_t after = size / 2;  // ceil((size - 1) / 2)
  const double alpha_over_size = node.float_attr("alpha") / static_cast<double>(size);
  const double beta = node.float_attr("beta");
  const double bias = node.float_attr("bias");
  const std::vector<double> x = read_values<double>(input);
  std::vector<double> y(x.size());
  for (int64_t n = 0; n < shape[0]; ++n) {
    for (int64_t c = 0; c < channels; ++c) {
      const int64_t first = std::max<int64_t>(0, c - before);
      const int64_t last = std::min(channels - 1, c + after);
      for (int64_t s = 0; s < spatial; ++s) {
        double square_sum = 0;
        for (int64_t k = first; k <= last; ++k) {
          const double value = x[(n * channels + k) * spatial + s];
          square_sum += value * value;
        }
        const int64_t i = (n * channels + c) * spatial + s;
        y[i] = x[i] / std::pow(bias + alpha_over_size * square_sum, beta);
      }
    }
  }
  write_values(outputs[0], y);
}

}  // namespace

void register_nn_channel_norm_ops(OpRegistry& registry) {
  registry.add({.name = "group_normalization",
                .category = OpCategory::kReduction,
                .attrs = {{"num_groups", AttrKind::kInt, std::nullopt},
                          {"epsilon", AttrKind::kFloat, Attribute(1e-5)},
                          {"stash_type", AttrKind::kDType, Attribute(DType::kF32)}},
                .min_operands = 3,
                .max_operands = 3,
                .infer = infer_group_normalization,
                .reference = group_normalization_reference,
                .precision = PrecisionClass::kF32,
                .reduced_axes = ReducedAxes::kWithinGroups});
  registry.add({.name = "mean_variance_normalization",
                .category = OpCategory::kReduction,
                .attrs = {{"axes", AttrKind::kInts, Attribute(std::vector<int64_t>{0, 2, 3})}},
                .infer = infer_mean_variance_normalization,
                .reference = mean_variance_normalization_reference,
                .precision = PrecisionClass::kF32,
                .reduced_axes = ReducedAxes::kAxes});
  registry.add({.name = "lrn",
                .category = OpCategory::kReduction,
                .attrs = {{"alpha", AttrKind::kFloat, Attribute(1e-4)},
                          {"beta", AttrKind::kFloat, Attribute(0.75)},
                          {"bias", AttrKind::kFloat, Attribute(1.0)},
                          {"size", AttrKind::kInt, std::nullopt}},
                .infer = infer_lrn,
                .reference = lrn_reference,
                .precision = PrecisionClass::kF32});
}

}  // namespace kiln
