// ONNX converters for the neural-network op family, and the window helpers their files share.
#include "frontend/converters/nn_converters.h"

namespace kiln::onnx_import {

std::vector<int64_t> ints_attr_of_length(const NodeImporter& node, const std::string& name,
                                         size_t count, int64_t fill) {
  std::vector<int64_t> values = node.attr_ints(name, std::vector<int64_t>(count, fill));
  if (values.size() != count) {
    node.fail("attribute '" + name + "' has " + std::to_string(values.size()) +
              " values, expected " + std::to_string(count));
  }
  return values;
}

DType float_dtype_attr(const NodeImporter& node, const std::string& name, int64_t fallback) {
  const int64_t code = node.attr_int(name, fallback);
  switch (code) {
    case 1:
      return DType::kF32;
    case 10:
      return DType::kF16;
    case 11:
      return DType::kF64;
    case 16:
      return DType::kBF16;
    default:
      node.fail("attribute '" + name + "' " + std::to_string(code) + " is not a float type");
  }
}

WindowAttrs window_attrs(const NodeImporter& node, const Shape& input_shape,
                         const std::vector<int64_t>& kernel) {
  const size_t spatial = kernel.size();
  if (input_shape.size() != spatial + 2) {
    node.fail("input 0 [" + shape_to_string(input_shape) + "] must be [N,C] followed by " +
              std::to_string(spatial) + " spatial dims");
  }
  WindowAttrs attrs;
  attrs.strides = ints_attr_of_length(node, "strides", spatial, 1);
  attrs.dilations = ints_attr_of_length(node, "dilations", spatial, 1);
  for (size_t d = 0; d < spatial; ++d) {
    if (attrs.strides[d] < 1 || attrs.dilations[d] < 1) {
      node.fail("attributes 'strides' and 'dilations' must be positive");
    }
  }
  const std::string auto_pad = node.attr_string("auto_pad", "NOTSET");
  if (auto_pad == "NOTSET") {
    attrs.pads = ints_attr_of_length(node, "pads", 2 * spatial, 0);
    return attrs;
  }
  attrs.pads.assign(2 * spatial, 0);
  if (auto_pad == "VALID") return attrs;
  if (auto_pad != "SAME_UPPER" && auto_pad != "SAME_LOWER") {
    node.fail("attribute 'auto_pad' has unknown value '" + auto_pad + "'");
  }
  // SAME: output = ceil(input / stride); the padding that takes, split with the odd element at
  // the end (SAME_UPPER) or the beginning (SAME_LOWER).
  for (size_t d = 0; d < spatial; ++d) {
    const int64_t in = input_shape[d + 2];
    const int64_t out = (in + attrs.strides[d] - 1) / attrs.strides[d];
    const int64_t window = (kernel[d] - 1) * attrs.dilations[d] + 1;
    const int64_t total = std::max<int64_t>(0, (out - 1) * attrs.strides[d] + window - in);
    const int64_t small = total / 2;
    attrs.pads[d] = auto_pad == "SAME_UPPER" ? small : total - small;
    attrs.pads[d + spatial] = total - attrs.pads[d];
  }
  return attrs;
}

void register_nn_converters(ConverterTable& table) {
  register_conv_converters(table);
  register_matmul_converters(table);
  register_norm_converters(table);
  register_reduce_converters(table);
  register_pool_converters(table);
  register_topk_cumsum_converters(table);
  register_rotary_converters(table);
  register_attention_converters(table);
  register_recurrent_converters(table);
  register_loss_converters(table);
  register_quantized_converters(table);
}

}  // namespace kiln::onnx_import
