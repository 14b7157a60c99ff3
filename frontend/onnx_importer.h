// ONNX model import: ModelProto -> ir::Graph.
//
// Reads the model (protobuf, with initializers from typed fields, raw_data or external data
// files next to the model), binds symbolic input dimensions, and converts each node with the
// converter table (frontend/converters/). Nodes whose inputs are all compile-time constants
// (the shape arithmetic exporters emit) are evaluated at import and become constants. All
// unsupported ops are reported in one error.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>

#include "ir/error.h"
#include "ir/graph.h"

namespace kiln::onnx_import {

struct ImportOptions {
  // Shapes for inputs with symbolic or unknown dimensions (--input-shape NAME=1x3x224x224).
  std::map<std::string, Shape> input_shapes;
  // Graph inputs whose values are fixed at compile time: they become constants. kiln test-onnx
  // binds inputs that an op needs as a constant (a Reshape's shape fed as a model input).
  std::map<std::string, Tensor> bound_inputs;
  // Evaluate nodes whose operands are all constants at import (on by default).
  bool fold_constants = true;
  // When set, a symbolic or unknown dimension of an input that input_shapes does not bind is
  // bound to 1 and this is called with a one-line note saying so (the tools print it); when
  // not, such an input is an InputError asking for --input-shape.
  std::function<void(const std::string&)> on_defaulted_dims;
  // When set, filled with each graph input's dim labels: a symbolic dim's dim_param (dims that
  // share one are equal), "" for the others (kiln/dynamic_compile.h).
  std::map<std::string, std::vector<std::string>>* symbolic_dims = nullptr;
};

// Thrown when a converter needs a compile-time value that comes from a graph input.
class ConstantInputRequired : public InputError {
 public:
  ConstantInputRequired(const std::string& message, std::string input_name)
      : InputError(message), input_name_(std::move(input_name)) {}
  const std::string& input_name() const { return input_name_; }

 protected:
  std::exception_ptr with_prefix(const std::string& prefix) const override {
    return std::make_exception_ptr(ConstantInputRequired(prefix + what(), input_name_));
  }

 private:
  std::string input_name_;
};

// Imports the model at `path`; external data files are looked up next to it.
std::unique_ptr<Graph> import_onnx_file(const std::string& path, const ImportOptions& options = {});
// Imports a serialized ModelProto; `base_dir` is where external data files live.
std::unique_ptr<Graph> import_onnx_bytes(std::string_view bytes, const std::string& base_dir,
                                         const ImportOptions& options = {});

}  // namespace kiln::onnx_import
