// A model's or program's inputs from --input NAME=FILE options: reading the files, matching
// them to the signature by name, and checking their dtypes (with a hint on how to fix them);
// converting float tensors between dtypes (--io-precision).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "runtime/program.h"

namespace kiln::tools {

// `tensor` in `dtype` when both are float dtypes, else as it is.
Tensor as_float_dtype(const Tensor& tensor, DType dtype);

// Reads the --input NAME=FILE options, by input name.
std::map<std::string, Tensor> read_input_files(const std::vector<std::string>& specs);

// A model's or program's input: its name and type.
struct InputSignature {
  std::string name;
  TensorType type;
};
std::vector<InputSignature> graph_signature(const Graph& graph);
std::vector<InputSignature> program_signature(const Program& program);

// The input tensors in signature order; every input needs one and every one must be used. A
// bf16 input also takes an f32 file (NumPy has no bfloat16), rounded to bf16.
std::vector<Tensor> order_inputs(const std::vector<InputSignature>& signature,
                                 std::map<std::string, Tensor> given);

}  // namespace kiln::tools
