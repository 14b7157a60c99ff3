// Reading files and parsing protobuf messages of any size.
#include "frontend/proto_io.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/message_lite.h>

#include <cerrno>
#include <climits>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "ir/error.h"
#include "onnx/onnx.pb.h"

namespace kiln::onnx_import {

std::string read_whole_file(const std::string& path) {
  std::error_code error;
  if (std::filesystem::is_directory(path, error)) {
    throw InputError(path + ": is a directory, not a file");
  }
  std::ifstream file(path, std::ios::binary | std::ios::ate);
  if (!file) throw InputError(path + ": cannot open (" + std::strerror(errno) + ")");
  const std::streamsize size = file.tellg();
  if (size < 0) throw InputError(path + ": cannot read (not a regular file)");
  std::string contents(static_cast<size_t>(size), '\0');
  file.seekg(0);
  if (!file.read(contents.data(), size)) throw InputError(path + ": read failed");
  return contents;
}

bool parse_large_message(std::string_view bytes, google::protobuf::MessageLite& message) {
  if (bytes.size() > static_cast<size_t>(INT_MAX)) return false;
  google::protobuf::io::CodedInputStream stream(reinterpret_cast<const uint8_t*>(bytes.data()),
                                                static_cast<int>(bytes.size()));
  stream.SetTotalBytesLimit(INT_MAX);
  return message.ParseFromCodedStream(&stream) && stream.ConsumedEntireMessage();
}

onnx::TensorProto parse_tensor_proto_file(const std::string& path) {
  onnx::TensorProto proto;
  if (!parse_large_message(read_whole_file(path), proto)) {
    throw InputError(path + ": not a valid ONNX TensorProto (protobuf parse failed)");
  }
  return proto;
}

std::string parent_directory(const std::string& path) {
  std::string parent = std::filesystem::path(path).parent_path().string();
  return parent.empty() ? "." : parent;
}

}  // namespace kiln::onnx_import
