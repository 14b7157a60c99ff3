// cum_sum and cum_prod (ONNX CumSum and CumProd with axis as an attribute): running sums or
// products along one axis, optionally exclusive (each output leaves out its own element: the
// first is 0 or 1) and/or reversed (from the end). Float ones run in double and each output is
// rounded once, when stored; integer ones wrap around.
#include "ir/ops/nn_kernel_util.h"
#include "ir/ops/nn_ops.h"
#include "ir/ops/op_helpers.h"

namespace kiln {
namespace {

std::vector<TensorType> infer_cumulative(const Node& node) {
  nn::require_operand_dtype(node, 0, nn::is_float_or_wide_int_dtype, "x",
                            "a float, i32 or i64 tensor");
  const TensorType& input = operand_type(node, 0);
  normalize_axis(node.int_attr("axis"), input.rank());
  return {input};
}

template <class T, bool kProduct>
void run_cumulative(const Node& node, const Tensor& input, Tensor& output) {
  using Acc = nn::Accumulator<T>;
  const int64_t axis = normalize_axis(node.int_attr("axis"), input.rank());
  const bool exclusive = node.int_attr("exclusive") != 0;
  const bool reverse = node.int_attr("reverse") != 0;
  const nn::AxisSlices slices(input.shape(), axis);
  const std::vector<T> x = nn::read_values<T>(input);
  std::vector<Acc> y(x.size());
  slices.for_each_start([&](int64_t start) {
    Acc running = kProduct ? Acc{1} : Acc{};
    const auto combine = [](Acc a, T b) {
      return kProduct ? wrapping_mul<Acc>(a, static_cast<Acc>(b))
                      : wrapping_add<Acc>(a, static_cast<Acc>(b));
    };
    for (int64_t step = 0; step < slices.count; ++step) {
      const int64_t offset = start + (reverse ? slices.count - 1 - step : step) * slices.inner;
      if (exclusive) {
        y[offset] = running;
        running = combine(running, x[offset]);
      } else {
        running = combine(running, x[offset]);
        y[offset] = running;
      }
    }
  });
  nn::write_values(output, y);
}

template <bool kProduct>
void cumulative_reference(const Node& node, std::span<const Tensor* const> inputs,
                          std::span<Tensor> outputs) {
  nn::visit_compute_type(inputs[0]->dtype(), [&](auto tag) {
    run_cumulative<decltype(tag), kProduct>(node, *inputs[0], outputs[0]);
  });
}

}  // namespace

void register_nn_cumsum_ops(OpRegistry& registry) {
  for (const bool product : {false, true}) {
    registry.add({.name = product ? "cum_prod" : "cum_sum",
                  .category = OpCategory::kOpaque,
                  .attrs = {{"axis", AttrKind::kInt, std::nullopt},
                            {"exclusive", AttrKind::kInt, Attribute(0)},
                            {"reverse", AttrKind::kInt, Attribute(0)}},
                  .infer = infer_cumulative,
                  .reference = product ? cumulative_reference<true> : cumulative_reference<false>,
                  .precision = PrecisionClass::kF32});
  }
}

}  // namespace kiln
