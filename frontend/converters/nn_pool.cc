// ONNX pooling converters: GlobalAveragePool, GlobalMaxPool, AveragePool, MaxPool (its optional
// Indices output selects kiln max_pool_with_indices). auto_pad becomes explicit pads.
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

}  // namespace

void register_pool_converters(ConverterTable& table) {
  table.add("GlobalAveragePool", 13, convert_global_pool);
  table.add("GlobalMaxPool", 13, convert_global_pool);
  // AveragePool-11 (in force at 13) and -19 (adds dilations).
  table.add("AveragePool", 13, convert_average_pool);
  table.add("AveragePool", 19, convert_average_pool);
  table.add("MaxPool", 13, convert_max_pool);
}

}  // namespace kiln::onnx_import
