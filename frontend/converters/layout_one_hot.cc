// ONNX OneHot (opsets 9, 11) -> kiln ops: the indices, as int64 (a float index truncated, as
// onnxruntime casts it) and, from opset 11, a negative one counted from `depth`, compared with a
// constant 0..depth-1 laid along the new axis; where they are equal the output takes values[1]
// (on), elsewhere values[0] (off). An index outside [-depth, depth) matches nothing: all off.
// `depth` must be known at compile time (it sizes the output).
#include <cmath>

#include "frontend/converters/layout_converters.h"

namespace kiln::onnx_import {
namespace {

std::vector<Value*> convert_one_hot(NodeImporter& node) {
  Value* indices = node.input(0);
  const Shape& shape = indices->type().shape;
  const int64_t rank = static_cast<int64_t>(shape.size());
  const Tensor& depth_value = node.constant_input(1, "OneHot's depth sizes its output");
  if (depth_value.num_elements() != 1) node.fail("depth must hold exactly one value");
  const double depth_number = depth_value.get_double(0);
  if (!(depth_number >= 1) || depth_number >= static_cast<double>(int64_t{1} << 40)) {
    node.fail("depth must be a positive count, not " + std::to_string(depth_number));
  }
  const int64_t depth = static_cast<int64_t>(std::trunc(depth_number));
  Value* values = node.input(2);
  if (values->type().num_elements() != 2) {
    node.fail("values must hold two elements, [off_value, on_value]");
  }
  int64_t axis = node.attr_int("axis", -1);
  if (axis < -rank - 1 || axis > rank) {
    node.fail("axis " + std::to_string(axis) + " is outside [" + std::to_string(-rank - 1) + ", " +
              std::to_string(rank) + "]");
  }
  if (axis < 0) axis += rank + 1;

  Value* index = indices->type().dtype == DType::kI64
                     ? indices
                     : node.emit1("cast", {indices}, {{"to", Attribute(DType::kI64)}});
  if (node.opset() >= 11) {
    Value* depth_constant = node.constant(Tensor::scalar_i64(depth));
    Value* zero = node.constant(Tensor::scalar_i64(0));
    Value* negative = node.emit1("less", {index, zero});
    index = node.emit1("where", {negative, node.emit1("add", {index, depth_constant}), index});
  }
  Shape index_shape = shape;
  index_shape.insert(index_shape.begin() + axis, 1);
  Shape classes_shape(static_cast<size_t>(rank + 1), 1);
  classes_shape[static_cast<size_t>(axis)] = depth;
  Tensor classes(DType::kI64, classes_shape);
  for (int64_t c = 0; c < depth; ++c) classes.set_int(c, c);
  Value* hot = node.emit1("equal", {node.emit_reshape(index, index_shape), node.constant(classes)});
  // values[i] as a scalar (values is [off_value, on_value], maybe not a constant).
  Value* pair = node.emit_reshape(values, Shape{2});
  const auto element = [&](int64_t i) {
    return node.emit_reshape(node.emit_slice(pair, 0, i, i + 1), Shape{});
  };
  return {node.emit1("where", {hot, element(1), element(0)})};
}

}  // namespace

void register_one_hot_converters(ConverterTable& table) {
  table.add("OneHot", 9, convert_one_hot);
  table.add("OneHot", 11, convert_one_hot);  // negative indices count from depth
}

}  // namespace kiln::onnx_import
