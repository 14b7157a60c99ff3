// Type conversion and pass-through: cast (to any kiln dtype) and identity.
#include <cmath>
#include <limits>

#include "ir/ops/elementwise_helpers.h"
#include "ir/ops/layout_copy.h"

namespace kiln {
namespace {

std::vector<TensorType> infer_cast(const Node& node) {
  return {{node.attr("to").as_dtype(), operand_type(node, 0).shape}};
}

// Float -> integer conversion truncates toward zero and saturates to the target's range, with
// NaN becoming 0 (as GPU conversions do; ONNX leaves out-of-range values undefined).
int64_t float_to_integer(double value, DType target) {
  double lo = -0x1p63;
  double hi = 0x1p63;
  switch (target) {
    case DType::kI32:
      lo = std::numeric_limits<int32_t>::min();
      hi = std::numeric_limits<int32_t>::max();
      break;
    case DType::kI8:
      lo = std::numeric_limits<int8_t>::min();
      hi = std::numeric_limits<int8_t>::max();
      break;
    case DType::kU8:
      lo = 0;
      hi = std::numeric_limits<uint8_t>::max();
      break;
    default:
      break;
  }
  if (std::isnan(value)) return 0;
  const double truncated = std::trunc(value);
  if (truncated <= lo) return static_cast<int64_t>(lo);
  if (truncated >= hi)
    return hi == 0x1p63 ? std::numeric_limits<int64_t>::max() : static_cast<int64_t>(hi);
  return static_cast<int64_t>(truncated);
}

void cast_kernel(const Node& node, std::span<const Tensor* const> inputs,
                 std::span<Tensor> outputs) {
  const Tensor& in = *inputs[0];
  Tensor& out = outputs[0];
  const int64_t count = out.num_elements();
  if (!is_float(in.dtype())) {
    const std::vector<int64_t> values = in.to_ints();
    for (int64_t i = 0; i < count; ++i) out.set_int(i, values[i]);
    return;
  }
  const std::vector<double> values = in.to_doubles();
  if (is_integer(out.dtype())) {
    for (int64_t i = 0; i < count; ++i) out.set_int(i, float_to_integer(values[i], out.dtype()));
  } else {
    for (int64_t i = 0; i < count; ++i) out.set_double(i, values[i]);  // bool: nonzero (NaN too)
  }
}

std::vector<TensorType> infer_identity(const Node& node) { return {operand_type(node, 0)}; }

void identity_kernel(const Node& node, std::span<const Tensor* const> inputs,
                     std::span<Tensor> outputs) {
  copy_elements(*inputs[0], outputs[0]);
}

}  // namespace

void register_elementwise_cast_ops(OpRegistry& registry) {
  registry.add({.name = "cast",
                .category = OpCategory::kElementwise,
                .attrs = {{"to", AttrKind::kDType, std::nullopt}},
                .infer = &infer_cast,
                .reference = &cast_kernel});
  registry.add({.name = "identity",
                .category = OpCategory::kElementwise,
                .attrs = {},
                .infer = &infer_identity,
                .reference = &identity_kernel});
}

}  // namespace kiln
