// Loading node test cases: the model's non-initializer inputs name the data set's input_K.pb
// files; an input the importer needs as a constant is bound from its file.
#include "tests/codegen/node_test_cases.h"

#include <algorithm>
#include <set>

#include "frontend/onnx_importer.h"
#include "frontend/proto_io.h"
#include "frontend/tensor_proto.h"
#include "ir/error.h"
#include "onnx/onnx.pb.h"

namespace kiln::testing {
namespace fs = std::filesystem;

namespace {

std::vector<std::string> model_input_names(const fs::path& model_path) {
  onnx::ModelProto model;
  if (!onnx_import::parse_large_message(onnx_import::read_whole_file(model_path.string()), model)) {
    throw InputError(model_path.string() + ": unreadable model");
  }
  std::set<std::string> initializers;
  for (const onnx::TensorProto& tensor : model.graph().initializer()) {
    initializers.insert(tensor.name());
  }
  std::vector<std::string> names;
  for (const onnx::ValueInfoProto& input : model.graph().input()) {
    if (!initializers.count(input.name())) names.push_back(input.name());
  }
  return names;
}

std::vector<Tensor> read_tensors(const fs::path& data_dir, const std::string& prefix) {
  std::vector<Tensor> tensors;
  for (int k = 0; fs::exists(data_dir / (prefix + std::to_string(k) + ".pb")); ++k) {
    tensors.push_back(onnx_import::read_tensor_pb_file(
        (data_dir / (prefix + std::to_string(k) + ".pb")).string()));
  }
  return tensors;
}

}  // namespace

std::vector<fs::path> find_node_test_cases(const fs::path& dir) {
  std::vector<fs::path> cases;
  std::error_code error;
  for (fs::directory_iterator it(dir, error), end; !error && it != end; it.increment(error)) {
    if (fs::exists(it->path() / "model.onnx")) cases.push_back(it->path());
  }
  if (cases.empty()) throw InputError(dir.string() + ": holds no node test cases");
  std::sort(cases.begin(), cases.end());
  return cases;
}

namespace {

// One data set of the case whose model is `model`, the model imported with its inputs bound.
NodeTestCase load_data_set(const fs::path& model, const fs::path& data_dir) {
  const std::vector<std::string> names = model_input_names(model);
  const std::vector<Tensor> input_tensors = read_tensors(data_dir, "input_");
  NodeTestCase test_case;
  for (size_t k = 0; k < names.size() && k < input_tensors.size(); ++k) {
    test_case.inputs[names[k]] = input_tensors[k];
  }
  test_case.expected = read_tensors(data_dir, "output_");
  onnx_import::ImportOptions options;
  while (!test_case.graph) {
    try {
      test_case.graph = onnx_import::import_onnx_file(model.string(), options);
    } catch (const onnx_import::ConstantInputRequired& needed) {
      auto it = test_case.inputs.find(needed.input_name());
      if (it == test_case.inputs.end() || options.bound_inputs.count(needed.input_name())) throw;
      options.bound_inputs[it->first] = it->second;
    }
  }
  return test_case;
}

}  // namespace

std::vector<NodeTestCase> load_node_test_data_sets(const fs::path& dir) {
  std::vector<fs::path> data_dirs;
  for (const fs::directory_entry& entry : fs::directory_iterator(dir)) {
    if (entry.path().filename().string().starts_with("test_data_set_")) {
      data_dirs.push_back(entry.path());
    }
  }
  if (data_dirs.empty()) throw InputError(dir.string() + ": no test_data_set_* directory");
  std::sort(data_dirs.begin(), data_dirs.end());
  std::vector<NodeTestCase> data_sets;
  for (const fs::path& data_dir : data_dirs) {
    data_sets.push_back(load_data_set(dir / "model.onnx", data_dir));
  }
  return data_sets;
}

NodeTestCase load_node_test_case(const fs::path& dir) {
  return load_data_set(dir / "model.onnx", dir / "test_data_set_0");
}

}  // namespace kiln::testing
