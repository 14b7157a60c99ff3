// Reading and writing tensors as files: NumPy .npy (v1/v2, little-endian) and ONNX TensorProto
// .pb (the backend tests' format). bf16 has no NumPy dtype: it is written as f32 .npy.
#pragma once

#include <string>

#include "ir/tensor.h"

namespace kiln::tools {

// Reads .npy or .pb by extension; throws InputError naming the file on anything malformed.
Tensor read_tensor_file(const std::string& path);
Tensor read_npy(const std::string& path);
void write_npy(const std::string& path, const Tensor& tensor);

// A value name made safe as a file name: characters other than [A-Za-z0-9_.-] become '_'.
std::string file_name_for(const std::string& value_name);

}  // namespace kiln::tools
