// The reductions: reduce_sum, reduce_mean, reduce_max, reduce_min, reduce_prod, reduce_l1,
// reduce_l2, reduce_sum_square, reduce_log_sum, reduce_log_sum_exp (ONNX ReduceX with `axes` as
// an attribute, keepdims, noop_with_empty_axes), and arg_max / arg_min.
//
// Reducing an empty set gives the identity of the reduction, as the ONNX spec says: 0 for sums
// and norms, 1 for prod, the lowest (highest) value of the dtype for max (min), -inf for the
// log reductions, NaN for mean of floats. As in numpy (and the ONNX reference), a NaN wins:
// reduce_max / reduce_min of a slice holding one is NaN, and arg_max / arg_min pick the first
// NaN (the last with select_last_index). Float reductions accumulate in double and round once,
// when the result is stored.
#include <cmath>
#include <limits>
#include <set>

#include "ir/ops/nn_kernel_util.h"
#include "ir/ops/nn_ops.h"
#include "ir/ops/op_helpers.h"

namespace kiln {
namespace {

using nn::read_values;
using nn::write_values;

enum class Reduction { kSum, kMean, kMax, kMin, kProd, kL1, kL2, kSumSquare, kLogSum, kLogSumExp };

struct ReductionOp {
  const char* name;
  Reduction reduction;
  bool accepts_bool;
};

constexpr ReductionOp kReductions[] = {
    {"reduce_sum", Reduction::kSum, false},
    {"reduce_mean", Reduction::kMean, false},
    {"reduce_max", Reduction::kMax, true},
    {"reduce_min", Reduction::kMin, true},
    {"reduce_prod", Reduction::kProd, false},
    {"reduce_l1", Reduction::kL1, false},
    {"reduce_l2", Reduction::kL2, false},
    {"reduce_sum_square", Reduction::kSumSquare, false},
    {"reduce_log_sum", Reduction::kLogSum, false},
    {"reduce_log_sum_exp", Reduction::kLogSumExp, false},
};

const ReductionOp& reduction_of(const Node& node) {
  for (const ReductionOp& op : kReductions) {
    if (node.op() == op.name) return op;
  }
  throw InternalError("not a reduction: " + node.op());
}

// The reduced axes as flags per input dim, or nullopt for the identity (empty axes with
// noop_with_empty_axes=1).
std::optional<std::vector<bool>> reduced_axes(const Node& node, int64_t rank) {
  const std::vector<int64_t>& axes = node.ints_attr("axes");
  if (axes.empty()) {
    if (node.int_attr("noop_with_empty_axes")) return std::nullopt;
    return std::vector<bool>(static_cast<size_t>(rank), true);
  }
  std::vector<bool> reduced(static_cast<size_t>(rank), false);
  for (int64_t axis : axes) {
    const int64_t normalized = normalize_axis(axis, rank, "axes value");
    if (reduced[normalized])
      throw InputError("attribute 'axes' repeats axis " + std::to_string(axis));
    reduced[normalized] = true;
  }
  return reduced;
}

// The input shape with reduced dims set to 1 (the keepdims=1 result shape).
Shape kept_shape(const Shape& shape, const std::vector<bool>& reduced) {
  Shape kept = shape;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (reduced[d]) kept[d] = 1;
  }
  return kept;
}

Shape result_shape(const Node& node, const Shape& shape, const std::vector<bool>& reduced) {
  if (node.int_attr("keepdims")) return kept_shape(shape, reduced);
  Shape result;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (!reduced[d]) result.push_back(shape[d]);
  }
  return result;
}

std::vector<TensorType> infer_reduce(const Node& node) {
  const TensorType& input = operand_type(node, 0);
  if (input.dtype == DType::kBool && !reduction_of(node).accepts_bool) {
    throw InputError("operand 0 (data) must be a numeric tensor, got bool");
  }
  const std::optional<std::vector<bool>> reduced = reduced_axes(node, input.rank());
  if (!reduced) return {input};
  return {{input.dtype, result_shape(node, input.shape, *reduced)}};
}

// The lowest and highest value of the dtype, in the compute type T.
template <class T>
std::pair<T, T> dtype_range(DType dtype) {
  if constexpr (std::is_floating_point_v<T>) {
    return {-std::numeric_limits<T>::infinity(), std::numeric_limits<T>::infinity()};
  } else {
    const auto [lo, hi] = integer_range(dtype);
    return {static_cast<T>(lo), static_cast<T>(hi)};
  }
}

template <class T>
T initial_value(Reduction reduction, DType dtype) {
  switch (reduction) {
    case Reduction::kMax:
      return dtype_range<T>(dtype).first;
    case Reduction::kMin:
      return dtype_range<T>(dtype).second;
    case Reduction::kProd:
      return T{1};
    default:
      return T{};
  }
}

template <class T>
T combine(Reduction reduction, T acc, T value) {
  switch (reduction) {
    case Reduction::kMax:
      return max_keep_nan(value, acc);
    case Reduction::kMin:
      return min_keep_nan(value, acc);
    case Reduction::kProd:
      return acc * value;
    case Reduction::kL1:
      return acc + (value < T{} ? -value : value);
    case Reduction::kL2:
    case Reduction::kSumSquare:
      return acc + value * value;
    default:  // sum, mean, log_sum; log_sum_exp adds exponentials it computes itself
      return acc + value;
  }
}

template <class T>
T finish(Reduction reduction, T acc, int64_t count) {
  switch (reduction) {
    case Reduction::kMean:
      if constexpr (std::is_integral_v<T>) {
        if (count == 0) return T{};
      }
      return acc / static_cast<T>(count);
    case Reduction::kL2:
      return static_cast<T>(std::sqrt(static_cast<double>(acc)));
    case Reduction::kLogSum:
      return static_cast<T>(std::log(static_cast<double>(acc)));
    default:
      return acc;
  }
}

template <class T>
void run_reduce(const Node& node, const Tensor& input, Tensor& output) {
  using Acc = nn::Accumulator<T>;
  const Reduction reduction = reduction_of(node).reduction;
  const std::optional<std::vector<bool>> reduced = reduced_axes(node, input.rank());
  const std::vector<T> x = read_values<T>(input);
  if (!reduced) {
    write_values(output, x);
    return;
  }
  const Shape kept = kept_shape(input.shape(), *reduced);
  const std::vector<int64_t> target = broadcast_index_map(kept, input.shape());
  const int64_t count = num_elements(kept) == 0 ? 0 : input.num_elements() / num_elements(kept);
  std::vector<Acc> acc(static_cast<size_t>(output.num_elements()),
                       initial_value<Acc>(reduction, input.dtype()));
  if (reduction == Reduction::kLogSumExp) {
    // log Σ exp(x) = max + log Σ exp(x − max), with max = -inf for an empty or all -inf slice.
    std::vector<Acc> max(acc.size(), initial_value<Acc>(Reduction::kMax, input.dtype()));
    for (size_t i = 0; i < x.size(); ++i) max[target[i]] = std::max<Acc>(max[target[i]], x[i]);
    for (size_t i = 0; i < x.size(); ++i) {
      acc[target[i]] += static_cast<Acc>(std::exp(static_cast<double>(x[i] - max[target[i]])));
    }
    for (size_t o = 0; o < acc.size(); ++o) {
      const bool degenerate = std::isinf(static_cast<double>(max[o])) && max[o] < Acc{};
      acc[o] =
          degenerate ? max[o] : max[o] + static_cast<Acc>(std::log(static_cast<double>(acc[o])));
    }
    write_values(output, acc);
    return;
  }
  for (size_t i = 0; i < x.size(); ++i) {
    acc[target[i]] = combine<Acc>(reduction, acc[target[i]], x[i]);
  }
  for (Acc& value : acc) value = finish(reduction, value, count);
  write_values(output, acc);
}

void reduce_reference(const Node& node, std::span<const Tensor* const> inputs,
                      std::span<Tensor> outputs) {
  nn::visit_compute_type(inputs[0]->dtype(), [&](auto tag) {
    run_reduce<decltype(tag)>(node, *inputs[0], outputs[0]);
  });
}

// ---- arg_max / arg_min ------------------------------------------------------------------------

Shape arg_result_shape(const Node& node, const Shape& shape) {
  const int64_t axis =
      normalize_axis(node.int_attr("axis"), static_cast<int64_t>(shape.size()), "axis");
  Shape result = shape;
  if (node.int_attr("keepdims")) {
    result[axis] = 1;
  } else {
    result.erase(result.begin() + axis);
  }
  return result;
}

std::vector<TensorType> infer_arg(const Node& node) {
  nn::require_operand_dtype(node, 0, nn::is_numeric_dtype, "data", "a numeric tensor");
  const Shape& shape = operand_type(node, 0).shape;
  const int64_t axis = normalize_axis(node.int_attr("axis"), static_cast<int64_t>(shape.size()));
  if (shape[axis] == 0) throw InputError("cannot take arg_max/arg_min over an empty axis");
  return {{DType::kI64, arg_result_shape(node, shape)}};
}

template <class T>
void run_arg(const Node& node, const Tensor& input, Tensor& output) {
  const Shape& shape = input.shape();
  const int64_t axis = normalize_axis(node.int_attr("axis"), input.rank());
  const bool last = node.int_attr("select_last_index") != 0;
  const bool max = node.op() == "arg_max";
  const auto [outer, count, inner] = nn::AxisSlices(shape, axis);
  const std::vector<T> x = read_values<T>(input);
  std::vector<int64_t> result(static_cast<size_t>(outer * inner));
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i = 0; i < inner; ++i) {
      const T* values = x.data() + o * count * inner + i;
      int64_t best = 0;
      for (int64_t j = 1; j < count; ++j) {
        const T candidate = values[j * inner], current = values[best * inner];
        const bool tie = candidate == current || (is_nan_value(candidate) && is_nan_value(current));
        // A NaN beats every number and is beaten by nothing.
        const bool better =
            !is_nan_value(current) &&
            (is_nan_value(candidate) || (max ? candidate > current : candidate < current));
        if (better || (last && tie)) best = j;
      }
      result[o * inner + i] = best;
    }
  }
  write_values(output, result);
}

void arg_reference(const Node& node, std::span<const Tensor* const> inputs,
                   std::span<Tensor> outputs) {
  nn::visit_compute_type(inputs[0]->dtype(),
                         [&](auto tag) { run_arg<decltype(tag)>(node, *inputs[0], outputs[0]); });
}

}  // namespace

void register_nn_reduce_ops(OpRegistry& registry) {
  for (const ReductionOp& op : kReductions) {
    registry.add({.name = op.name,
                  .category = OpCategory::kReduction,
                  .attrs = {{"axes", AttrKind::kInts, Attribute(std::vector<int64_t>{})},
                            {"keepdims", AttrKind::kInt, Attribute(1)},
                            {"noop_with_empty_axes", AttrKind::kInt, Attribute(0)}},
                  .infer = infer_reduce,
                  .reference = reduce_reference,
                  .precision = PrecisionClass::kF32,
                  .reduced_axes = ReducedAxes::kAxesOrAll});
  }
  for (const char* name : {"arg_max", "arg_min"}) {
    registry.add({.name = name,
                  .category = OpCategory::kReduction,
                  .attrs = {{"axis", AttrKind::kInt, Attribute(0)},
                            {"keepdims", AttrKind::kInt, Attribute(1)},
                            {"select_last_index", AttrKind::kInt, Attribute(0)}},
                  .infer = infer_arg,
                  .reference = arg_reference,
                  .reduced_axes = ReducedAxes::kAxis});
  }
}

}  // namespace kiln
