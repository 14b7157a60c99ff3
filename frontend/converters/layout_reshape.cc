// ONNX converters that rearrange a whole tensor: Reshape, Flatten, Squeeze and Unsqueeze (all
// become kiln reshape with the final shape), Transpose, Expand, Tile, DepthToSpace,
// SpaceToDepth.
#include <algorithm>
#include <numeric>

#include "frontend/converters/layout_converters.h"

namespace kiln::onnx_import {
namespace {

std::string shape_text(const Shape& shape) { return "[" + shape_to_string(shape) + "]"; }

// ONNX Reshape: 0 copies the input's dimension (unless allowzero), -1 is inferred.
std::vector<Value*> convert_reshape(NodeImporter& node) {
  Value* data = node.input(0);
  const Shape& in_shape = data->type().shape;
  Shape shape = constant_ints(node, 1, "the target shape");
  const bool allow_zero = node.attr_int("allowzero", 0) != 0;
  int64_t inferred = -1;
  int64_t known = 1;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == 0 && !allow_zero) {
      if (d >= in_shape.size()) {
        node.fail("shape " + shape_text(shape) + " copies dimension " + std::to_string(d) +
                  " that the input " + shape_text(in_shape) + " lacks");
      }
      shape[d] = in_shape[d];
    }
    if (shape[d] == -1) {
      if (inferred >= 0) node.fail("shape " + shape_text(shape) + " has more than one -1");
      inferred = static_cast<int64_t>(d);
    } else if (shape[d] < 0) {
      node.fail("shape " + shape_text(shape) + " has an invalid dimension");
    } else if (__builtin_mul_overflow(known, shape[d], &known)) {
      node.fail("shape " + shape_text(shape) + " has more elements than int64 can count");
    }
  }
  const int64_t count = num_elements(in_shape);
  if (inferred >= 0) {
    if (known == 0 || count % known != 0) {
      node.fail("cannot infer the -1 in shape " + shape_text(shape) + " for input " +
                shape_text(in_shape));
    }
    shape[inferred] = count / known;
  }
  if (num_elements(shape) != count) {
    node.fail("cannot reshape " + shape_text(in_shape) + " to " + shape_text(shape));
  }
  return {node.emit_reshape(data, shape)};
}

std::vector<Value*> convert_flatten(NodeImporter& node) {
  Value* data = node.input(0);
  const Shape& in_shape = data->type().shape;
  const int64_t rank = static_cast<int64_t>(in_shape.size());
  int64_t axis = node.attr_int("axis", 1);
  if (axis < -rank || axis > rank) {
    node.fail("axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(rank));
  }
  if (axis < 0) axis += rank;
  const int64_t outer = num_elements(Shape(in_shape.begin(), in_shape.begin() + axis));
  const int64_t inner = num_elements(Shape(in_shape.begin() + axis, in_shape.end()));
  return {node.emit_reshape(data, {outer, inner})};
}

std::vector<Value*> convert_squeeze(NodeImporter& node) {
  Value* data = node.input(0);
  const Shape& in_shape = data->type().shape;
  const int64_t rank = static_cast<int64_t>(in_shape.size());
  std::vector<bool> drop(in_shape.size(), false);
  if (node.has_input(1)) {
    for (int64_t axis : normalized_axes(node, constant_ints(node, 1, "the axes"), rank)) {
      if (in_shape[axis] != 1) {
        node.fail("cannot squeeze axis " + std::to_string(axis) + " of size " +
                  std::to_string(in_shape[axis]));
      }
      drop[axis] = true;
    }
  } else {
    for (size_t d = 0; d < in_shape.size(); ++d) drop[d] = in_shape[d] == 1;
  }
  Shape shape;
  for (size_t d = 0; d < in_shape.size(); ++d) {
    if (!drop[d]) shape.push_back(in_shape[d]);
  }
  return {node.emit_reshape(data, shape)};
}

std::vector<Value*> convert_unsqueeze(NodeImporter& node) {
  Value* data = node.input(0);
  const Shape& in_shape = data->type().shape;
  const std::vector<int64_t> raw_axes = constant_ints(node, 1, "the axes");
  const int64_t rank = static_cast<int64_t>(in_shape.size() + raw_axes.size());
  std::vector<bool> inserted(static_cast<size_t>(rank), false);
  for (int64_t axis : normalized_axes(node, raw_axes, rank)) inserted[axis] = true;
  Shape shape;
  size_t next = 0;
  for (int64_t d = 0; d < rank; ++d) shape.push_back(inserted[d] ? 1 : in_shape[next++]);
  return {node.emit_reshape(data, shape)};
}

std::vector<Value*> convert_transpose(NodeImporter& node) {
  Value* data = node.input(0);
  std::vector<int64_t> reversed(data->type().shape.size());
  std::iota(reversed.rbegin(), reversed.rend(), 0);
  return {node.emit1("transpose", {data}, {{"perm", node.attr_ints("perm", reversed)}})};
}

std::vector<Value*> convert_expand(NodeImporter& node) {
  return {node.emit1("expand", {node.input(0)}, {{"shape", constant_ints(node, 1, "the shape")}})};
}

std::vector<Value*> convert_tile(NodeImporter& node) {
  return {
      node.emit1("tile", {node.input(0)}, {{"repeats", constant_ints(node, 1, "the repeats")}})};
}

std::vector<Value*> convert_depth_to_space(NodeImporter& node) {
  return {node.emit1(
      "depth_to_space", {node.input(0)},
      {{"blocksize", node.attr_int("blocksize")}, {"mode", node.attr_string("mode", "DCR")}})};
}

std::vector<Value*> convert_space_to_depth(NodeImporter& node) {
  return {node.emit1(
      "space_to_depth", {node.input(0)},
      {{"blocksize", node.attr_int("blocksize")}, {"mode", node.attr_string("mode", "DCR")}})};
}

}  // namespace

void register_reshape_converters(ConverterTable& table) {
  table.add("Reshape", 13, convert_reshape);
  table.add("Reshape", 14, convert_reshape);  // allowzero
  table.add("Flatten", 13, convert_flatten);
  table.add("Squeeze", 13, convert_squeeze);
  table.add("Unsqueeze", 13, convert_unsqueeze);
  table.add("Transpose", 13, convert_transpose);
  table.add("Expand", 13, convert_expand);
  table.add("Tile", 13, convert_tile);
  table.add("DepthToSpace", 13, convert_depth_to_space);
  table.add("SpaceToDepth", 13, convert_space_to_depth);
  table.add("SpaceToDepth", 28, convert_space_to_depth);  // mode
}

}  // namespace kiln::onnx_import
