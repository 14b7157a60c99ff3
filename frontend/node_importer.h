// The view of one ONNX node that an op converter sees while the model is imported.
//
// A converter (frontend/converters/*.cc) turns one ONNX node into kiln nodes with emit().
// ONNX inputs that only carry configuration (Reshape's shape, Slice's starts, ReduceSum's axes
// from opset 13/18 on, Pad's pads, ...) become kiln attributes: read them with
// constant_input(), which fails with a clear error when the value is not known at compile time.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "ir/attribute.h"
#include "ir/graph.h"

namespace onnx {
class NodeProto;
}

namespace kiln::onnx_import {

class ImportSession;  // frontend/onnx_importer.cc: the model being imported

class NodeImporter {
 public:
  NodeImporter(ImportSession& session, const onnx::NodeProto& proto, int opset,
               std::vector<Value*> inputs);

  const std::string& op_type() const;
  // The ONNX node's name, or "<op_type> #<index>" when the model left it empty.
  const std::string& node_name() const { return node_name_; }
  int opset() const { return opset_; }

  // Inputs, as written in the node; an empty name (an omitted optional input) counts too.
  size_t num_inputs() const { return inputs_.size(); }
  bool has_input(size_t i) const { return i < inputs_.size() && inputs_[i] != nullptr; }
  // Throws InputError naming the node if the input is absent.
  Value* input(size_t i) const;
  // The compile-time value of input i (a constant, folded at import, or bound by the user).
  // Otherwise throws ConstantInputRequired "node N: input i ('name') must be a compile-time
  // constant (what)", naming the graph input the value comes from.
  const Tensor& constant_input(size_t i, const std::string& what) const;
  // Like constant_input, nullopt when the input is absent.
  std::optional<Tensor> optional_constant_input(size_t i, const std::string& what) const;

  size_t num_outputs() const;
  // Whether output i is named (a node may omit optional outputs).
  bool has_output(size_t i) const;

  bool has_attr(const std::string& name) const;
  int64_t attr_int(const std::string& name, std::optional<int64_t> fallback = {}) const;
  double attr_float(const std::string& name, std::optional<double> fallback = {}) const;
  std::string attr_string(const std::string& name, std::optional<std::string> fallback = {}) const;
  std::vector<int64_t> attr_ints(const std::string& name,
                                 std::optional<std::vector<int64_t>> fallback = {}) const;
  std::vector<double> attr_floats(const std::string& name,
                                  std::optional<std::vector<double>> fallback = {}) const;
  std::vector<std::string> attr_strings(
      const std::string& name, std::optional<std::vector<std::string>> fallback = {}) const;
  Tensor attr_tensor(const std::string& name) const;

  // Adds a kiln node whose provenance is this ONNX node; returns its results.
  std::vector<Value*> emit(const std::string& op, std::vector<Value*> operands,
                           AttributeMap attrs = {});
  Value* emit1(const std::string& op, std::vector<Value*> operands, AttributeMap attrs = {}) {
    return emit(op, std::move(operands), std::move(attrs)).at(0);
  }
  // Adds a kiln reshape of `x` to `shape`.
  Value* emit_reshape(Value* x, const Shape& shape) {
    return emit1("reshape", {x}, {{"shape", shape}});
  }
  // Adds a kiln slice of `x`'s elements [begin, end) along `axis`.
  Value* emit_slice(Value* x, int64_t axis, int64_t begin, int64_t end) {
    return emit1("slice", {x},
                 {{"starts", std::vector<int64_t>{begin}},
                  {"ends", std::vector<int64_t>{end}},
                  {"axes", std::vector<int64_t>{axis}},
                  {"steps", std::vector<int64_t>{1}}});
  }
  // Adds a constant to the graph.
  Value* constant(Tensor data);
  // Adds a scalar constant of `dtype` holding `value` (rounded to it).
  Value* scalar_constant(DType dtype, double value);

  // Throws InputError "ONNX node 'name' (Op_type): message".
  [[noreturn]] void fail(const std::string& message) const;
  // The same, as an UnsupportedError: the node is valid ONNX that kiln does not support (an
  // attribute value, a mode, a data type).
  [[noreturn]] void unsupported(const std::string& message) const;

 private:
  ImportSession& session_;
  const onnx::NodeProto& proto_;
  int opset_;
  std::vector<Value*> inputs_;
  std::string node_name_;
};

// Converts one ONNX node; returns one value per ONNX output (nullptr for an output it does not
// produce, which is an error only if the model uses it).
using ConvertFn = std::vector<Value*> (*)(NodeImporter& node);

// ONNX op type -> converter, by the opset version each converter starts at.
class ConverterTable {
 public:
  static const ConverterTable& global();

  // The converter implements the op version in force at `since_opset`; it also serves versions
  // that differ only in type constraints (see converter_table.cc).
  void add(const std::string& op_type, int since_opset, ConvertFn convert);
  // The converter for this op at the model's opset, or nullptr if kiln does not support it.
  ConvertFn find(const std::string& op_type, int opset) const;
  // The newest opset of the onnx release the version table was generated from.
  static int newest_known_opset();
  std::vector<std::string> op_types() const;

 private:
  struct Entry {
    std::string op_type;
    int since_opset;
    ConvertFn convert;
  };
  std::vector<Entry> entries_;
};

// Registration functions, one per file in frontend/converters/, called by ConverterTable.
void register_elementwise_converters(ConverterTable& table);
// QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear, SwiGLU (elementwise_quantize.cc).
void register_quantize_converters(ConverterTable& table);
void register_nn_converters(ConverterTable& table);
void register_layout_converters(ConverterTable& table);

}  // namespace kiln::onnx_import
