// Reading files and parsing protobuf messages of any size (models up to protobuf's 2 GB limit).
#pragma once

#include <string>
#include <string_view>

namespace google::protobuf {
class MessageLite;
}

namespace onnx {
class TensorProto;
}

namespace kiln::onnx_import {

// The whole file; throws InputError "PATH: cannot open (reason)".
std::string read_whole_file(const std::string& path);

// Parses `bytes` into `message` with the total-bytes limit raised to protobuf's maximum; false
// for garbage or truncated input.
bool parse_large_message(std::string_view bytes, google::protobuf::MessageLite& message);

// A serialized TensorProto file; throws InputError "PATH: not a valid TensorProto ...".
onnx::TensorProto parse_tensor_proto_file(const std::string& path);

// The directory holding `path` ("." for a bare file name).
std::string parent_directory(const std::string& path);

}  // namespace kiln::onnx_import
