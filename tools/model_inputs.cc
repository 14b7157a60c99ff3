// Reading and matching model inputs (see the header).
#include "tools/model_inputs.h"

#include "ir/error.h"
#include "tools/tensor_files.h"

namespace kiln::tools {

// Reads the --input NAME=FILE options, by input name.
std::map<std::string, Tensor> read_input_files(const std::vector<std::string>& specs) {
  std::map<std::string, Tensor> tensors;
  for (const std::string& spec : specs) {
    const size_t equals = spec.find('=');
    if (equals == std::string::npos || equals == 0) {
      throw InputError("--input '" + spec + "': expected NAME=FILE.npy or NAME=FILE.pb");
    }
    const std::string name = spec.substr(0, equals);
    if (tensors.count(name)) throw InputError("--input '" + name + "' is given twice");
    tensors[name] = read_tensor_file(spec.substr(equals + 1));
  }
  return tensors;
}

std::vector<InputSignature> graph_signature(const Graph& graph) {
  std::vector<InputSignature> signature;
  for (const Value* input : graph.inputs()) signature.push_back({input->name(), input->type()});
  return signature;
}

std::vector<InputSignature> program_signature(const Program& program) {
  std::vector<InputSignature> signature;
  for (const int input : program.inputs) {
    signature.push_back({program.buffers[input].name, program.buffers[input].type});
  }
  return signature;
}

namespace {

// The file's tensor for `input`. NumPy has no bfloat16, so a bf16 input also takes an f32 .npy
// file, rounded to bf16 (as bf16 outputs are written as f32); any other dtype difference is an
// error that says how to fix it.
Tensor input_tensor(const InputSignature& input, const Tensor& given) {
  const DType wanted = input.type.dtype;
  if (given.dtype() == wanted) return given;
  if (wanted == DType::kBF16 && given.dtype() == DType::kF32) return given.converted(wanted);
  const std::string numpy_hint =
      wanted == DType::kF16 ? ", e.g. with numpy's .astype(np.float16)" : "";
  throw InputError("--input '" + input.name + "': the model takes " + type_to_string(input.type) +
                   ", the file holds " + type_to_string(given.type()) + " (convert the file" +
                   numpy_hint + "; --io-precision sets the dtype of the model's float inputs)");
}

}  // namespace

Tensor as_float_dtype(const Tensor& tensor, DType dtype) {
  const bool convert = tensor.dtype() != dtype && is_float(tensor.dtype()) && is_float(dtype);
  return convert ? tensor.converted(dtype) : tensor;
}

// The input tensors in signature order; every input needs one and every one must be used.
std::vector<Tensor> order_inputs(const std::vector<InputSignature>& signature,
                                 std::map<std::string, Tensor> given) {
  std::vector<Tensor> tensors;
  std::string missing;
  for (const InputSignature& input : signature) {
    auto it = given.find(input.name);
    if (it == given.end()) {
      missing += " " + input.name + ":" + type_to_string(input.type);
      continue;
    }
    tensors.push_back(input_tensor(input, it->second));
    given.erase(it);
  }
  if (!given.empty()) {
    std::string known;
    for (const InputSignature& input : signature) known += " " + input.name;
    throw InputError("--input '" + given.begin()->first +
                     "': the model has no such input (inputs:" + known + ")");
  }
  if (!missing.empty()) throw InputError("no --input given for model inputs:" + missing);
  return tensors;
}

}  // namespace kiln::tools
