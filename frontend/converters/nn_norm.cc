// ONNX normalization and softmax converters: BatchNormalization (inference only),
// InstanceNormalization, LayerNormalization (with its optional Mean/InvStdDev outputs),
// GroupNormalization (opset 21: per-channel scale and bias), RMSNormalization (opset 23),
// MeanVarianceNormalization, LRN, LpNormalization (x over its L1 or L2 norm along an axis),
// and Softmax, LogSoftmax and Hardmax (opset 13: one axis).
#include "frontend/converters/layout_converters.h"
#include "frontend/converters/nn_converters.h"

namespace kiln::onnx_import {
namespace {

std::vector<Value*> convert_batch_normalization(NodeImporter& node) {
  if (node.attr_int("training_mode", 0) != 0) {
    node.unsupported("training_mode=1 is not supported (kiln compiles inference graphs)");
  }
  for (size_t i = 1; i < node.num_outputs(); ++i) {
    if (node.has_output(i)) {
      node.fail("output " + std::to_string(i) +
                " (running mean/var) exists only in training mode, which kiln does not support");
    }
  }
  std::vector<Value*> operands;
  for (size_t i = 0; i < 5; ++i) operands.push_back(node.input(i));
  return {
      node.emit1("batch_normalization", operands, {{"epsilon", node.attr_float("epsilon", 1e-5)}})};
}

std::vector<Value*> convert_instance_normalization(NodeImporter& node) {
  return {node.emit1("instance_normalization", {node.input(0), node.input(1), node.input(2)},
                     {{"epsilon", node.attr_float("epsilon", 1e-5)}})};
}

std::vector<Value*> convert_layer_normalization(NodeImporter& node) {
  std::vector<Value*> operands = {node.input(0), node.input(1)};
  if (node.has_input(2)) operands.push_back(node.input(2));
  AttributeMap attrs = {{"axis", node.attr_int("axis", -1)},
                        {"epsilon", node.attr_float("epsilon", 1e-5)}};
  if (!node.has_output(1) && !node.has_output(2)) {
    return {node.emit1("layer_normalization", operands, attrs)};
  }
  attrs["stash_type"] = float_dtype_attr(node, "stash_type", 1);
  std::vector<Value*> results = node.emit("layer_normalization_with_stats", operands, attrs);
  results.resize(node.num_outputs());
  return results;
}

// x / sqrt(mean(x^2 over axes axis..) + epsilon) * scale. stash_type is the least precision of the
// statistics (checked to name a float type); kiln's kernels compute them in f32 or more, as
// LayerNormalization's.
std::vector<Value*> convert_rms_normalization(NodeImporter& node) {
  float_dtype_attr(node, "stash_type", 1);
  return {node.emit1("rms_normalization", {node.input(0), node.input(1)},
                     {{"axis", node.attr_int("axis", -1)},
                      {"epsilon", node.attr_float("epsilon", 1e-5)}})};
}

std::vector<Value*> convert_group_normalization(NodeImporter& node) {
  return {node.emit1("group_normalization", {node.input(0), node.input(1), node.input(2)},
                     {{"num_groups", node.attr_int("num_groups")},
                      {"epsilon", node.attr_float("epsilon", 1e-5)},
                      {"stash_type", float_dtype_attr(node, "stash_type", 1)}})};
}

std::vector<Value*> convert_mean_variance_normalization(NodeImporter& node) {
  const std::vector<int64_t> axes = normalized_axes(
      node, node.attr_ints("axes", std::vector<int64_t>{0, 2, 3}), node.input(0)->type().rank());
  return {node.emit1("mean_variance_normalization", {node.input(0)}, {{"axes", axes}})};
}

std::vector<Value*> convert_lrn(NodeImporter& node) {
  return {node.emit1("lrn", {node.input(0)},
                     {{"alpha", node.attr_float("alpha", 1e-4)},
                      {"beta", node.attr_float("beta", 0.75)},
                      {"bias", node.attr_float("bias", 1.0)},
                      {"size", node.attr_int("size")}})};
}

// Softmax, LogSoftmax and Hardmax.
std::vector<Value*> convert_softmax(NodeImporter& node) {
  const std::string op = node.op_type() == "Softmax"      ? "softmax"
                         : node.op_type() == "LogSoftmax" ? "log_softmax"
                                                          : "hardmax";
  return {node.emit1(op, {node.input(0)}, {{"axis", node.attr_int("axis", -1)}})};
}

// LpNormalization: x / reduce_l{p}(x) along `axis`, the norm kept as a size-1 axis. A zero norm
// (every element along the axis 0) gives zeros, as ONNX's node tests expect, not 0 / 0: the
// division is by 1 there.
std::vector<Value*> convert_lp_normalization(NodeImporter& node) {
  Value* x = node.input(0);
  const int64_t rank = static_cast<int64_t>(x->type().shape.size());
  const int64_t p = node.attr_int("p", 2);
  if (p != 1 && p != 2) node.fail("p must be 1 or 2, not " + std::to_string(p));
  if (rank == 0) node.fail("the input must have an axis to normalize along");
  const std::vector<int64_t> axis = normalized_axes(node, {node.attr_int("axis", -1)}, rank);
  Value* norm = node.emit1(p == 1 ? "reduce_l1" : "reduce_l2", {x},
                           {{"axes", axis}, {"keepdims", int64_t{1}}});
  const auto scalar = [&](double value) { return node.scalar_constant(x->type().dtype, value); };
  Value* zero_norm = node.emit1("equal", {norm, scalar(0.0)});
  return {node.emit1("div", {x, node.emit1("where", {zero_norm, scalar(1.0), norm})})};
}

}  // namespace

void register_norm_converters(ConverterTable& table) {
  // BatchNormalization-9 (in force at 13) and -14 (adds training_mode, which kiln refuses).
  table.add("BatchNormalization", 13, convert_batch_normalization);
  table.add("BatchNormalization", 14, convert_batch_normalization);
  table.add("InstanceNormalization", 13, convert_instance_normalization);
  table.add("LayerNormalization", 17, convert_layer_normalization);
  table.add("Softmax", 13, convert_softmax);
  table.add("LogSoftmax", 13, convert_softmax);
  table.add("Hardmax", 13, convert_softmax);
  table.add("GroupNormalization", 21, convert_group_normalization);
  table.add("RMSNormalization", 23, convert_rms_normalization);
  table.add("LpNormalization", 1, convert_lp_normalization);
  table.add("MeanVarianceNormalization", 13, convert_mean_variance_normalization);
  table.add("LRN", 13, convert_lrn);
}

}  // namespace kiln::onnx_import
