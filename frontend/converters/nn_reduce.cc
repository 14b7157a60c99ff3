// ONNX reductions -> kiln reduce_* with `axes` as an attribute (read from the axes input from
// opset 18 on, from opset 13 on for ReduceSum), and ArgMax / ArgMin.
#include "frontend/converters/layout_converters.h"
#include "frontend/converters/nn_converters.h"
#include "ir/error.h"

namespace kiln::onnx_import {
namespace {

struct ReduceOp {
  const char* onnx_name;
  const char* kiln_name;
  int axes_input_since;  // first opset where axes is an input
};

constexpr ReduceOp kReduceOps[] = {
    {"ReduceSum", "reduce_sum", 13},        {"ReduceMean", "reduce_mean", 18},
    {"ReduceMax", "reduce_max", 18},        {"ReduceMin", "reduce_min", 18},
    {"ReduceProd", "reduce_prod", 18},      {"ReduceL1", "reduce_l1", 18},
    {"ReduceL2", "reduce_l2", 18},          {"ReduceSumSquare", "reduce_sum_square", 18},
    {"ReduceLogSum", "reduce_log_sum", 18}, {"ReduceLogSumExp", "reduce_log_sum_exp", 18},
};

const ReduceOp& reduce_op(const NodeImporter& node) {
  for (const ReduceOp& op : kReduceOps) {
    if (node.op_type() == op.onnx_name) return op;
  }
  throw InternalError("convert_reduce registered for ONNX " + node.op_type() +
                      ", which is not a reduction");
}

std::vector<Value*> convert_reduce(NodeImporter& node) {
  const ReduceOp& op = reduce_op(node);
  std::vector<int64_t> axes;
  if (node.opset() >= op.axes_input_since) {
    if (node.has_input(1)) axes = constant_ints(node, 1, "the axes");
  } else {
    axes = node.attr_ints("axes", std::vector<int64_t>{});
  }
  axes = normalized_axes(node, axes, node.input(0)->type().rank());
  return {node.emit1(op.kiln_name, {node.input(0)},
                     {{"axes", axes},
                      {"keepdims", node.attr_int("keepdims", 1)},
                      {"noop_with_empty_axes", node.attr_int("noop_with_empty_axes", 0)}})};
}

std::vector<Value*> convert_arg(NodeImporter& node) {
  const std::string op = node.op_type() == "ArgMax" ? "arg_max" : "arg_min";
  const int64_t rank = node.input(0)->type().rank();
  const int64_t axis = normalized_axes(node, {node.attr_int("axis", 0)}, rank)[0];
  return {node.emit1(op, {node.input(0)},
                     {{"axis", axis},
                      {"keepdims", node.attr_int("keepdims", 1)},
                      {"select_last_index", node.attr_int("select_last_index", 0)}})};
}

}  // namespace

void register_reduce_converters(ConverterTable& table) {
  for (const ReduceOp& op : kReduceOps) {
    table.add(op.onnx_name, 13, convert_reduce);
    if (op.axes_input_since != 13) table.add(op.onnx_name, op.axes_input_since, convert_reduce);
  }
  table.add("ArgMax", 13, convert_arg);
  table.add("ArgMin", 13, convert_arg);
}

}  // namespace kiln::onnx_import
