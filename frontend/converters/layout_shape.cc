// ONNX converters whose results are known at import because kiln shapes are static: Shape,
// Size, ConstantOfShape and Range become constants (no kiln op).
#include <algorithm>
#include <cmath>

#include "frontend/converters/layout_converters.h"

namespace kiln::onnx_import {
namespace {

// Shape, with opset 15's start/end (clamped like Python slicing bounds).
std::vector<Value*> convert_shape(NodeImporter& node) {
  const Shape& shape = node.input(0)->type().shape;
  const int64_t rank = static_cast<int64_t>(shape.size());
  auto clamp_bound = [rank](int64_t bound) {
    return std::clamp<int64_t>(bound < 0 ? bound + rank : bound, 0, rank);
  };
  const int64_t start = clamp_bound(node.attr_int("start", 0));
  const int64_t end = clamp_bound(node.attr_int("end", rank));
  const std::vector<int64_t> dims(shape.begin() + start, shape.begin() + std::max(start, end));
  return {
      node.constant(Tensor::from_vector(DType::kI64, {static_cast<int64_t>(dims.size())}, dims))};
}

std::vector<Value*> convert_size(NodeImporter& node) {
  return {node.constant(Tensor::scalar_i64(node.input(0)->type().num_elements()))};
}

// ConstantOfShape: the `value` attribute (default f32 zero) repeated over the given shape.
std::vector<Value*> convert_constant_of_shape(NodeImporter& node) {
  const Shape shape = constant_ints(node, 0, "the output shape");
  for (int64_t dim : shape) {
    if (dim < 0) node.fail("shape [" + shape_to_string(shape) + "] has a negative dimension");
  }
  Tensor value = Tensor::scalar_f32(0.0f);
  if (node.has_attr("value")) {
    value = node.attr_tensor("value");
    if (value.num_elements() != 1) node.fail("attribute 'value' must hold exactly one element");
  }
  Tensor result(value.dtype(), shape);
  const size_t element_size = dtype_size(value.dtype());
  for (int64_t i = 0; i < result.num_elements(); ++i) {
    std::copy_n(value.bytes(), element_size, result.bytes() + i * element_size);
  }
  return {node.constant(result)};
}

// Range: start + i * delta for i in [0, max(ceil((limit - start) / delta), 0)).
std::vector<Value*> convert_range(NodeImporter& node) {
  const std::string why = "Range's output shape would depend on run-time values";
  const Tensor& start = node.constant_input(0, why);
  const Tensor& limit = node.constant_input(1, why);
  const Tensor& delta = node.constant_input(2, why);
  const DType dtype = start.dtype();
  if (limit.dtype() != dtype || delta.dtype() != dtype) {
    node.fail("start, limit and delta must have the same dtype");
  }
  if (start.num_elements() != 1 || limit.num_elements() != 1 || delta.num_elements() != 1) {
    node.fail("start, limit and delta must be scalars");
  }
  if (is_float(dtype)) {
    const double first = start.get_double(0);
    const double step = delta.get_double(0);
    if (step == 0) node.fail("delta must not be zero");
    const int64_t count =
        std::max<int64_t>(0, static_cast<int64_t>(std::ceil((limit.get_double(0) - first) / step)));
    Tensor result(dtype, {count});
    for (int64_t i = 0; i < count; ++i) result.set_double(i, first + static_cast<double>(i) * step);
    return {node.constant(result)};
  }
  const int64_t first = start.get_int(0);
  const int64_t step = delta.get_int(0);
  if (step == 0) node.fail("delta must not be zero");
  const int64_t span = limit.get_int(0) - first;
  const int64_t count =
      std::max<int64_t>(0, step > 0 ? (span + step - 1) / step : (span + step + 1) / step);
  Tensor result(dtype, {count});
  for (int64_t i = 0; i < count; ++i) result.set_int(i, first + i * step);
  return {node.constant(result)};
}

}  // namespace

void register_shape_converters(ConverterTable& table) {
  table.add("Shape", 13, convert_shape);
  table.add("Shape", 15, convert_shape);  // start, end
  table.add("Size", 13, convert_size);
  table.add("ConstantOfShape", 13, convert_constant_of_shape);
  table.add("Range", 13, convert_range);
  table.add("Range", 27, convert_range);  // stash_type: kiln always computes in double
}

}  // namespace kiln::onnx_import
