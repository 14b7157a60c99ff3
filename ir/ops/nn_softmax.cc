// softmax, log_softmax and hardmax (ONNX opset 13 semantics: one axis, default -1). Softmax is
// computed per slice along the axis with the maximum subtracted first for stability, in double;
// hardmax marks the first maximum of each slice with 1.
#include <cmath>

#include "ir/ops/nn_kernel_util.h"
#include "ir/ops/nn_ops.h"
#include "ir/ops/op_helpers.h"

namespace kiln {
namespace {

std::vector<TensorType> infer_softmax(const Node& node) {
  nn::require_operand_dtype(node, 0, nn::is_float_dtype, "input", "a float tensor");
  normalize_axis(node.int_attr("axis"), operand_type(node, 0).rank());
  return {operand_type(node, 0)};
}

// Writes softmax (or log-softmax) of the `count` values at `values` with stride `stride`.
void softmax_slice(const double* values, double* result, int64_t count, int64_t stride, bool log) {
  double max = values[0];
  for (int64_t i = 1; i < count; ++i) max = std::max(max, values[i * stride]);
  double sum = 0;
  for (int64_t i = 0; i < count; ++i) {
    const double exponential = std::exp(values[i * stride] - max);
    result[i * stride] = exponential;
    sum += exponential;
  }
  if (log) {
    const double log_sum = std::log(sum);
    for (int64_t i = 0; i < count; ++i) result[i * stride] = values[i * stride] - max - log_sum;
  } else {
    for (int64_t i = 0; i < count; ++i) result[i * stride] /= sum;
  }
}

// In double for every float dtype: the sum of exponentials is a long sum.
void softmax_reference(const Node& node, std::span<const Tensor* const> inputs,
                       std::span<Tensor> outputs) {
  const Tensor& input = *inputs[0];
  const nn::AxisSlices slices(input.shape(), normalize_axis(node.int_attr("axis"), input.rank()));
  const std::vector<double> x = nn::read_values<double>(input);
  std::vector<double> y(x.size());
  if (slices.count > 0) {
    slices.for_each_start([&](int64_t start) {
      softmax_slice(x.data() + start, y.data() + start, slices.count, slices.inner,
                    node.op() == "log_softmax");
    });
  }
  nn::write_values(outputs[0], y);
}

// 1 at the first maximum of each slice along the axis (a NaN counts as the maximum, as numpy's
// argmax has it), 0 elsewhere.
template <class T>
void run_hardmax(const Node& node, const Tensor& input, Tensor& output) {
  const nn::AxisSlices slices(input.shape(), normalize_axis(node.int_attr("axis"), input.rank()));
  const int64_t count = slices.count;
  const int64_t inner = slices.inner;
  const std::vector<T> x = nn::read_values<T>(input);
  std::vector<T> y(x.size(), T{0});
  if (count > 0) {
    slices.for_each_start([&](int64_t start) {
      const T* values = x.data() + start;
      int64_t best = 0;
      for (int64_t k = 1; k < count && !std::isnan(values[best * inner]); ++k) {
        if (std::isnan(values[k * inner]) || values[k * inner] > values[best * inner]) best = k;
      }
      y[start + best * inner] = T{1};
    });
  }
  nn::write_values(output, y);
}

void hardmax_reference(const Node& node, std::span<const Tensor* const> inputs,
                       std::span<Tensor> outputs) {
  nn::visit_float_compute_type(outputs[0].dtype(), [&](auto tag) {
    run_hardmax<decltype(tag)>(node, *inputs[0], outputs[0]);
  });
}

}  // namespace

void register_nn_softmax_ops(OpRegistry& registry) {
  for (const char* name : {"softmax", "log_softmax"}) {
    registry.add({.name = name,
                  .category = OpCategory::kReduction,
                  .attrs = {{"axis", AttrKind::kInt, Attribute(-1)}},
                  .infer = infer_softmax,
                  .reference = softmax_reference,
                  .precision = PrecisionClass::kF32,
                  .reduced_axes = ReducedAxes::kAxis});
  }
  registry.add({.name = "hardmax",
                .category = OpCategory::kReduction,
                .attrs = {{"axis", AttrKind::kInt, Attribute(-1)}},
                .infer = infer_softmax,
                .reference = hardmax_reference,
                .reduced_axes = ReducedAxes::kAxis});
}

}  // namespace kiln
