// ONNX converters whose results are known at import: Constant, and (because kiln shapes are
// static) Shape, Size, ConstantOfShape, EyeLike, the window functions and Range become constants
// (no kiln op).
#include <algorithm>
#include <cmath>

#include "frontend/converters/layout_converters.h"
#include "frontend/tensor_proto.h"
#include "ir/error.h"

namespace kiln::onnx_import {
namespace {

// These ops become constants at import, so their size is bounded like any constant kiln makes.
constexpr int64_t kMaxConstantBytes = int64_t{1} << 30;

void check_constant_size(NodeImporter& node, DType dtype, long double elements) {
  if (elements * static_cast<long double>(dtype_size(dtype)) > kMaxConstantBytes) {
    node.fail("its result would have " + std::to_string(static_cast<double>(elements)) +
              " elements, more than kiln makes at compile time (1 GiB)");
  }
}

// Constant: its value from exactly one of value, value_float(s), value_int(s); sparse and string
// values are rejected.
std::vector<Value*> convert_constant(NodeImporter& node) {
  if (node.num_outputs() != 1) {
    node.fail("needs exactly one output, got " + std::to_string(node.num_outputs()));
  }
  constexpr const char* kValueAttrs[] = {"value",        "value_float",  "value_floats",
                                         "value_int",    "value_ints",   "sparse_value",
                                         "value_string", "value_strings"};
  std::vector<std::string> present;
  for (const char* name : kValueAttrs) {
    if (node.has_attr(name)) present.push_back(name);
  }
  if (present.size() != 1) {
    node.fail(
        "needs exactly one value attribute (value, value_float, value_floats, value_int or "
        "value_ints), got " +
        std::to_string(present.size()));
  }
  const std::string& given = present[0];
  if (given == "value") return {node.constant(node.attr_tensor("value"))};
  if (given == "value_float") return {node.constant(Tensor::scalar_f32(node.attr_float(given)))};
  if (given == "value_int") return {node.constant(Tensor::scalar_i64(node.attr_int(given)))};
  if (given == "value_floats") {
    const std::vector<double> values = node.attr_floats(given);
    return {node.constant(
        Tensor::from_vector(DType::kF32, {static_cast<int64_t>(values.size())}, values))};
  }
  if (given == "value_ints") {
    const std::vector<int64_t> values = node.attr_ints(given);
    return {node.constant(
        Tensor::from_vector(DType::kI64, {static_cast<int64_t>(values.size())}, values))};
  }
  node.fail(given + ": sparse and string tensors are not supported");
}

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
  long double elements = 1;
  for (int64_t dim : shape) elements *= static_cast<long double>(dim);
  check_constant_size(node, value.dtype(), elements);
  Tensor result(value.dtype(), shape);
  const size_t element_size = dtype_size(value.dtype());
  for (int64_t i = 0; i < result.num_elements(); ++i) {
    std::copy_n(value.bytes(), element_size, result.bytes() + i * element_size);
  }
  return {node.constant(result)};
}

// EyeLike: a constant of the input's 2-D shape, ones on diagonal k (above the main one for k > 0)
// and zeros elsewhere, in `dtype` (default: the input's).
std::vector<Value*> convert_eye_like(NodeImporter& node) {
  const TensorType& type = node.input(0)->type();
  if (type.shape.size() != 2) {
    node.fail("the input must be 2-D, not [" + shape_to_string(type.shape) + "]");
  }
  DType dtype = type.dtype;
  if (node.has_attr("dtype")) {
    try {
      dtype = dtype_from_onnx(static_cast<int>(node.attr_int("dtype")), "attribute 'dtype'");
    } catch (const UnsupportedError& error) {
      node.unsupported(error.what());
    }
  }
  const int64_t k = node.attr_int("k", 0);
  check_constant_size(node, dtype, static_cast<long double>(type.num_elements()));
  Tensor result(dtype, type.shape);
  for (int64_t row = 0; row < type.shape[0]; ++row) {
    const int64_t column = row + k;
    if (column >= 0 && column < type.shape[1]) result.set_double(row * type.shape[1] + column, 1.0);
  }
  return {node.constant(result)};
}

// HannWindow, HammingWindow, BlackmanWindow (17): a constant of `size` values (known at compile
// time) in output_datatype (default float): with N = size (periodic, the default) or size − 1
// (symmetric), Hann 0.5 − 0.5 cos(2πn/N), Hamming 25/46 − 21/46 cos(2πn/N), Blackman 0.42 −
// 0.5 cos(2πn/N) + 0.08 cos(4πn/N), computed in double and rounded once.
std::vector<Value*> convert_window(NodeImporter& node) {
  const int64_t size = constant_int(node, 0, "the window's size sizes its output");
  if (size < 0) node.fail("size must not be negative");
  DType dtype = DType::kF32;
  if (node.has_attr("output_datatype")) {
    try {
      dtype = dtype_from_onnx(static_cast<int>(node.attr_int("output_datatype")),
                              "attribute 'output_datatype'");
    } catch (const UnsupportedError& error) {
      node.unsupported(error.what());
    }
  }
  check_constant_size(node, dtype, static_cast<long double>(size));
  const bool periodic = node.attr_int("periodic", 1) != 0;
  const double span = static_cast<double>(periodic ? size : std::max<int64_t>(size - 1, 1));
  const double pi = std::acos(-1.0);
  const std::string& op = node.op_type();
  Tensor result(dtype, {size});
  for (int64_t n = 0; n < size; ++n) {
    const double angle = 2 * pi * static_cast<double>(n) / span;
    const double value = op == "HannWindow" ? 0.5 - 0.5 * std::cos(angle)
                         : op == "HammingWindow"
                             ? 25.0 / 46 - 21.0 / 46 * std::cos(angle)
                             : 0.42 - 0.5 * std::cos(angle) + 0.08 * std::cos(2 * angle);
    result.set_double(n, value);
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
  // The count in long double: exact for any int64 span, and no overflow before the size check.
  const bool floating = is_float(dtype);
  const long double first = floating ? start.get_double(0) : start.get_int(0);
  const long double step = floating ? delta.get_double(0) : delta.get_int(0);
  const long double end = floating ? limit.get_double(0) : limit.get_int(0);
  if (step == 0) node.fail("delta must not be zero");
  const long double exact_count = std::ceil((end - first) / step);
  if (!(exact_count >= 0 || exact_count < 0)) node.fail("start, limit and delta must be finite");
  const long double count_value = std::max<long double>(0, exact_count);
  check_constant_size(node, dtype, count_value);
  const int64_t count = static_cast<int64_t>(count_value);
  Tensor result(dtype, {count});
  for (int64_t i = 0; i < count; ++i) {
    if (floating) {
      result.set_double(i, start.get_double(0) + static_cast<double>(i) * delta.get_double(0));
    } else {
      // Unsigned arithmetic wraps instead of overflowing; the true values fit in int64.
      const uint64_t value = static_cast<uint64_t>(start.get_int(0)) +
                             static_cast<uint64_t>(i) * static_cast<uint64_t>(delta.get_int(0));
      result.set_int(i, static_cast<int64_t>(value));
    }
  }
  return {node.constant(result)};
}

}  // namespace

void register_shape_converters(ConverterTable& table) {
  // Constant-11 added sparse_value and -12 the value_* attributes; this converter reads them all.
  for (int since : {1, 11, 13}) table.add("Constant", since, convert_constant);
  table.add("Shape", 13, convert_shape);
  table.add("Shape", 15, convert_shape);  // start, end
  table.add("Size", 13, convert_size);
  table.add("ConstantOfShape", 13, convert_constant_of_shape);
  table.add("EyeLike", 9, convert_eye_like);
  for (const char* window : {"HannWindow", "HammingWindow", "BlackmanWindow"}) {
    table.add(window, 17, convert_window);
  }
  table.add("Range", 13, convert_range);
  table.add("Range", 27, convert_range);  // stash_type: kiln always computes in double
}

}  // namespace kiln::onnx_import
