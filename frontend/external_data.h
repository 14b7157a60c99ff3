// ONNX external data: tensor bytes stored in a file next to the model (data_location EXTERNAL,
// with external_data entries location / offset / length).
#pragma once

#include <string>

namespace onnx {
class TensorProto;
}

namespace kiln::onnx_import {

// Reads the `expected_bytes` bytes of an external tensor. The location must be a relative path
// inside `base_dir` (no absolute paths, no ".."). Throws InputError starting with `context` for a
// missing file, a short file, a bad offset/length or a size that differs from `expected_bytes`.
std::string read_external_data(const onnx::TensorProto& proto, size_t expected_bytes,
                               const std::string& base_dir, const std::string& context);

}  // namespace kiln::onnx_import
