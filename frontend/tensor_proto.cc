// onnx::TensorProto -> kiln::Tensor: dtype mapping, typed fields, raw_data and external data.
//
// Every size is checked against the shape before any memory is allocated, so a corrupt model
// (a huge shape with no data) fails with a message instead of exhausting memory.
#include "frontend/tensor_proto.h"

#include <algorithm>
#include <cstring>
#include <limits>

#include "frontend/external_data.h"
#include "frontend/proto_io.h"
#include "ir/error.h"
#include "onnx/onnx.pb.h"

namespace kiln::onnx_import {
namespace {

using onnx::TensorProto;

std::string onnx_type_name(int onnx_type) {
  if (TensorProto::DataType_IsValid(onnx_type)) {
    std::string name = TensorProto::DataType_Name(static_cast<TensorProto::DataType>(onnx_type));
    if (!name.empty()) return name;
  }
  return "type code " + std::to_string(onnx_type);
}

std::string describe_tensor(const TensorProto& proto) {
  return proto.name().empty() ? std::string("unnamed tensor") : "tensor '" + proto.name() + "'";
}

// The shape from proto.dims, with the element count checked against overflow.
Shape checked_shape(const TensorProto& proto, const std::string& context) {
  Shape shape(proto.dims().begin(), proto.dims().end());
  int64_t count = 1;
  for (int64_t dim : shape) {
    if (dim < 0) {
      throw InputError(context + " has a negative dimension in its shape [" +
                       shape_to_string(shape) + "]");
    }
    if (dim != 0 && count > std::numeric_limits<int64_t>::max() / dim) {
      throw InputError(context + " has a shape [" + shape_to_string(shape) +
                       "] with too many elements");
    }
    count *= dim;
  }
  return shape;
}

// Fails unless a field holding `actual` values (or bytes) matches the `expected` count.
void require_count(const std::string& context, const TensorType& type, const std::string& field,
                   size_t actual, size_t expected) {
  if (actual != expected) {
    throw InputError(context + " (" + type_to_string(type) + ") has " + std::to_string(actual) +
                     " " + field + ", expected " + std::to_string(expected));
  }
}

// Bool tensors hold exactly 0 or 1 per byte.
void normalize_bools(Tensor& tensor) {
  if (tensor.dtype() != DType::kBool) return;
  auto* bytes = tensor.data<uint8_t>();
  for (int64_t i = 0; i < tensor.num_elements(); ++i) bytes[i] = bytes[i] != 0;
}

// The typed repeated field that holds a tensor of `dtype` when raw_data is not used.
Tensor from_typed_fields(const TensorProto& proto, const TensorType& type,
                         const std::string& context) {
  const auto count = static_cast<size_t>(type.num_elements());
  Tensor tensor;
  switch (type.dtype) {
    case DType::kF32:
      require_count(context, type, "values in float_data", proto.float_data_size(), count);
      tensor = Tensor(type);
      std::copy(proto.float_data().begin(), proto.float_data().end(), tensor.data<float>());
      return tensor;
    case DType::kF64:
      require_count(context, type, "values in double_data", proto.double_data_size(), count);
      tensor = Tensor(type);
      std::copy(proto.double_data().begin(), proto.double_data().end(), tensor.data<double>());
      return tensor;
    case DType::kI64:
      require_count(context, type, "values in int64_data", proto.int64_data_size(), count);
      tensor = Tensor(type);
      std::copy(proto.int64_data().begin(), proto.int64_data().end(), tensor.data<int64_t>());
      return tensor;
    case DType::kF16:
    case DType::kBF16:
      // int32_data holds the 16-bit patterns.
      require_count(context, type, "values in int32_data", proto.int32_data_size(), count);
      tensor = Tensor(type);
      for (size_t i = 0; i < count; ++i) {
        tensor.data<uint16_t>()[i] = static_cast<uint16_t>(proto.int32_data(static_cast<int>(i)));
      }
      return tensor;
    case DType::kI32:
    case DType::kI8:
    case DType::kU8:
    case DType::kBool:
      require_count(context, type, "values in int32_data", proto.int32_data_size(), count);
      tensor = Tensor(type);
      for (size_t i = 0; i < count; ++i) {
        tensor.set_int(static_cast<int64_t>(i), proto.int32_data(static_cast<int>(i)));
      }
      normalize_bools(tensor);
      return tensor;
  }
  throw InternalError("tensor_from_proto: unhandled dtype " + std::string(dtype_name(type.dtype)));
}

// Copies little-endian bytes (raw_data or an external file's contents) into a new tensor.
Tensor from_bytes(std::string_view bytes, const TensorType& type, const std::string& context,
                  const std::string& field) {
  require_count(context, type, field, bytes.size(), type.num_bytes());
  Tensor tensor(type);
  if (!bytes.empty()) std::memcpy(tensor.bytes(), bytes.data(), bytes.size());
  normalize_bools(tensor);
  return tensor;
}

// Element count * element size, or an error when that overflows size_t.
void require_addressable(const TensorType& type, const std::string& context) {
  const auto limit = std::numeric_limits<size_t>::max() / dtype_size(type.dtype);
  if (static_cast<uint64_t>(type.num_elements()) > limit) {
    throw InputError(context + " (" + type_to_string(type) + ") is too large");
  }
}

}  // namespace

DType dtype_from_onnx(int onnx_type, const std::string& context) {
  switch (onnx_type) {
    case TensorProto::FLOAT:
      return DType::kF32;
    case TensorProto::FLOAT16:
      return DType::kF16;
    case TensorProto::BFLOAT16:
      return DType::kBF16;
    case TensorProto::DOUBLE:
      return DType::kF64;
    case TensorProto::INT64:
      return DType::kI64;
    case TensorProto::INT32:
      return DType::kI32;
    case TensorProto::INT8:
      return DType::kI8;
    case TensorProto::UINT8:
      return DType::kU8;
    case TensorProto::BOOL:
      return DType::kBool;
    default:
      throw UnsupportedError(context + ": ONNX data type " + onnx_type_name(onnx_type) +
                             " is not supported (kiln supports FLOAT, FLOAT16, BFLOAT16, DOUBLE, "
                             "INT64, INT32, INT8, UINT8, BOOL)");
  }
}

int dtype_to_onnx(DType dtype) {
  switch (dtype) {
    case DType::kF32:
      return TensorProto::FLOAT;
    case DType::kF16:
      return TensorProto::FLOAT16;
    case DType::kBF16:
      return TensorProto::BFLOAT16;
    case DType::kF64:
      return TensorProto::DOUBLE;
    case DType::kI64:
      return TensorProto::INT64;
    case DType::kI32:
      return TensorProto::INT32;
    case DType::kI8:
      return TensorProto::INT8;
    case DType::kU8:
      return TensorProto::UINT8;
    case DType::kBool:
      return TensorProto::BOOL;
  }
  throw InternalError("dtype_to_onnx: unhandled dtype");
}

Tensor tensor_from_proto(const TensorProto& proto, const std::string& base_dir) {
  const std::string context = describe_tensor(proto);
  if (proto.has_segment()) {
    throw InputError(context + ": segmented tensors are not supported");
  }
  TensorType type{dtype_from_onnx(proto.data_type(), context), checked_shape(proto, context)};
  require_addressable(type, context);
  if (proto.data_location() == TensorProto::EXTERNAL) {
    const std::string bytes = read_external_data(proto, type.num_bytes(), base_dir, context);
    return from_bytes(bytes, type, context, "bytes of external data");
  }
  if (proto.has_raw_data()) return from_bytes(proto.raw_data(), type, context, "bytes in raw_data");
  return from_typed_fields(proto, type, context);
}

Tensor read_tensor_pb_file(const std::string& path) {
  const TensorProto proto = parse_tensor_proto_file(path);
  try {
    return tensor_from_proto(proto, parent_directory(path));
  } catch (const InputError& error) {
    error.rethrow_prefixed(path + ": ");
  }
}

std::string read_tensor_pb_name(const std::string& path) {
  return parse_tensor_proto_file(path).name();
}

}  // namespace kiln::onnx_import
