// Builds small onnx::ModelProto graphs in C++ for the frontend tests.
#pragma once

#include <filesystem>
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "frontend/onnx_importer.h"
#include "ir/error.h"
#include "onnx/onnx.pb.h"
#include "test_temp_dir.h"

namespace kiln::onnx_import::frontend_test {

// A dimension of a graph input: a number or a symbol (dim_param).
using DimSpec = std::variant<int64_t, std::string>;

class ModelBuilder {
 public:
  explicit ModelBuilder(int64_t opset = 17) {
    model_.set_ir_version(8);
    model_.set_producer_name("kiln frontend_test");
    onnx::OperatorSetIdProto* entry = model_.add_opset_import();
    entry->set_domain("");
    entry->set_version(opset);
    model_.mutable_graph()->set_name("test");
  }

  onnx::ModelProto& model() { return model_; }
  onnx::GraphProto& graph() { return *model_.mutable_graph(); }

  onnx::ValueInfoProto* input(const std::string& name, int elem_type,
                              const std::vector<DimSpec>& dims) {
    onnx::ValueInfoProto* info = graph().add_input();
    info->set_name(name);
    onnx::TypeProto::Tensor* type = info->mutable_type()->mutable_tensor_type();
    type->set_elem_type(elem_type);
    onnx::TensorShapeProto* shape = type->mutable_shape();
    for (const DimSpec& dim : dims) {
      if (std::holds_alternative<int64_t>(dim)) {
        shape->add_dim()->set_dim_value(std::get<int64_t>(dim));
      } else {
        shape->add_dim()->set_dim_param(std::get<std::string>(dim));
      }
    }
    return info;
  }

  void output(const std::string& name) { graph().add_output()->set_name(name); }

  onnx::NodeProto* node(const std::string& op_type, const std::vector<std::string>& inputs,
                        const std::vector<std::string>& outputs, const std::string& name = "") {
    onnx::NodeProto* node = graph().add_node();
    node->set_op_type(op_type);
    node->set_name(name);
    for (const std::string& input : inputs) node->add_input(input);
    for (const std::string& output : outputs) node->add_output(output);
    return node;
  }

  // An initializer of `data_type` and `dims` without data yet.
  onnx::TensorProto* initializer(const std::string& name, int data_type,
                                 const std::vector<int64_t>& dims) {
    onnx::TensorProto* tensor = graph().add_initializer();
    tensor->set_name(name);
    tensor->set_data_type(data_type);
    for (int64_t dim : dims) tensor->add_dims(dim);
    return tensor;
  }

  onnx::TensorProto* float_initializer(const std::string& name, const std::vector<int64_t>& dims,
                                       const std::vector<float>& values) {
    onnx::TensorProto* tensor = initializer(name, onnx::TensorProto::FLOAT, dims);
    for (float value : values) tensor->add_float_data(value);
    return tensor;
  }

  onnx::TensorProto* int64_initializer(const std::string& name, const std::vector<int64_t>& dims,
                                       const std::vector<int64_t>& values) {
    onnx::TensorProto* tensor = initializer(name, onnx::TensorProto::INT64, dims);
    for (int64_t value : values) tensor->add_int64_data(value);
    return tensor;
  }

  std::string bytes() const { return model_.SerializeAsString(); }

  std::unique_ptr<Graph> import(const ImportOptions& options = {},
                                const std::string& base_dir = ".") const {
    return import_onnx_bytes(bytes(), base_dir, options);
  }

 private:
  onnx::ModelProto model_;
};

inline void add_int_attr(onnx::NodeProto* node, const std::string& name, int64_t value) {
  onnx::AttributeProto* attr = node->add_attribute();
  attr->set_name(name);
  attr->set_type(onnx::AttributeProto::INT);
  attr->set_i(value);
}

inline void add_ints_attr(onnx::NodeProto* node, const std::string& name,
                          const std::vector<int64_t>& values) {
  onnx::AttributeProto* attr = node->add_attribute();
  attr->set_name(name);
  attr->set_type(onnx::AttributeProto::INTS);
  for (int64_t value : values) attr->add_ints(value);
}

inline void add_string_attr(onnx::NodeProto* node, const std::string& name,
                            const std::string& value) {
  onnx::AttributeProto* attr = node->add_attribute();
  attr->set_name(name);
  attr->set_type(onnx::AttributeProto::STRING);
  attr->set_s(value);
}

inline void add_floats_attr(onnx::NodeProto* node, const std::string& name,
                            const std::vector<float>& values) {
  onnx::AttributeProto* attr = node->add_attribute();
  attr->set_name(name);
  attr->set_type(onnx::AttributeProto::FLOATS);
  for (float value : values) attr->add_floats(value);
}

inline void add_float_attr(onnx::NodeProto* node, const std::string& name, float value) {
  onnx::AttributeProto* attr = node->add_attribute();
  attr->set_name(name);
  attr->set_type(onnx::AttributeProto::FLOAT);
  attr->set_f(value);
}

// The message of the InputError that importing `builder`'s model throws, or "no error".
inline std::string import_error(const ModelBuilder& builder, const ImportOptions& options = {}) {
  try {
    builder.import(options);
  } catch (const InputError& error) {
    return error.what();
  }
  return "no error";
}

// A fresh, empty directory in the tests' temporary directory (test_temp_dir.h).
inline std::filesystem::path fresh_temp_dir(const std::string& name) {
  return testing_support::fresh_temp_path("frontend_" + name, /*directory=*/true);
}

}  // namespace kiln::onnx_import::frontend_test
