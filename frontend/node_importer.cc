// NodeImporter: one ONNX node's inputs, attributes and outputs as its converter sees them.
#include "frontend/node_importer.h"

#include <set>

#include "frontend/import_session.h"
#include "frontend/onnx_importer.h"
#include "frontend/tensor_proto.h"
#include "ir/error.h"
#include "onnx/onnx.pb.h"

namespace kiln::onnx_import {
namespace {

using onnx::AttributeProto;

std::string attr_type_name(AttributeProto::AttributeType type) {
  std::string name = AttributeProto::AttributeType_Name(type);
  return name.empty() ? "type code " + std::to_string(type) : name;
}

const AttributeProto* find_attr(const onnx::NodeProto& proto, const std::string& name) {
  for (const AttributeProto& attr : proto.attribute()) {
    if (attr.name() == name) return &attr;
  }
  return nullptr;
}

// The attribute `name`, checked to be of `expected` type; nullptr when it is absent but the
// caller has a fallback, an error naming the node when it is absent and required.
const AttributeProto* typed_attr(const NodeImporter& node, const onnx::NodeProto& proto,
                                 const std::string& name, AttributeProto::AttributeType expected,
                                 bool has_fallback) {
  const AttributeProto* attr = find_attr(proto, name);
  if (!attr) {
    if (has_fallback) return nullptr;
    node.fail("missing required attribute '" + name + "'");
  }
  if (attr->type() != expected) {
    node.fail("attribute '" + name + "' must be " + attr_type_name(expected) + ", got " +
              attr_type_name(attr->type()));
  }
  return attr;
}

// The first graph input (in depth-first order over operands) that `value` depends on, or nullptr
// (a value computed from constants only, which happens when import-time folding is off).
const Value* first_graph_input_feeding(const Value* value) {
  std::vector<const Value*> pending = {value};
  std::set<const Value*> seen;
  while (!pending.empty()) {
    const Value* current = pending.back();
    pending.pop_back();
    if (!seen.insert(current).second) continue;
    if (current->kind() == Value::Kind::kInput) return current;
    if (current->producer()) {
      for (const Value* operand : current->producer()->operands()) pending.push_back(operand);
    }
  }
  return nullptr;
}

}  // namespace

NodeImporter::NodeImporter(ImportSession& session, const onnx::NodeProto& proto, int opset,
                           std::vector<Value*> inputs)
    : session_(session),
      proto_(proto),
      opset_(opset),
      inputs_(std::move(inputs)),
      node_name_(onnx_node_name(proto, session.node_index())) {}

const std::string& NodeImporter::op_type() const { return proto_.op_type(); }

Value* NodeImporter::input(size_t i) const {
  if (!has_input(i)) {
    fail("input " + std::to_string(i) + " is required but " +
         (i < inputs_.size() ? "the node leaves it empty"
                             : "the node has only " + std::to_string(inputs_.size()) + " inputs"));
  }
  return inputs_[i];
}

const Tensor& NodeImporter::constant_input(size_t i, const std::string& what) const {
  const Value* value = input(i);
  if (value->is_constant() && value->has_data()) return value->data();
  const std::string& name = proto_.input(static_cast<int>(i));
  const std::string message = "ONNX node '" + node_name_ + "' (" + op_type() + "): input " +
                              std::to_string(i) + " ('" + name +
                              "') must be a compile-time constant (" + what + ")";
  if (value->kind() == Value::Kind::kInput) {
    throw ConstantInputRequired(message + ", but it is a graph input; bind its value", name);
  }
  const Value* source = first_graph_input_feeding(value);
  if (!source) throw InputError(message + ", but it is computed by other nodes (folding is off)");
  throw ConstantInputRequired(
      message + ", but it is computed from graph input '" + source->name() + "'", source->name());
}

std::optional<Tensor> NodeImporter::optional_constant_input(size_t i,
                                                            const std::string& what) const {
  if (!has_input(i)) return std::nullopt;
  return constant_input(i, what);
}

size_t NodeImporter::num_outputs() const { return static_cast<size_t>(proto_.output_size()); }

bool NodeImporter::has_output(size_t i) const {
  return i < num_outputs() && !proto_.output(static_cast<int>(i)).empty();
}

bool NodeImporter::has_attr(const std::string& name) const {
  return find_attr(proto_, name) != nullptr;
}

int64_t NodeImporter::attr_int(const std::string& name, std::optional<int64_t> fallback) const {
  const AttributeProto* attr =
      typed_attr(*this, proto_, name, AttributeProto::INT, fallback.has_value());
  return attr ? attr->i() : *fallback;
}

double NodeImporter::attr_float(const std::string& name, std::optional<double> fallback) const {
  const AttributeProto* attr =
      typed_attr(*this, proto_, name, AttributeProto::FLOAT, fallback.has_value());
  return attr ? attr->f() : *fallback;
}

std::string NodeImporter::attr_string(const std::string& name,
                                      std::optional<std::string> fallback) const {
  const AttributeProto* attr =
      typed_attr(*this, proto_, name, AttributeProto::STRING, fallback.has_value());
  return attr ? attr->s() : *fallback;
}

std::vector<int64_t> NodeImporter::attr_ints(const std::string& name,
                                             std::optional<std::vector<int64_t>> fallback) const {
  const AttributeProto* attr =
      typed_attr(*this, proto_, name, AttributeProto::INTS, fallback.has_value());
  if (!attr) return *fallback;
  return {attr->ints().begin(), attr->ints().end()};
}

std::vector<double> NodeImporter::attr_floats(const std::string& name,
                                              std::optional<std::vector<double>> fallback) const {
  const AttributeProto* attr =
      typed_attr(*this, proto_, name, AttributeProto::FLOATS, fallback.has_value());
  if (!attr) return *fallback;
  return {attr->floats().begin(), attr->floats().end()};
}

std::vector<std::string> NodeImporter::attr_strings(
    const std::string& name, std::optional<std::vector<std::string>> fallback) const {
  const AttributeProto* attr =
      typed_attr(*this, proto_, name, AttributeProto::STRINGS, fallback.has_value());
  if (!attr) return *fallback;
  return {attr->strings().begin(), attr->strings().end()};
}

Tensor NodeImporter::attr_tensor(const std::string& name) const {
  const AttributeProto* attr = typed_attr(*this, proto_, name, AttributeProto::TENSOR, false);
  try {
    return tensor_from_proto(attr->t(), session_.base_dir());
  } catch (const UnsupportedError& error) {
    unsupported("attribute '" + name + "': " + error.what());
  } catch (const InputError& error) {
    fail("attribute '" + name + "': " + error.what());
  }
}

std::vector<Value*> NodeImporter::emit(const std::string& op, std::vector<Value*> operands,
                                       AttributeMap attrs) {
  for (size_t i = 0; i < operands.size(); ++i) {
    if (!operands[i]) {
      throw InternalError("converter for ONNX node '" + node_name_ + "' (" + op_type() +
                          ") passed no value as operand " + std::to_string(i) + " of " + op);
    }
  }
  return session_.emit(op, std::move(operands), std::move(attrs), node_name_);
}

Value* NodeImporter::constant(Tensor data) { return session_.graph().add_constant("", data); }

Value* NodeImporter::scalar_constant(DType dtype, double value) {
  Tensor tensor(dtype, Shape{});
  tensor.set_double(0, value);
  return constant(tensor);
}

void NodeImporter::fail(const std::string& message) const {
  throw InputError("ONNX node '" + node_name_ + "' (" + op_type() + "): " + message);
}

void NodeImporter::unsupported(const std::string& message) const {
  throw UnsupportedError("ONNX node '" + node_name_ + "' (" + op_type() + "): " + message);
}

}  // namespace kiln::onnx_import
