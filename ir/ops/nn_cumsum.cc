// cum_sum (ONNX CumSum with axis as an attribute): running sums along one axis, optionally
// exclusive (each output leaves out its own element) and/or reversed (summing from the end).
// Float sums run in double and each output is rounded once, when stored.
#include "ir/ops/nn_kernel_util.h"
#include "ir/ops/nn_ops.h"
#include "ir/ops/op_helpers.h"

namespace kiln {
namespace {

std::vector<TensorType> infer_cum_sum(const Node& node) {
  nn::require_operand_dtype(node, 0, nn::is_float_or_wide_int_dtype, "x",
                            "a float, i32 or i64 tensor");
  const TensorType& input = operand_type(node, 0);
  normalize_axis(node.int_attr("axis"), input.rank());
  return {input};
}

template <class T>
void run_cum_sum(const Node& node, const Tensor& input, Tensor& output) {
  using Acc = nn::Accumulator<T>;
  const int64_t axis = normalize_axis(node.int_attr("axis"), input.rank());
  const bool exclusive = node.int_attr("exclusive") != 0;
  const bool reverse = node.int_attr("reverse") != 0;
  const nn::AxisSlices slices(input.shape(), axis);
  const std::vector<T> x = nn::read_values<T>(input);
  std::vector<Acc> y(x.size());
  slices.for_each_start([&](int64_t start) {
    Acc sum{};
    for (int64_t step = 0; step < slices.count; ++step) {
      const int64_t offset = start + (reverse ? slices.count - 1 - step : step) * slices.inner;
      if (exclusive) {
        y[offset] = sum;
        sum = wrapping_add<Acc>(sum, x[offset]);
      } else {
        sum = wrapping_add<Acc>(sum, x[offset]);
        y[offset] = sum;
      }
    }
  });
  nn::write_values(output, y);
}

void cum_sum_reference(const Node& node, std::span<const Tensor* const> inputs,
                       std::span<Tensor> outputs) {
  nn::visit_compute_type(inputs[0]->dtype(), [&](auto tag) {
    run_cum_sum<decltype(tag)>(node, *inputs[0], outputs[0]);
  });
}

}  // namespace

void register_nn_cumsum_ops(OpRegistry& registry) {
  registry.add({.name = "cum_sum",
                .category = OpCategory::kOpaque,
                .attrs = {{"axis", AttrKind::kInt, std::nullopt},
                          {"exclusive", AttrKind::kInt, Attribute(0)},
                          {"reverse", AttrKind::kInt, Attribute(0)}},
                .infer = infer_cum_sum,
                .reference = cum_sum_reference,
                .precision = PrecisionClass::kF32});
}

}  // namespace kiln
