// ONNX pooling converters: GlobalAveragePool, GlobalMaxPool, AveragePool, MaxPool (its optional
// Indices output selects kiln max_pool_with_indices), LpPool (a depthwise conv of ones over
// |x|^p). auto_pad becomes explicit pads.
#include <algorithm>

#include "frontend/converters/nn_converters.h"

namespace kiln::onnx_import {
namespace {

std::vector<Value*> convert_global_pool(NodeImporter& node) {
  const std::string op =
      node.op_type() == "GlobalAveragePool" ? "global_average_pool" : "global_max_pool";
  return {node.emit1(op, {node.input(0)})};
}

AttributeMap pool_attrs(const NodeImporter& node) {
  const std::vector<int64_t> kernel = node.attr_ints("kernel_shape");
  const WindowAttrs window = window_attrs(node, node.input(0)->type().shape, kernel);
  const int64_t ceil_mode = node.attr_int("ceil_mode", 0);
  if (ceil_mode && node.attr_string("auto_pad", "NOTSET") != "NOTSET") {
    node.fail("ceil_mode=1 cannot be combined with auto_pad");
  }
  return {{"kernel_shape", kernel},
          {"strides", window.strides},
          {"pads", window.pads},
          {"dilations", window.dilations},
          {"ceil_mode", ceil_mode}};
}

std::vector<Value*> convert_average_pool(NodeImporter& node) {
  AttributeMap attrs = pool_attrs(node);
  attrs["count_include_pad"] = node.attr_int("count_include_pad", 0);
  return {node.emit1("average_pool", {node.input(0)}, attrs)};
}

std::vector<Value*> convert_max_pool(NodeImporter& node) {
  AttributeMap attrs = pool_attrs(node);
  attrs["storage_order"] = node.attr_int("storage_order", 0);
  if (node.has_output(1)) return node.emit("max_pool_with_indices", {node.input(0)}, attrs);
  return {node.emit1("max_pool", {node.input(0)}, attrs)};
}

// LpPool: (Σ_window |x|^p)^(1/p), padding adding nothing: |x|^p through a depthwise conv whose
// weights are all ones (the window's sum, dilations and strides as the pool's), then the p-th
// root. ceil_mode's extra windows (opset 18) become end padding: as many output positions as
// the pooling would have (the last dropped when it starts past the input and its front padding).
std::vector<Value*> convert_lp_pool(NodeImporter& node) {
  Value* x = node.input(0);
  const Shape& shape = x->type().shape;
  const std::vector<int64_t> kernel = node.attr_ints("kernel_shape");
  WindowAttrs window = window_attrs(node, shape, kernel);
  const int64_t p = node.attr_int("p", 2);
  if (p < 1) node.fail("p must be positive, not " + std::to_string(p));
  const bool ceil_mode = node.attr_int("ceil_mode", 0) != 0;
  if (ceil_mode && node.attr_string("auto_pad", "NOTSET") != "NOTSET") {
    node.fail("ceil_mode=1 cannot be combined with auto_pad");
  }
  const size_t spatial = kernel.size();
  for (size_t d = 0; ceil_mode && d < spatial; ++d) {
    const int64_t in = shape[d + 2], begin = window.pads[d], end = window.pads[d + spatial];
    const int64_t extent = (kernel[d] - 1) * window.dilations[d] + 1;
    const int64_t span = in + begin + end - extent;
    if (span < 0) continue;  // the conv reports the kernel past the padded input
    const int64_t stride = window.strides[d];
    int64_t size = span / stride + (span % stride != 0) + 1;
    if ((size - 1) * stride >= in + begin) --size;
    window.pads[d + spatial] = std::max(end, (size - 1) * stride + extent - in - begin);
  }
  const int64_t channels = shape[1];
  Shape weight_shape{channels, 1};
  weight_shape.insert(weight_shape.end(), kernel.begin(), kernel.end());
  Tensor ones(x->type().dtype, weight_shape);
  for (int64_t i = 0; i < ones.num_elements(); ++i) ones.set_double(i, 1.0);
  const auto scalar = [&](double value) { return node.scalar_constant(x->type().dtype, value); };
  Value* magnitude = node.emit1("abs", {x});
  if (p != 1) magnitude = node.emit1("pow", {magnitude, scalar(static_cast<double>(p))});
  Value* sum = node.emit1("conv", {magnitude, node.constant(ones)},
                          {{"strides", window.strides},
                           {"pads", window.pads},
                           {"dilations", window.dilations},
                           {"group", channels}});
  if (p == 1) return {sum};
  return {node.emit1("pow", {sum, scalar(1.0 / static_cast<double>(p))})};
}

}  // namespace

void register_pool_converters(ConverterTable& table) {
  table.add("GlobalAveragePool", 13, convert_global_pool);
  table.add("GlobalMaxPool", 13, convert_global_pool);
  // AveragePool-11 (in force at 13) and -19 (adds dilations).
  table.add("AveragePool", 13, convert_average_pool);
  table.add("AveragePool", 19, convert_average_pool);
  table.add("MaxPool", 13, convert_max_pool);
  table.add("LpPool", 11, convert_lp_pool);
  table.add("LpPool", 18, convert_lp_pool);  // ceil_mode
}

}  // namespace kiln::onnx_import
