// top_k (ONNX TopK with k as an attribute): the k largest (or smallest) elements along an axis
// and their i64 indices, sorted, equal values ordered by lower index as the spec requires.
// Results are sorted even with sorted=0, which leaves the order to the implementation.
#include <algorithm>
#include <numeric>

#include "ir/ops/nn_kernel_util.h"
#include "ir/ops/nn_ops.h"
#include "ir/ops/op_helpers.h"

namespace kiln {
namespace {

std::vector<TensorType> infer_top_k(const Node& node) {
  nn::require_operand_dtype(node, 0, nn::is_numeric_dtype, "X", "a numeric tensor");
  TensorType values = operand_type(node, 0);
  const int64_t axis = normalize_axis(node.int_attr("axis"), values.rank());
  const int64_t k = node.int_attr("k");
  if (k < 0 || k > values.shape[axis]) {
    throw InputError("k = " + std::to_string(k) + " is outside [0, " +
                     std::to_string(values.shape[axis]) + "] (the size of axis " +
                     std::to_string(axis) + ")");
  }
  values.shape[axis] = k;
  return {values, {DType::kI64, values.shape}};
}

template <class T>
void run_top_k(const Node& node, const Tensor& input, std::span<Tensor> outputs) {
  const Shape& shape = input.shape();
  const int64_t axis = normalize_axis(node.int_attr("axis"), input.rank());
  const int64_t k = node.int_attr("k");
  const bool largest = node.int_attr("largest") != 0;
  // Plain variables, not a structured binding: clang 14 cannot capture bindings in a lambda.
  const nn::AxisSlices slices(shape, axis);
  const int64_t outer = slices.outer, count = slices.count, inner = slices.inner;
  const std::vector<T> x = nn::read_values<T>(input);
  std::vector<T> values(static_cast<size_t>(outer * k * inner));
  std::vector<int64_t> indices(values.size());
  std::vector<int64_t> order(static_cast<size_t>(count));
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i = 0; i < inner; ++i) {
      const T* slice = x.data() + o * count * inner + i;
      std::iota(order.begin(), order.end(), 0);
      // NaN ranks above every number, as in the ONNX reference (numpy sorts NaN last): first
      // for largest, last for smallest. The order must be strict and weak for stable_sort.
      const auto before = [&](int64_t a, int64_t b) {
        const T u = slice[a * inner], v = slice[b * inner];
        if (is_nan_value(u) || is_nan_value(v)) {
          return is_nan_value(largest ? u : v) && !is_nan_value(largest ? v : u);
        }
        return largest ? u > v : u < v;
      };
      std::stable_sort(order.begin(), order.end(), before);
      for (int64_t j = 0; j < k; ++j) {
        const int64_t out = (o * k + j) * inner + i;
        values[out] = slice[order[j] * inner];
        indices[out] = order[j];
      }
    }
  }
  nn::write_values(outputs[0], values);
  nn::write_values(outputs[1], indices);
}

void top_k_reference(const Node& node, std::span<const Tensor* const> inputs,
                     std::span<Tensor> outputs) {
  nn::visit_compute_type(inputs[0]->dtype(),
                         [&](auto tag) { run_top_k<decltype(tag)>(node, *inputs[0], outputs); });
}

}  // namespace

void register_nn_topk_ops(OpRegistry& registry) {
  registry.add({.name = "top_k",
                .category = OpCategory::kOpaque,
                .attrs = {{"k", AttrKind::kInt, std::nullopt},
                          {"axis", AttrKind::kInt, Attribute(-1)},
                          {"largest", AttrKind::kInt, Attribute(1)},
                          {"sorted", AttrKind::kInt, Attribute(1)}},
                .num_results = 2,
                .infer = infer_top_k,
                .reference = top_k_reference});
}

}  // namespace kiln
