// Graph inputs: ONNX value info -> kiln types, binding symbolic dimensions.
#include "frontend/input_signature.h"

#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "frontend/tensor_proto.h"
#include "ir/error.h"
#include "onnx/onnx.pb.h"

namespace kiln::onnx_import {
namespace {

using onnx::TypeProto;

// One ONNX dimension: a number, or a symbol / nothing (unknown until bound).
struct Dim {
  std::optional<int64_t> value;
  std::string label;  // the number, the dim_param, or "?"
};

std::string describe_input(const onnx::ValueInfoProto& input) {
  return "input '" + input.name() + "'";
}

const TypeProto::Tensor& tensor_type(const onnx::ValueInfoProto& input) {
  const TypeProto& type = input.type();
  if (type.has_tensor_type()) return type.tensor_type();
  const char* kind = type.has_sequence_type()        ? "a sequence"
                     : type.has_map_type()           ? "a map"
                     : type.has_optional_type()      ? "an optional"
                     : type.has_sparse_tensor_type() ? "a sparse tensor"
                                                     : "of no declared type";
  throw InputError(describe_input(input) + " is " + kind + "; kiln supports dense tensor inputs");
}

// The declared dims; nullopt when the model gives no shape at all (unknown rank).
std::optional<std::vector<Dim>> declared_dims(const onnx::ValueInfoProto& input) {
  const TypeProto::Tensor& type = tensor_type(input);
  if (!type.has_shape()) return std::nullopt;
  std::vector<Dim> dims;
  for (const onnx::TensorShapeProto::Dimension& dim : type.shape().dim()) {
    if (dim.has_dim_value()) {
      if (dim.dim_value() < 0) {
        throw InputError(describe_input(input) + " has a negative dimension " +
                         std::to_string(dim.dim_value()));
      }
      dims.push_back({dim.dim_value(), std::to_string(dim.dim_value())});
    } else {
      dims.push_back({std::nullopt, dim.has_dim_param() && !dim.dim_param().empty()
                                        ? dim.dim_param()
                                        : std::string("?")});
    }
  }
  return dims;
}

std::string join_labels(const std::vector<Dim>& dims, const char* separator, bool example) {
  std::string text;
  for (size_t i = 0; i < dims.size(); ++i) {
    if (i) text += separator;
    text += example ? std::to_string(dims[i].value.value_or(1)) : dims[i].label;
  }
  return text;
}

std::string bind_hint(const onnx::ValueInfoProto& input, const std::vector<Dim>& dims) {
  return "bind them with --input-shape " + input.name() + "=" + join_labels(dims, "x", true);
}

// Fails unless `shape` has the declared rank and agrees with every known dimension.
void check_against_declared(const onnx::ValueInfoProto& input, const std::vector<Dim>& dims,
                            const Shape& shape, const std::string& what) {
  const std::string declared = "[" + join_labels(dims, ",", false) + "]";
  if (shape.size() != dims.size()) {
    throw InputError(what + " [" + shape_to_string(shape) + "] has rank " +
                     std::to_string(shape.size()) + ", but the model declares " +
                     describe_input(input) + " as " + declared + " (rank " +
                     std::to_string(dims.size()) + ")");
  }
  for (size_t i = 0; i < dims.size(); ++i) {
    if (dims[i].value && *dims[i].value != shape[i]) {
      throw InputError(what + " [" + shape_to_string(shape) + "] differs from the model's " +
                       describe_input(input) + " " + declared + " at dimension " +
                       std::to_string(i));
    }
  }
}

// Fails when the shape's element count does not fit in int64.
void require_countable(const onnx::ValueInfoProto& input, const Shape& shape) {
  int64_t count = 1;
  for (int64_t dim : shape) {
    if (dim != 0 && count > std::numeric_limits<int64_t>::max() / dim) {
      throw InputError(describe_input(input) + " has a shape [" + shape_to_string(shape) +
                       "] with too many elements");
    }
    count *= dim;
  }
}

}  // namespace

std::vector<std::string> dim_params(const onnx::ValueInfoProto& input) {
  std::vector<std::string> params;
  const TypeProto::Tensor& type = tensor_type(input);
  if (!type.has_shape()) return params;
  for (const onnx::TensorShapeProto::Dimension& dim : type.shape().dim()) {
    params.push_back(dim.has_dim_param() ? dim.dim_param() : "");
  }
  return params;
}

TensorType input_type(const onnx::ValueInfoProto& input, const Shape* bound_shape,
                      const std::function<void(const std::string&)>& on_defaulted) {
  const DType dtype = dtype_from_onnx(tensor_type(input).elem_type(), describe_input(input));
  const std::optional<std::vector<Dim>> dims = declared_dims(input);
  const std::string bound_what = "the shape bound to " + describe_input(input);
  if (bound_shape) {
    for (int64_t dim : *bound_shape) {
      if (dim < 0) {
        throw InputError(bound_what + " [" + shape_to_string(*bound_shape) +
                         "] has a negative dimension");
      }
    }
    if (dims) check_against_declared(input, *dims, *bound_shape, bound_what);
    require_countable(input, *bound_shape);
    return {dtype, *bound_shape};
  }
  if (!dims) {
    throw InputError(describe_input(input) + " has no shape in the model; bind it with " +
                     "--input-shape " + input.name() + "=DIMS (for example 1x3x224x224)");
  }
  Shape shape;
  bool defaulted = false;
  for (const Dim& dim : *dims) {
    if (!dim.value && !on_defaulted) {
      throw InputError(describe_input(input) + " has symbolic dimensions [" +
                       join_labels(*dims, ",", false) + "]; " + bind_hint(input, *dims));
    }
    defaulted |= !dim.value;
    shape.push_back(dim.value.value_or(1));
  }
  require_countable(input, shape);
  if (defaulted) {
    on_defaulted(describe_input(input) + " has symbolic dimensions [" +
                 join_labels(*dims, ",", false) + "]: bound to " + join_labels(*dims, "x", true) +
                 " (choose with --input-shape " + input.name() + "=DIMS)");
  }
  return {dtype, shape};
}

void check_bound_input(const onnx::ValueInfoProto& input, const Tensor& value) {
  const DType dtype = dtype_from_onnx(tensor_type(input).elem_type(), describe_input(input));
  if (value.dtype() != dtype) {
    throw InputError("the value bound to " + describe_input(input) + " has type " +
                     type_to_string(value.type()) + ", but the model declares " +
                     std::string(dtype_name(dtype)));
  }
  if (const std::optional<std::vector<Dim>> dims = declared_dims(input)) {
    check_against_declared(input, *dims, value.shape(),
                           "the value bound to " + describe_input(input));
  }
}

}  // namespace kiln::onnx_import
