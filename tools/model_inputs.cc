// Reading and matching model inputs (see the header).
#include "tools/model_inputs.h"

#include <map>

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
  // NumPy's name of the dtype the file should hold (bf16 inputs take f32 files).
  const std::map<DType, std::string> numpy_names = {
      {DType::kF32, "float32"}, {DType::kF16, "float16"}, {DType::kBF16, "float32"},
      {DType::kF64, "float64"}, {DType::kI64, "int64"},   {DType::kI32, "int32"},
      {DType::kI8, "int8"},     {DType::kU8, "uint8"},    {DType::kBool, "bool_"}};
  std::string hint =
      "convert the file, e.g. with numpy's .astype(np." + numpy_names.at(wanted) + ")";
  // A 16-bit file for an f32 input: the model can take 16-bit inputs instead.
  if (wanted == DType::kF32 && (given.dtype() == DType::kF16 || given.dtype() == DType::kBF16)) {
    const std::string precision = given.dtype() == DType::kF16 ? "fp16" : "bf16";
    hint += ", or give the model " + precision + " inputs with --precision " + precision +
            " --io-precision " + precision;
  }
  throw InputError("--input '" + input.name + "': the model takes " + type_to_string(input.type) +
                   ", the file holds " + type_to_string(given.type()) + " (" + hint + ")");
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
