// ONNX Conv and ConvTranspose -> kiln conv / conv_transpose, with auto_pad and (for
// ConvTranspose) output_shape resolved into explicit pads and output_padding.
#include "frontend/converters/nn_converters.h"

namespace kiln::onnx_import {
namespace {

// W's spatial dims, checked against the kernel_shape attribute when the node has one.
std::vector<int64_t> kernel_from_weight(const NodeImporter& node) {
  const Shape& w = node.input(1)->type().shape;
  if (w.size() < 3) node.fail("W [" + shape_to_string(w) + "] must have spatial dims");
  std::vector<int64_t> kernel(w.begin() + 2, w.end());
  if (node.has_attr("kernel_shape") && node.attr_ints("kernel_shape") != kernel) {
    node.fail("attribute 'kernel_shape' differs from W's spatial dims [" + shape_to_string(kernel) +
              "]");
  }
  return kernel;
}

std::vector<Value*> operands_with_bias(const NodeImporter& node) {
  std::vector<Value*> operands = {node.input(0), node.input(1)};
  if (node.has_input(2)) operands.push_back(node.input(2));
  return operands;
}

std::vector<Value*> convert_conv(NodeImporter& node) {
  const std::vector<int64_t> kernel = kernel_from_weight(node);
  const WindowAttrs window = window_attrs(node, node.input(0)->type().shape, kernel);
  return {node.emit1("conv", operands_with_bias(node),
                     {{"strides", window.strides},
                      {"pads", window.pads},
                      {"dilations", window.dilations},
                      {"group", node.attr_int("group", 1)}})};
}

// ConvTranspose pads: explicit, or derived from output_shape (or, for SAME auto_pad, from
// output = input · stride) as the spec's total_padding, split by auto_pad. A negative total
// (an output larger than the input covers) becomes extra output_padding.
std::vector<Value*> convert_conv_transpose(NodeImporter& node) {
  const std::vector<int64_t> kernel = kernel_from_weight(node);
  const Shape& x = node.input(0)->type().shape;
  const size_t spatial = kernel.size();
  if (x.size() != spatial + 2) node.fail("X and W must have the same rank");
  const std::vector<int64_t> strides = ints_attr_of_length(node, "strides", spatial, 1);
  const std::vector<int64_t> dilations = ints_attr_of_length(node, "dilations", spatial, 1);
  std::vector<int64_t> output_padding = ints_attr_of_length(node, "output_padding", spatial, 0);
  const std::string auto_pad = node.attr_string("auto_pad", "NOTSET");
  if (auto_pad != "NOTSET" && auto_pad != "VALID" && auto_pad != "SAME_UPPER" &&
      auto_pad != "SAME_LOWER") {
    node.fail("attribute 'auto_pad' has unknown value '" + auto_pad + "'");
  }
  std::vector<int64_t> pads(2 * spatial, 0);
  std::vector<int64_t> output_shape;
  if (node.has_attr("output_shape")) {
    output_shape = node.attr_ints("output_shape");
    // Some exporters write the full [N, C, spatial...] shape.
    if (output_shape.size() == spatial + 2)
      output_shape.erase(output_shape.begin(), output_shape.begin() + 2);
    if (output_shape.size() != spatial) {
      node.fail("attribute 'output_shape' has " + std::to_string(output_shape.size()) +
                " values for " + std::to_string(spatial) + " spatial dims");
    }
  } else if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
    for (size_t d = 0; d < spatial; ++d) output_shape.push_back(x[d + 2] * strides[d]);
  } else if (auto_pad == "NOTSET") {
    pads = ints_attr_of_length(node, "pads", 2 * spatial, 0);
  }
  for (size_t d = 0; d < output_shape.size(); ++d) {
    const int64_t natural =
        strides[d] * (x[d + 2] - 1) + output_padding[d] + (kernel[d] - 1) * dilations[d] + 1;
    const int64_t total = natural - output_shape[d];
    if (total < 0) {
      output_padding[d] -= total;
      continue;
    }
    const int64_t small = total / 2;
    pads[d] = auto_pad == "SAME_UPPER" ? small : total - small;
    pads[d + spatial] = total - pads[d];
  }
  return {node.emit1("conv_transpose", operands_with_bias(node),
                     {{"strides", strides},
                      {"pads", pads},
                      {"dilations", dilations},
                      {"group", node.attr_int("group", 1)},
                      {"output_padding", output_padding}})};
}

}  // namespace

void register_conv_converters(ConverterTable& table) {
  table.add("Conv", 13, convert_conv);
  table.add("ConvTranspose", 13, convert_conv_transpose);
}

}  // namespace kiln::onnx_import
