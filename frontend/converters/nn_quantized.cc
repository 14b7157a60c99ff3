// ONNX integer and quantized contractions -> kiln ops, as onnxruntime's QOperator-format models
// carry them:
//
//   MatMulInteger (10)   (A − a_zero_point) · (B − b_zero_point) as an i32 matmul (the GPU's
//                        SIMT kernel sums integers in 64 bits and keeps the low 32, as int32
//                        arithmetic wraps)
//   ConvInteger (10)     conv(x − x_zero_point, w − w_zero_point) in f64 (kiln's conv takes
//                        floats; f64 holds every int32 sum exactly), cast to int32
//   QLinearMatMul (10, 21), QLinearConv (10)
//                        the same integer sum (plus QLinearConv's int32 bias), as f32 times
//                        a_scale · b_scale / y_scale (w_scale per output channel for a conv),
//                        rounded half to even, plus y_zero_point, saturated to y's int8 or uint8
//
// A zero point is a scalar or, where ONNX allows it, one value per row of A (a_zero_point), per
// column of B (b_zero_point) or per output channel (w_zero_point, w_scale).
#include <optional>

#include "frontend/converters/nn_converters.h"

namespace kiln::onnx_import {
namespace {

Value* cast(NodeImporter& node, Value* v, DType dtype) {
  return v->type().dtype == dtype ? v : node.emit1("cast", {v}, {{"to", Attribute(dtype)}});
}

// Input `input` (a zero point or scale) in `dtype`, shaped to broadcast against a tensor of
// `shape`: a scalar, or where `axis` names one (negative: from the end), one value per index of
// that axis.
Value* laid_parameter(NodeImporter& node, size_t input, DType dtype, const Shape& shape,
                      std::optional<int64_t> axis) {
  Value* parameter = cast(node, node.input(input), dtype);
  const int64_t elements = parameter->type().num_elements();
  if (elements == 1) return node.emit_reshape(parameter, Shape{});
  const int64_t rank = static_cast<int64_t>(shape.size());
  const int64_t at = axis ? (*axis < 0 ? *axis + rank : *axis) : -1;
  if (at < 0 || at >= rank || elements != shape[static_cast<size_t>(at)]) {
    node.fail("input " + std::to_string(input) + " must be a scalar" +
              (axis ? " or hold one value per index of axis " + std::to_string(*axis) : "") +
              ", not " + std::to_string(elements) + " values");
  }
  Shape laid(static_cast<size_t>(rank), 1);
  laid[static_cast<size_t>(at)] = elements;
  return node.emit_reshape(parameter, laid);
}

// `value` − its zero point (input `input`, absent: 0) in `dtype` (see laid_parameter).
Value* minus_zero_point(NodeImporter& node, Value* value, size_t input, DType dtype,
                        std::optional<int64_t> axis) {
  value = cast(node, value, dtype);
  if (!node.has_input(input)) return value;
  return node.emit1("sub", {value, laid_parameter(node, input, dtype, value->type().shape, axis)});
}

// The integer product of A (input 0, zero point input `a_zero`) and B (input `b`, zero point
// input `b_zero`) as i32.
Value* integer_matmul(NodeImporter& node, size_t a_zero, size_t b, size_t b_zero) {
  Value* a = minus_zero_point(node, node.input(0), a_zero, DType::kI32, -2);   // per row
  Value* bb = minus_zero_point(node, node.input(b), b_zero, DType::kI32, -1);  // per column
  return node.emit1("matmul", {a, bb});
}

// The integer conv of x (input 0, zero point input `x_zero`) and w (input `w`, zero point input
// `w_zero`, per output channel or scalar) in f64, with the Conv attributes.
Value* integer_conv(NodeImporter& node, size_t x_zero, size_t w, size_t w_zero) {
  Value* x = minus_zero_point(node, node.input(0), x_zero, DType::kF64, std::nullopt);
  Value* weights = minus_zero_point(node, node.input(w), w_zero, DType::kF64, 0);  // per channel
  const Shape& w_shape = weights->type().shape;
  if (w_shape.size() < 3) node.fail("w must have spatial dims");
  const std::vector<int64_t> kernel(w_shape.begin() + 2, w_shape.end());
  const WindowAttrs window = window_attrs(node, x->type().shape, kernel);
  return node.emit1("conv", {x, weights},
                    {{"strides", window.strides},
                     {"pads", window.pads},
                     {"dilations", window.dilations},
                     {"group", node.attr_int("group", 1)}});
}

// The integer sum `sum` requantized: sum · a_scale · b_scale / y_scale in f32 (the scales laid
// along the sum's axes `a_axis`, `b_axis` where they have one value per index there), rounded
// half to even, plus y_zero_point, saturated and cast to y_zero_point's type.
Value* requantize(NodeImporter& node, Value* sum, size_t a_scale, size_t b_scale, size_t y_scale,
                  size_t y_zero, std::optional<int64_t> a_axis, int64_t b_axis) {
  const Shape& shape = sum->type().shape;
  const auto scale = [&](size_t input, std::optional<int64_t> axis) {
    return laid_parameter(node, input, DType::kF32, shape, axis);
  };
  Value* multiplier =
      node.emit1("div", {node.emit1("mul", {scale(a_scale, a_axis), scale(b_scale, b_axis)}),
                         scale(y_scale, std::nullopt)});
  Value* value =
      node.emit1("round", {node.emit1("mul", {cast(node, sum, DType::kF32), multiplier})});
  Value* zero = laid_parameter(node, y_zero, DType::kF32, shape, std::nullopt);
  return saturate_quantized(node, node.emit1("add", {value, zero}),
                            node.input(y_zero)->type().dtype);
}

std::vector<Value*> convert_matmul_integer(NodeImporter& node) {
  return {integer_matmul(node, 2, 1, 3)};
}

std::vector<Value*> convert_conv_integer(NodeImporter& node) {
  return {cast(node, integer_conv(node, 2, 1, 3), DType::kI32)};
}

// QLinearMatMul: a, a_scale, a_zero_point, b, b_scale, b_zero_point, y_scale, y_zero_point.
std::vector<Value*> convert_qlinear_matmul(NodeImporter& node) {
  return {requantize(node, integer_matmul(node, 2, 3, 5), 1, 4, 6, 7, -2, -1)};
}

// QLinearConv: x, x_scale, x_zero_point, w, w_scale, w_zero_point, y_scale, y_zero_point, B.
std::vector<Value*> convert_qlinear_conv(NodeImporter& node) {
  Value* sum = integer_conv(node, 2, 3, 5);
  if (node.has_input(8)) {
    Value* bias = cast(node, node.input(8), DType::kF64);
    const int64_t channels = sum->type().shape[1];
    if (bias->type().shape != Shape{channels}) {
      node.fail("B must hold one int32 value per output channel (" + std::to_string(channels) +
                ")");
    }
    Shape laid(sum->type().shape.size(), 1);
    laid[1] = channels;
    sum = node.emit1("add", {sum, node.emit_reshape(bias, laid)});
  }
  return {requantize(node, sum, 1, 4, 6, 7, std::nullopt, 1)};
}

}  // namespace

void register_quantized_converters(ConverterTable& table) {
  table.add("MatMulInteger", 10, convert_matmul_integer);
  table.add("ConvInteger", 10, convert_conv_integer);
  table.add("QLinearMatMul", 10, convert_qlinear_matmul);
  table.add("QLinearMatMul", 21, convert_qlinear_matmul);  // more scale and zero point types
  table.add("QLinearConv", 10, convert_qlinear_conv);
}

}  // namespace kiln::onnx_import
