// ONNX model import: ModelProto -> ir::Graph.
//
// Steps, in order:
//   1. Parse the ModelProto; check the IR version and the default-domain opset (13..21).
//   2. Check every node is supported, reporting all unsupported ones at once.
//   3. Initializers become named constants (typed fields, raw_data or external data).
//   4. Graph inputs that are not initializers become graph inputs, with symbolic dimensions
//      bound from ImportOptions::input_shapes; inputs in ImportOptions::bound_inputs become
//      constants.
//   5. Nodes, in the model's (topological) order, go through their converter, whose emitted
//      kiln nodes fold into constants when all their operands are constants.
//   6. Graph outputs are looked up by name; unused constants are dropped.
//
// Every error names the file (or "<memory>"), and the node, input or tensor at fault.
#include "frontend/onnx_importer.h"

#include <algorithm>
#include <limits>
#include <set>
#include <unordered_map>

#include "frontend/import_session.h"
#include "frontend/input_signature.h"
#include "frontend/node_importer.h"
#include "frontend/op_support.h"
#include "frontend/proto_io.h"
#include "frontend/tensor_proto.h"
#include "onnx/onnx.pb.h"

namespace kiln::onnx_import {
namespace {

// opset_import (needed for opset 13 and up) exists since IR version 3.
constexpr int64_t kMinIrVersion = 3;

// The ONNX name -> kiln value map, remembering which node defined each name.
struct Definition {
  Value* value = nullptr;  // nullptr: the converter does not produce this output
  std::string producer;    // the defining node's name; empty for inputs and initializers
  int output_index = 0;
};

class ModelImporter {
 public:
  ModelImporter(const onnx::ModelProto& model, const std::string& base_dir,
                const ImportOptions& options)
      : model_(model),
        graph_proto_(model.graph()),
        options_(options),
        graph_(std::make_unique<Graph>()),
        session_(*graph_, base_dir, options.fold_constants) {}

  std::unique_ptr<Graph> import() {
    check_versions();
    require_supported_ops(graph_proto_, opsets_);
    import_initializers();
    import_inputs();
    index_producers();
    for (int i = 0; i < graph_proto_.node_size(); ++i) import_node(static_cast<size_t>(i));
    import_outputs();
    graph_->erase_unused_constants();
    return std::move(graph_);
  }

 private:
  void check_versions();
  void import_initializers();
  void import_inputs();
  void check_user_bindings(const std::set<std::string>& input_names) const;
  void index_producers();
  void import_node(size_t index);
  void import_outputs();
  std::vector<Value*> node_inputs(const onnx::NodeProto& node, const std::string& node_name);
  void define(const std::string& name, Definition definition);

  const onnx::ModelProto& model_;
  const onnx::GraphProto& graph_proto_;
  const ImportOptions& options_;
  std::unique_ptr<Graph> graph_;
  ImportSession session_;
  OpsetVersions opsets_;
  std::unordered_map<std::string, Definition> values_;
  // Output name -> producing node name, for "used before it is produced" errors.
  std::unordered_map<std::string, std::string> later_producers_;
};

void ModelImporter::check_versions() {
  if (model_.ir_version() < kMinIrVersion || model_.ir_version() > onnx::IR_VERSION) {
    throw InputError("ONNX IR version " + std::to_string(model_.ir_version()) +
                     " is not supported (kiln reads IR versions " + std::to_string(kMinIrVersion) +
                     " to " + std::to_string(onnx::IR_VERSION) + ")");
  }
  opsets_ = opset_versions(model_);
  auto opset = opsets_.find("");
  if (opset == opsets_.end()) {
    // A model of other domains' ops only: the unsupported-op report names them.
    const auto& nodes = model_.graph().node();
    if (std::none_of(nodes.begin(), nodes.end(), [](const onnx::NodeProto& node) {
          return is_default_domain(node.domain());
        })) {
      return;
    }
    throw InputError(
        "the model does not import the default ONNX opset (no opset_import entry "
        "for domain '' or 'ai.onnx')");
  }
  // Whether each op is supported at this opset is decided per op (ConverterTable::find): kiln
  // targets opsets 13 to 21 and also serves op versions that only changed type constraints.
  if (opset->second > ConverterTable::newest_known_opset()) {
    throw UnsupportedError("ONNX opset " + std::to_string(opset->second) +
                           " is newer than kiln knows (up to " +
                           std::to_string(ConverterTable::newest_known_opset()) + ")");
  }
}

void ModelImporter::import_initializers() {
  if (graph_proto_.sparse_initializer_size() > 0) {
    const onnx::SparseTensorProto& sparse = graph_proto_.sparse_initializer(0);
    throw InputError("sparse initializer '" + sparse.values().name() +
                     "' is not supported (kiln reads dense initializers only)");
  }
  for (const onnx::TensorProto& initializer : graph_proto_.initializer()) {
    if (initializer.name().empty()) throw InputError("an initializer has no name");
    Tensor data = tensor_from_proto(initializer, session_.base_dir());
    define(initializer.name(), {graph_->add_constant(initializer.name(), std::move(data)), "", 0});
  }
}

void ModelImporter::import_inputs() {
  // An input with an initializer of the same name is a constant with a default value.
  std::vector<const onnx::ValueInfoProto*> inputs;
  std::set<std::string> input_names;
  for (const onnx::ValueInfoProto& input : graph_proto_.input()) {
    if (input.name().empty()) throw InputError("a graph input has no name");
    if (values_.count(input.name())) continue;
    inputs.push_back(&input);
    input_names.insert(input.name());
  }
  check_user_bindings(input_names);
  for (const onnx::ValueInfoProto* input : inputs) {
    auto bound = options_.bound_inputs.find(input->name());
    if (bound != options_.bound_inputs.end()) {
      check_bound_input(*input, bound->second);
      define(input->name(), {graph_->add_constant(input->name(), bound->second), "", 0});
      continue;
    }
    auto shape = options_.input_shapes.find(input->name());
    const TensorType type =
        input_type(*input, shape == options_.input_shapes.end() ? nullptr : &shape->second,
                   options_.on_defaulted_dims);
    define(input->name(), {graph_->add_input(input->name(), type), "", 0});
    if (options_.symbolic_dims) (*options_.symbolic_dims)[input->name()] = dim_params(*input);
  }
}

// Every name the user bound must be a graph input.
void ModelImporter::check_user_bindings(const std::set<std::string>& input_names) const {
  // (name, what was given for it: a shape by --input-shape or the shape of an --input file, a
  // value by kiln test-onnx)
  std::vector<std::pair<std::string, std::string>> bindings;
  for (const auto& [name, shape] : options_.input_shapes) bindings.push_back({name, "a shape"});
  for (const auto& [name, value] : options_.bound_inputs) bindings.push_back({name, "a value"});
  for (const auto& [name, what] : bindings) {
    if (input_names.count(name)) continue;
    if (values_.count(name)) {
      throw InputError(what + " is bound to '" + name + "', which the model defines with an " +
                       "initializer (kiln treats it as a constant)");
    }
    std::string list;
    for (const std::string& input : input_names) list += (list.empty() ? "'" : ", '") + input + "'";
    throw InputError("the model has no input '" + name + "' (its inputs: " +
                     (list.empty() ? std::string("none") : list) + "); " + what +
                     " was given for it (by --input-shape, or --input NAME=FILE)");
  }
}

void ModelImporter::index_producers() {
  for (int i = 0; i < graph_proto_.node_size(); ++i) {
    const onnx::NodeProto& node = graph_proto_.node(i);
    for (const std::string& output : node.output()) {
      later_producers_.emplace(output, onnx_node_name(node, static_cast<size_t>(i)));
    }
  }
}

std::vector<Value*> ModelImporter::node_inputs(const onnx::NodeProto& node,
                                               const std::string& node_name) {
  std::vector<Value*> inputs;
  for (int i = 0; i < node.input_size(); ++i) {
    const std::string& name = node.input(i);
    if (name.empty()) {
      inputs.push_back(nullptr);
      continue;
    }
    const std::string context = "ONNX node '" + node_name + "' (" + node.op_type() + "): input " +
                                std::to_string(i) + " ('" + name + "')";
    auto it = values_.find(name);
    if (it == values_.end()) {
      auto later = later_producers_.find(name);
      if (later != later_producers_.end()) {
        throw InputError(context + " is used before node '" + later->second +
                         "' produces it (ONNX nodes must be in topological order)");
      }
      throw InputError(context + " is not defined by any node, initializer or graph input");
    }
    if (!it->second.value) {
      throw InputError(context + " is output " + std::to_string(it->second.output_index) +
                       " of node '" + it->second.producer + "', which kiln does not compute");
    }
    inputs.push_back(it->second.value);
  }
  return inputs;
}

void ModelImporter::define(const std::string& name, Definition definition) {
  if (!values_.emplace(name, definition).second) {
    throw InputError("value '" + name + "' is defined twice" +
                     (definition.producer.empty()
                          ? std::string()
                          : " (again by node '" + definition.producer + "')"));
  }
  // A constant (folded or given) keeps its ONNX name, like initializers do.
  Value* value = definition.value;
  if (value && value->is_constant() && value->name().empty()) value->set_name(name);
}

void ModelImporter::import_node(size_t index) {
  const onnx::NodeProto& node = graph_proto_.node(static_cast<int>(index));
  const std::string node_name = onnx_node_name(node, index);
  session_.set_node_index(index);
  std::vector<Value*> inputs = node_inputs(node, node_name);
  const int opset = static_cast<int>(opsets_.at(""));
  ConvertFn convert = ConverterTable::global().find(node.op_type(), opset);
  NodeImporter importer(session_, node, opset, std::move(inputs));
  std::vector<Value*> results = convert(importer);
  // Outputs past the node's list are optional ones the model omits; their values go unused.
  results.resize(static_cast<size_t>(node.output_size()), nullptr);
  for (int i = 0; i < node.output_size(); ++i) {
    if (node.output(i).empty()) continue;
    define(node.output(i), {results[static_cast<size_t>(i)], node_name, i});
  }
}

void ModelImporter::import_outputs() {
  std::vector<Value*> outputs;
  for (const onnx::ValueInfoProto& output : graph_proto_.output()) {
    auto it = values_.find(output.name());
    if (it == values_.end()) {
      throw InputError("graph output '" + output.name() +
                       "' is not produced by any node, initializer or input");
    }
    if (!it->second.value) {
      throw InputError("graph output '" + output.name() + "' is output " +
                       std::to_string(it->second.output_index) + " of node '" +
                       it->second.producer + "', which kiln does not compute");
    }
    Value* value = it->second.value;
    if (value->name().empty()) value->set_name(output.name());
    outputs.push_back(value);
  }
  graph_->set_outputs(std::move(outputs));
}

std::unique_ptr<Graph> import_model(std::string_view bytes, const std::string& base_dir,
                                    const ImportOptions& options) {
  if (bytes.size() > static_cast<size_t>(std::numeric_limits<int>::max())) {
    throw InputError(
        "the model file is over 2 GB, which protobuf cannot parse; store its "
        "weights as ONNX external data");
  }
  onnx::ModelProto model;
  if (!parse_large_message(bytes, model)) {
    throw InputError("not a valid ONNX model (protobuf parse failed)");
  }
  if (!model.has_graph()) throw InputError("not a valid ONNX model (it has no graph)");
  return ModelImporter(model, base_dir, options).import();
}

// Runs `import` and prefixes any InputError with `source` (the file name).
template <class ImportFn>
std::unique_ptr<Graph> with_source(const std::string& source, ImportFn import) {
  try {
    return import();
  } catch (const InputError& error) {
    error.rethrow_prefixed(source + ": ");
  }
}

}  // namespace

std::unique_ptr<Graph> import_onnx_file(const std::string& path, const ImportOptions& options) {
  const std::string bytes = read_whole_file(path);
  return with_source(path, [&] { return import_model(bytes, parent_directory(path), options); });
}

std::unique_ptr<Graph> import_onnx_bytes(std::string_view bytes, const std::string& base_dir,
                                         const ImportOptions& options) {
  return with_source("<memory>", [&] { return import_model(bytes, base_dir, options); });
}

}  // namespace kiln::onnx_import
