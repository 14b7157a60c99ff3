// onnx::TensorProto <-> kiln::Tensor: typed fields, raw_data (little-endian) and external data.
#pragma once

#include <string>

#include "ir/tensor.h"

namespace onnx {
class TensorProto;
}

namespace kiln::onnx_import {

// Converts a TensorProto; external data is read relative to `base_dir`. Throws InputError naming
// the tensor for an unsupported data type, a size mismatch or a missing/short external file.
Tensor tensor_from_proto(const onnx::TensorProto& proto, const std::string& base_dir);

// Reads a serialized TensorProto file (the ONNX backend tests' input_0.pb / output_0.pb).
Tensor read_tensor_pb_file(const std::string& path);
// The tensor's name recorded in such a file (may be empty).
std::string read_tensor_pb_name(const std::string& path);

// ONNX TensorProto.DataType code <-> kiln DType; throws InputError for types kiln lacks.
DType dtype_from_onnx(int onnx_type, const std::string& context);
int dtype_to_onnx(DType dtype);

}  // namespace kiln::onnx_import
