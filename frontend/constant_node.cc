// ONNX Constant nodes -> tensors.
#include "frontend/constant_node.h"

#include "frontend/tensor_proto.h"
#include "ir/error.h"
#include "onnx/onnx.pb.h"

namespace kiln::onnx_import {
namespace {

Tensor value_of(const onnx::AttributeProto& attr, const std::string& base_dir) {
  const std::string& name = attr.name();
  if (name == "value") return tensor_from_proto(attr.t(), base_dir);
  if (name == "value_float") return Tensor::scalar_f32(attr.f());
  if (name == "value_int") return Tensor::scalar_i64(attr.i());
  if (name == "value_floats") {
    std::vector<float> values(attr.floats().begin(), attr.floats().end());
    return Tensor::from_vector(DType::kF32, {static_cast<int64_t>(values.size())}, values);
  }
  if (name == "value_ints") {
    std::vector<int64_t> values(attr.ints().begin(), attr.ints().end());
    return Tensor::from_vector(DType::kI64, {static_cast<int64_t>(values.size())}, values);
  }
  if (name == "sparse_value") throw InputError("sparse_value is not supported");
  if (name == "value_string" || name == "value_strings") {
    throw InputError(name + ": string tensors are not supported");
  }
  throw InputError("unknown attribute '" + name + "'");
}

}  // namespace

Tensor constant_node_value(const onnx::NodeProto& node, const std::string& node_name,
                           const std::string& base_dir) {
  const std::string context = "ONNX node '" + node_name + "' (Constant): ";
  if (node.attribute_size() != 1) {
    throw InputError(context + "needs exactly one value attribute, got " +
                     std::to_string(node.attribute_size()));
  }
  if (node.output_size() != 1) {
    throw InputError(context + "needs exactly one output, got " +
                     std::to_string(node.output_size()));
  }
  try {
    return value_of(node.attribute(0), base_dir);
  } catch (const InputError& error) {
    error.rethrow_prefixed(context);
  }
}

}  // namespace kiln::onnx_import
