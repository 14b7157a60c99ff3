// ONNX quantization and a few elementwise compositions -> kiln ops:
//
//   DequantizeLinear (10 ... 23)       (cast(x) − cast(zero_point)) · scale, in output_dtype (23)
//                                      or the scale's type
//   QuantizeLinear (10 ... 23)         saturate(round_half_even(x / scale) + zero_point), cast to
//                                      the zero point's type (output_dtype, else uint8); int8 and
//                                      uint8 only (kiln has no int16, int4 or float8)
//   DynamicQuantizeLinear (11)         uint8 with scale (max(0, max x) − min(0, min x)) / 255 (1 /
//                                      255 when that range is 0) and zero point
//                                      rint(clip(−min(0, min x) / scale, 0, 255)), as ONNX's
//                                      reference computes them
//   SwiGLU (28)                        a · sigmoid(alpha · a) · b
//
// A scale (and zero point) is a scalar, one value per index of `axis` (per-axis), or with
// block_size one per block of that many indices along `axis` (blocked: the scale gathered up to
// the input's extent there). QDQ-quantized models thereby run with their quantization simulated
// in floats, the quantized tensors' values exactly those ONNX defines.
#include "frontend/converters/layout_converters.h"
#include "frontend/converters/nn_converters.h"
#include "frontend/tensor_proto.h"
#include "ir/error.h"

namespace kiln::onnx_import {
namespace {

// A scale or zero point laid out to broadcast against x [shape] (see the header).
Value* broadcast_parameter(NodeImporter& node, Value* parameter, const Shape& shape,
                           const std::string& name) {
  const Shape& p = parameter->type().shape;
  if (parameter->type().num_elements() == 1) return node.emit_reshape(parameter, Shape{});
  const int64_t rank = static_cast<int64_t>(shape.size());
  const int64_t axis = normalized_axes(node, {node.attr_int("axis", 1)}, rank)[0];
  const int64_t block = node.attr_int("block_size", 0);
  const int64_t extent = shape[static_cast<size_t>(axis)];
  if (block <= 0) {
    if (p != Shape{extent}) {
      node.fail(name + " must be a scalar or [" + std::to_string(extent) + "] (axis " +
                std::to_string(axis) + "), not [" + shape_to_string(p) + "]");
    }
    Shape laid(static_cast<size_t>(rank), 1);
    laid[static_cast<size_t>(axis)] = extent;
    return node.emit_reshape(parameter, laid);
  }
  Shape blocked = shape;
  blocked[static_cast<size_t>(axis)] = (extent + block - 1) / block;
  if (p != blocked) {
    node.fail(name + " must be [" + shape_to_string(blocked) + "] for blocks of " +
              std::to_string(block) + " along axis " + std::to_string(axis) + ", not [" +
              shape_to_string(p) + "]");
  }
  Tensor which(DType::kI64, {extent});
  for (int64_t i = 0; i < extent; ++i) which.set_int(i, i / block);
  return node.emit1("gather", {parameter, node.constant(which)}, {{"axis", axis}});
}

std::vector<Value*> convert_dequantize_linear(NodeImporter& node) {
  Value* x = node.input(0);
  Value* scale = node.input(1);
  DType out = scale->type().dtype;
  if (node.has_attr("output_dtype") && node.attr_int("output_dtype") != 0) {  // opset 23
    try {
      out = dtype_from_onnx(static_cast<int>(node.attr_int("output_dtype")), "output_dtype");
    } catch (const UnsupportedError& error) {
      node.unsupported(error.what());
    }
  }
  if (!is_float(scale->type().dtype) || !is_float(out)) {
    node.fail("the scale and the output must be floats");
  }
  Value* value = node.emit1("cast", {x}, {{"to", Attribute(DType::kF32)}});
  if (node.has_input(2)) {
    Value* zero = node.emit1("cast", {node.input(2)}, {{"to", Attribute(DType::kF32)}});
    value = node.emit1("sub",
                       {value, broadcast_parameter(node, zero, x->type().shape, "the zero point")});
  }
  Value* scale32 = node.emit1("cast", {scale}, {{"to", Attribute(DType::kF32)}});
  value =
      node.emit1("mul", {value, broadcast_parameter(node, scale32, x->type().shape, "the scale")});
  if (out != DType::kF32) value = node.emit1("cast", {value}, {{"to", Attribute(out)}});
  return {value};
}

std::vector<Value*> convert_quantize_linear(NodeImporter& node) {
  Value* x = node.input(0);
  DType out = DType::kU8;
  if (node.has_input(2)) {
    out = node.input(2)->type().dtype;
  } else if (node.has_attr("output_dtype") && node.attr_int("output_dtype") != 0) {
    try {
      out = dtype_from_onnx(static_cast<int>(node.attr_int("output_dtype")), "output_dtype");
    } catch (const UnsupportedError& error) {
      node.unsupported(error.what());
    }
  }
  const Shape& shape = x->type().shape;
  Value* scale = node.emit1("cast", {node.input(1)}, {{"to", Attribute(DType::kF32)}});
  Value* value = node.emit1("cast", {x}, {{"to", Attribute(DType::kF32)}});
  value = node.emit1(
      "round", {node.emit1("div", {value, broadcast_parameter(node, scale, shape, "the scale")})});
  if (node.has_input(2)) {
    Value* zero = node.emit1("cast", {node.input(2)}, {{"to", Attribute(DType::kF32)}});
    value = node.emit1("add", {value, broadcast_parameter(node, zero, shape, "the zero point")});
  }
  return {saturate_quantized(node, value, out)};
}

std::vector<Value*> convert_dynamic_quantize_linear(NodeImporter& node) {
  Value* x = node.input(0);
  if (x->type().dtype != DType::kF32) node.fail("the input must be float32");
  std::vector<int64_t> all(x->type().shape.size());
  for (size_t a = 0; a < all.size(); ++a) all[a] = static_cast<int64_t>(a);
  const auto reduce = [&](const char* op) {
    return node.emit1(op, {x}, {{"axes", all}, {"keepdims", int64_t{0}}});
  };
  Value* zero = node.scalar_constant(DType::kF32, 0);
  Value* high = node.emit1("max", {reduce("reduce_max"), zero});
  Value* low = node.emit1("min", {reduce("reduce_min"), zero});
  Value* range = node.emit1("sub", {high, low});
  range = node.emit1(
      "where", {node.emit1("equal", {range, zero}), node.scalar_constant(DType::kF32, 1), range});
  Value* scale = node.emit1("div", {range, node.scalar_constant(DType::kF32, 255)});
  Value* zero_point = node.emit1(
      "round", {node.emit1("clip", {node.emit1("div", {node.emit1("neg", {low}), scale})},
                           {{"min", 0.0}, {"max", 255.0}})});
  Value* y = node.emit1(
      "clip",
      {node.emit1("add", {node.emit1("round", {node.emit1("div", {x, scale})}), zero_point})},
      {{"min", 0.0}, {"max", 255.0}});
  const auto to_u8 = [&](Value* v) {
    return node.emit1("cast", {v}, {{"to", Attribute(DType::kU8)}});
  };
  return {to_u8(y), scale, to_u8(zero_point)};
}

std::vector<Value*> convert_swiglu(NodeImporter& node) {
  Value* a = node.input(0);
  Value* b = node.input(1);
  if (a->type() != b->type()) node.fail("A and B must have the same shape and type");
  Value* gate = a;
  const double alpha = node.attr_float("alpha", 1.0);
  if (alpha != 1.0) gate = node.emit1("mul", {a, node.scalar_constant(a->type().dtype, alpha)});
  Value* swish = node.emit1("mul", {a, node.emit1("sigmoid", {gate})});
  return {node.emit1("mul", {swish, b})};
}

}  // namespace

Value* saturate_quantized(NodeImporter& node, Value* value, DType dtype) {
  if (dtype != DType::kU8 && dtype != DType::kI8) {
    node.unsupported("quantizing to " + std::string(dtype_name(dtype)) +
                     " is not supported (kiln quantizes to int8 and uint8)");
  }
  const bool unsigned_8 = dtype == DType::kU8;
  value = node.emit1("clip", {value},
                     {{"min", unsigned_8 ? 0.0 : -128.0}, {"max", unsigned_8 ? 255.0 : 127.0}});
  return node.emit1("cast", {value}, {{"to", Attribute(dtype)}});
}

void register_quantize_converters(ConverterTable& table) {
  // 13: per-axis; 19: more types; 21: blocks, output_dtype; 23: more types (4-bit, float4)
  for (int since : {10, 13, 19, 21, 23}) {
    table.add("DequantizeLinear", since, convert_dequantize_linear);
    table.add("QuantizeLinear", since, convert_quantize_linear);
  }
  table.add("DynamicQuantizeLinear", 11, convert_dynamic_quantize_linear);
  table.add("SwiGLU", 28, convert_swiglu);
}

}  // namespace kiln::onnx_import
