// The plans of the reduction ops (see the header), matching their reference kernels
// (ir/ops/nn_reduce.cc, nn_softmax.cc, nn_norm.cc, nn_channel_norm.cc, nn_pool.cc): floats of 16
// and 32 bits accumulate in float, f64 in double, integers and bool in long long; max and min
// propagate NaN; an empty row gives the reduction's identity.
#include "codegen/reduction_ops.h"

#include <fmt/format.h>

#include <limits>

#include "codegen/cuda_expr.h"
#include "ir/error.h"
#include "ir/op_registry.h"
#include "ir/ops/op_helpers.h"

namespace kiln::codegen {
namespace {

// The reduce_* family: the ops whose axes are the `axes` attribute or all of them.
bool is_reduce_family(const Node& node) {
  return node.info().reduced_axes == ReducedAxes::kAxesOrAll;
}

bool is_layer_norm(const Node& node) {
  return node.op() == "layer_normalization" || node.op() == "layer_normalization_with_stats";
}

// The dtype accumulators have: float for 16- and 32-bit floats, double for f64, long long for
// integers and bool (global_max_pool computes even i8/u8 in float, as its reference does).
DType accumulation_dtype(const Node& node) {
  if (node.op() == "group_normalization") {
    return node.attr("stash_type").as_dtype() == DType::kF64 ? DType::kF64 : DType::kF32;
  }
  const DType input = node.operand(0)->type().dtype;
  if (input == DType::kF64) return DType::kF64;
  if (is_float(input) || node.op() == "global_max_pool") return DType::kF32;
  return DType::kI64;
}

// The lowest (or highest) value of the input's dtype, as a literal of the accumulator's type.
std::string extreme(const Node& node, bool lowest) {
  const DType accumulator = accumulation_dtype(node);
  if (is_float(accumulator)) {
    return cuda_literal(
        lowest ? -std::numeric_limits<double>::infinity() : std::numeric_limits<double>::infinity(),
        accumulator);
  }
  const auto [lo, hi] = integer_range(node.operand(0)->type().dtype);
  return cuda_integer_literal(lowest ? lo : hi, DType::kI64);
}

// `expression` computed in double and converted back, for integer accumulators.
std::string via_double(const std::string& function, const std::string& argument,
                       const std::string& type, bool integer) {
  if (!integer) return function + "(" + argument + ")";
  return "static_cast<" + type + ">(" + function + "(static_cast<double>(" + argument + ")))";
}

// A result per row: every element of the op's result reads `variable`.
std::function<void(ElementEmitter&)> row_result(const Node& node, std::string variable) {
  return [&node, variable](ElementEmitter& e) {
    e.set_override(node.result(0), [variable](const std::string&) { return variable; });
  };
}

// With noop_with_empty_axes and no axes a reduce op returns its input unchanged, whatever it
// would compute over one element.
bool is_noop(const Node& node) {
  return node.ints_attr("axes").empty() && node.int_attr("noop_with_empty_axes") != 0;
}

ReductionPlan plan_reduce(const Node& node, int64_t columns) {
  const std::string op = is_noop(node) ? "reduce_sum" : node.op();
  const DType dtype = accumulation_dtype(node);
  const std::string a(cuda_compute_type(dtype));
  const bool integer = !is_float(dtype);
  const std::string count = cuda_literal(static_cast<double>(columns), dtype);
  ReductionPass pass{.accumulator = "row_acc",
                     .type = a,
                     .initial = cuda_literal(0, dtype),
                     .combine = Combine::kSum,
                     .term = [](const std::string& x) { return x; }};
  std::string result = "row_acc";
  if (op == "reduce_mean") {
    result = integer && columns == 0 ? "0LL" : "row_acc / " + count;
  } else if (op == "reduce_max" || op == "reduce_min") {
    pass.combine = op == "reduce_max" ? Combine::kMax : Combine::kMin;
    pass.initial = extreme(node, op == "reduce_max");
  } else if (op == "reduce_prod") {
    pass.combine = Combine::kProd;
    pass.initial = cuda_literal(1, dtype);
  } else if (op == "reduce_l1") {
    pass.term = [](const std::string& x) { return "(" + x + " < 0 ? -" + x + " : " + x + ")"; };
  } else if (op == "reduce_l2" || op == "reduce_sum_square") {
    pass.term = [](const std::string& x) { return x + " * " + x; };
    if (op == "reduce_l2") result = via_double("sqrt", "row_acc", a, integer);
  } else if (op == "reduce_log_sum") {
    result = via_double("log", "row_acc", a, integer);
  }
  pass.finish = {fmt::format("const {} row_result = {};", a, result)};
  return {.passes = {pass}, .install_results = row_result(node, "row_result")};
}

// Pass 1: row_max = max x; pass 2: row_sum = Σ exp(x − row_max) (through double for an
// integer accumulator). Softmax, log_softmax and log-sum-exp start so.
std::vector<ReductionPass> max_then_exp_sum(const Node& node) {
  const DType dtype = accumulation_dtype(node);
  const std::string a(cuda_compute_type(dtype));
  const bool integer = !is_float(dtype);
  ReductionPass max{.accumulator = "row_max",
                    .type = a,
                    .initial = extreme(node, true),
                    .combine = Combine::kMax,
                    .term = [](const std::string& x) { return x; }};
  ReductionPass sum{.accumulator = "row_sum",
                    .type = a,
                    .initial = cuda_literal(0, dtype),
                    .combine = Combine::kSum,
                    .term = [a, integer](const std::string& x) {
                      return via_double("exp", x + " - row_max", a, integer);
                    }};
  return {max, sum};
}

// log Σ exp(x) = max + log Σ exp(x − max); -inf for an empty or all -inf row.
ReductionPlan plan_log_sum_exp(const Node& node) {
  const DType dtype = accumulation_dtype(node);
  const std::string a(cuda_compute_type(dtype));
  const bool integer = !is_float(dtype);
  std::vector<ReductionPass> passes = max_then_exp_sum(node);
  const std::string log_sum = via_double("log", "row_sum", a, integer);
  passes[1].finish = {integer ? fmt::format("const {} row_result = row_max + {};", a, log_sum)
                              : fmt::format("const {} row_result = isinf(row_max) && row_max < 0 ? "
                                            "row_max : row_max + {};",
                                            a, log_sum)};
  return {.passes = passes, .install_results = row_result(node, "row_result")};
}

ReductionPlan plan_arg(const Node& node) {
  const std::string t(cuda_compute_type(node.operand(0)->type().dtype));
  ReductionPass best{.accumulator = "row_best",
                     .type = t,
                     .initial = "0",
                     .combine = node.op() == "arg_min" ? Combine::kArgMin : Combine::kArgMax,
                     .term = [](const std::string& x) { return x; }};
  return {.passes = {best},
          .select_last =
              node.info().find_attr("select_last_index") && node.int_attr("select_last_index") != 0,
          .install_results = row_result(node, "row_best_index")};
}

// hardmax: 1 at the row's first maximum (a NaN counts as the maximum), 0 elsewhere.
ReductionPlan plan_hardmax(const Node& node) {
  ReductionPlan plan = plan_arg(node);
  const DType dtype = node.result(0)->type().dtype;
  plan.install_results = [&node, dtype](ElementEmitter& e) {
    e.set_override(node.result(0), [&e, &node, dtype](const std::string& index) {
      const Shape& shape = node.operand(0)->type().shape;
      const std::string position = e.coordinate(
          index, shape, normalize_axis(node.int_attr("axis"), static_cast<int64_t>(shape.size())));
      return e.temp(cuda_compute_type(dtype), position + " == row_best_index ? " +
                                                  cuda_literal(1, dtype) + " : " +
                                                  cuda_literal(0, dtype));
    });
  };
  return plan;
}

ReductionPlan plan_softmax(const Node& node) {
  const std::string a(cuda_compute_type(accumulation_dtype(node)));
  std::vector<ReductionPass> passes = max_then_exp_sum(node);
  const bool log = node.op() == "log_softmax";
  // Softmax multiplies by the sum's reciprocal (within an ulp of the reference's division,
  // and a division per element costs more than the exponential).
  passes[1].finish = {log ? fmt::format("const {} row_log_sum = log(row_sum);", a)
                          : fmt::format("const {} row_inv_sum = {} / row_sum;", a,
                                        cuda_literal(1, accumulation_dtype(node)))};
  const Value* input = node.operand(0);
  return {.passes = passes, .install_results = [&node, input, a, log](ElementEmitter& e) {
            e.set_override(node.result(0), [&e, input, a, log](const std::string& index) {
              const std::string x = e.element(input, index);
              return e.temp(a, log ? x + " - row_max - row_log_sum"
                                   : "exp(" + x + " - row_max) * row_inv_sum");
            });
          },
          .install_results_from_terms = log ? std::function<void(ElementEmitter&)>()
                                            : [&node, input, a](ElementEmitter& e) {
                                                e.set_override(node.result(0), [&e, input, a](
                                                                                   const std::string& index) {
                                                  return e.temp(a, e.element(input, index) +
                                                                       " * row_inv_sum");
                                                });
                                              }};
}

// Pass 1: row_mean; pass 2: the variance around it, finished into `deviation_finish` (which
// defines row_inv_std for the norms, row_deviation for mean_variance_normalization).
std::vector<ReductionPass> mean_then_variance(const Node& node, int64_t columns) {
  const DType dtype = accumulation_dtype(node);
  const std::string a(cuda_compute_type(dtype));
  const std::string count = cuda_literal(static_cast<double>(columns), dtype);
  ReductionPass sum{.accumulator = "row_sum",
                    .type = a,
                    .initial = cuda_literal(0, dtype),
                    .combine = Combine::kSum,
                    .term = [](const std::string& x) { return x; }};
  sum.finish = {fmt::format("const {} row_mean = row_sum / {};", a, count)};
  ReductionPass squares{.accumulator = "row_square_sum",
                        .type = a,
                        .initial = cuda_literal(0, dtype),
                        .combine = Combine::kSum,
                        .term = [](const std::string& x) {
                          return "(" + x + " - row_mean) * (" + x + " - row_mean)";
                        }};
  if (node.op() == "mean_variance_normalization") {
    // (x - mean) / (sqrt(variance) + 1e-9), as ONNX's function body defines it.
    squares.finish = {fmt::format("const {} row_deviation = sqrt(row_square_sum / {}) + {};", a,
                                  count, cuda_literal(1e-9, dtype))};
  } else {
    squares.finish = {fmt::format("const {} row_inv_std = {} / sqrt(row_square_sum / {} + {});", a,
                                  cuda_literal(1, dtype), count,
                                  cuda_literal(node.float_attr("epsilon"), dtype))};
  }
  return {sum, squares};
}

// layer_normalization: scale and bias broadcast (numpy rules) to X.
ReductionPlan plan_layer_norm(const Node& node, int64_t columns) {
  const std::string a(cuda_compute_type(accumulation_dtype(node)));
  return {.passes = mean_then_variance(node, columns),
          .install_results = [&node, a](ElementEmitter& e) {
            const Value* input = node.operand(0);
            const Shape& shape = input->type().shape;
            e.set_override(node.result(0), [&e, &node, input, &shape, a](const std::string& index) {
              std::string value = "(" + e.element(input, index) + " - row_mean) * row_inv_std";
              for (size_t k = 1; k < node.operands().size(); ++k) {
                const Value* operand = node.operand(k);
                const std::string element =
                    e.element(operand, e.broadcast_index(index, shape, operand->type().shape));
                value = k == 1 ? value + " * " + element : value + " + " + element;
              }
              return e.temp(a, value);
            });
            if (node.results().size() == 3) {
              e.set_override(node.result(1), [](const std::string&) { return "row_mean"; });
              e.set_override(node.result(2), [](const std::string&) { return "row_inv_std"; });
            }
          }};
}

// rms_normalization: one pass, row_inv_rms = 1 / sqrt(Σ x² / columns + epsilon); the result
// x · row_inv_rms · scale, the scale broadcast (numpy rules) to X.
ReductionPlan plan_rms_norm(const Node& node, int64_t columns) {
  const DType dtype = accumulation_dtype(node);
  const std::string a(cuda_compute_type(dtype));
  ReductionPass squares{.accumulator = "row_square_sum",
                        .type = a,
                        .initial = cuda_literal(0, dtype),
                        .combine = Combine::kSum,
                        .term = [](const std::string& x) { return x + " * " + x; }};
  squares.finish = {fmt::format("const {} row_inv_rms = {} / sqrt(row_square_sum / {} + {});", a,
                                cuda_literal(1, dtype),
                                cuda_literal(static_cast<double>(columns), dtype),
                                cuda_literal(node.float_attr("epsilon"), dtype))};
  return {.passes = {squares}, .install_results = [&node, a](ElementEmitter& e) {
            const Value* input = node.operand(0);
            const Value* scale = node.operand(1);
            e.set_override(node.result(0), [&e, input, scale, a](const std::string& index) {
              const std::string element = e.element(
                  scale, e.broadcast_index(index, input->type().shape, scale->type().shape));
              return e.temp(a, e.element(input, index) + " * row_inv_rms * " + element);
            });
          }};
}

// instance_normalization: scale and bias per channel (axis 1).
ReductionPlan plan_instance_norm(const Node& node, int64_t columns) {
  const std::string a(cuda_compute_type(accumulation_dtype(node)));
  return {.passes = mean_then_variance(node, columns),
          .install_results = [&node, a](ElementEmitter& e) {
            e.set_override(node.result(0), [&e, &node, a](const std::string& index) {
              const std::string channel = e.coordinate(index, node.operand(0)->type().shape, 1);
              // Named in turn (the bias first, as kiln has emitted it): the operands of + may be
              // evaluated in any order, and each element() emits its loads, so the kernel text
              // would depend on the compiler that built kiln.
              const std::string bias = e.element(node.operand(2), channel);
              const std::string scale = e.element(node.operand(1), channel);
              const std::string x = e.element(node.operand(0), index);
              return e.temp(a, "(" + x + " - row_mean) * row_inv_std * " + scale + " + " + bias);
            });
          }};
}

// group_normalization: statistics in the stash type, then scale and bias per channel in X's
// compute type.
ReductionPlan plan_group_norm(const Node& node, int64_t columns) {
  const std::string t(cuda_compute_type(node.operand(0)->type().dtype));
  return {.passes = mean_then_variance(node, columns),
          .install_results = [&node, t](ElementEmitter& e) {
            e.set_override(node.result(0), [&e, &node, t](const std::string& index) {
              const std::string channel = e.coordinate(index, node.operand(0)->type().shape, 1);
              // Named in turn, as in plan_instance_norm; the bias first, as kiln has emitted it.
              const std::string bias = e.element(node.operand(2), channel);
              const std::string scale = e.element(node.operand(1), channel);
              const std::string x = e.element(node.operand(0), index);
              return e.temp(t, scale + " * static_cast<" + t + ">((" + x +
                                   " - row_mean) * row_inv_std) + " + bias);
            });
          }};
}

ReductionPlan plan_mean_variance_norm(const Node& node, int64_t columns) {
  const std::string a(cuda_compute_type(accumulation_dtype(node)));
  return {.passes = mean_then_variance(node, columns),
          .install_results = [&node, a](ElementEmitter& e) {
            e.set_override(node.result(0), [&e, &node, a](const std::string& index) {
              return e.temp(
                  a, "(" + e.element(node.operand(0), index) + " - row_mean) / row_deviation");
            });
          }};
}

ReductionPlan plan_global_pool(const Node& node, int64_t columns) {
  const DType dtype = accumulation_dtype(node);
  const std::string a(cuda_compute_type(dtype));
  const bool max = node.op() == "global_max_pool";
  ReductionPass pass{.accumulator = "row_acc",
                     .type = a,
                     .initial = max ? extreme(node, true) : cuda_literal(0, dtype),
                     .combine = max ? Combine::kMax : Combine::kSum,
                     .term = [](const std::string& x) { return x; }};
  pass.finish = {fmt::format(
      "const {} row_result = {};", a,
      max ? "row_acc" : "row_acc / " + cuda_literal(static_cast<double>(columns), dtype))};
  return {.passes = {pass}, .install_results = row_result(node, "row_result")};
}

}  // namespace

Shape reduction_view(const Node& node) {
  const Shape& shape = node.operand(0)->type().shape;
  if (node.info().reduced_axes != ReducedAxes::kWithinGroups) return shape;
  const int64_t groups = node.int_attr("num_groups");
  return {shape[0], groups, num_elements(Shape(shape.begin() + 1, shape.end())) / groups};
}

std::vector<bool> reduced_axes(const Node& node) {
  const Shape shape = reduction_view(node);
  const int64_t rank = static_cast<int64_t>(shape.size());
  std::vector<bool> reduced(shape.size(), false);
  switch (node.info().reduced_axes) {
    case ReducedAxes::kAxesOrAll:
      if (node.ints_attr("axes").empty() && !node.int_attr("noop_with_empty_axes")) {
        reduced.assign(shape.size(), true);
      }
      [[fallthrough]];
    case ReducedAxes::kAxes:
      for (int64_t axis : node.ints_attr("axes")) reduced[normalize_axis(axis, rank)] = true;
      break;
    case ReducedAxes::kAxis:
      reduced[normalize_axis(node.int_attr("axis"), rank)] = true;
      break;
    case ReducedAxes::kFromAxis:
      for (int64_t d = normalize_axis(node.int_attr("axis"), rank); d < rank; ++d) {
        reduced[d] = true;
      }
      break;
    case ReducedAxes::kSpatial:
      for (int64_t d = 2; d < rank; ++d) reduced[d] = true;
      break;
    case ReducedAxes::kWithinGroups:
      reduced[2] = true;
      break;
    case ReducedAxes::kNone:
      throw UnsupportedError(node.describe() + ": the GPU backend has no " + node.op() +
                             " kernel yet");
  }
  return reduced;
}

ReductionPlan plan_reduction(const Node& node, int64_t columns) {
  const std::string& op = node.op();
  if (op == "reduce_log_sum_exp" && !is_noop(node)) return plan_log_sum_exp(node);
  if (is_reduce_family(node)) return plan_reduce(node, columns);
  if (op == "arg_max" || op == "arg_min") return plan_arg(node);
  if (op == "softmax" || op == "log_softmax") return plan_softmax(node);
  if (is_layer_norm(node)) return plan_layer_norm(node, columns);
  if (op == "rms_normalization") return plan_rms_norm(node, columns);
  if (op == "instance_normalization") return plan_instance_norm(node, columns);
  if (op == "group_normalization") return plan_group_norm(node, columns);
  if (op == "mean_variance_normalization") return plan_mean_variance_norm(node, columns);
  if (op == "hardmax") return plan_hardmax(node);
  if (op == "global_average_pool" || op == "global_max_pool")
    return plan_global_pool(node, columns);
  throw UnsupportedError(node.describe() + ": the GPU backend has no " + op + " kernel yet");
}

}  // namespace kiln::codegen
