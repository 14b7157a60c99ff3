// ONNX external data: reading a tensor's bytes from a file next to the model.
#include "frontend/external_data.h"

#include <charconv>
#include <filesystem>
#include <fstream>
#include <optional>

#include "ir/error.h"
#include "onnx/onnx.pb.h"

namespace kiln::onnx_import {
namespace {

struct ExternalLocation {
  std::string location;
  uint64_t offset = 0;
  std::optional<uint64_t> length;
};

uint64_t parse_byte_count(const std::string& key, const std::string& text,
                          const std::string& context) {
  uint64_t value = 0;
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size()) {
    throw InputError(context + ": external data " + key + " '" + text +
                     "' is not a non-negative integer");
  }
  return value;
}

ExternalLocation parse_entries(const onnx::TensorProto& proto, const std::string& context) {
  ExternalLocation result;
  for (const onnx::StringStringEntryProto& entry : proto.external_data()) {
    if (entry.key() == "location") {
      result.location = entry.value();
    } else if (entry.key() == "offset") {
      result.offset = parse_byte_count("offset", entry.value(), context);
    } else if (entry.key() == "length") {
      result.length = parse_byte_count("length", entry.value(), context);
    }
  }
  if (result.location.empty()) {
    throw InputError(context + ": data_location is EXTERNAL but external_data has no 'location'");
  }
  return result;
}

// The location must stay inside the model's directory.
std::filesystem::path resolve_location(const std::string& location, const std::string& base_dir,
                                       const std::string& context) {
  const std::filesystem::path relative(location);
  if (relative.is_absolute() || location.find('\0') != std::string::npos) {
    throw InputError(context + ": external data location '" + location +
                     "' must be a path relative to the model's directory");
  }
  for (const auto& part : relative) {
    if (part == "..") {
      throw InputError(context + ": external data location '" + location +
                       "' leaves the model's directory ('..' is not allowed)");
    }
  }
  return std::filesystem::path(base_dir.empty() ? "." : base_dir) / relative;
}

}  // namespace

std::string read_external_data(const onnx::TensorProto& proto, size_t expected_bytes,
                               const std::string& base_dir, const std::string& context) {
  const ExternalLocation where = parse_entries(proto, context);
  const std::filesystem::path path = resolve_location(where.location, base_dir, context);
  std::error_code error;
  if (!std::filesystem::is_regular_file(path, error)) {
    throw InputError(context + ": external data file '" + path.string() + "' not found");
  }
  const uint64_t file_size = std::filesystem::file_size(path, error);
  if (error) {
    throw InputError(context + ": cannot read external data file '" + path.string() + "'");
  }
  if (where.offset > file_size) {
    throw InputError(context + ": external data offset " + std::to_string(where.offset) +
                     " is past the end of '" + path.string() + "' (" + std::to_string(file_size) +
                     " bytes)");
  }
  const uint64_t length = where.length.value_or(expected_bytes);
  if (length != expected_bytes) {
    throw InputError(context + ": external data length " + std::to_string(length) +
                     " bytes does not match its type, which needs " +
                     std::to_string(expected_bytes) + " bytes");
  }
  if (length > file_size - where.offset) {
    throw InputError(context + ": external data file '" + path.string() + "' is too short (" +
                     std::to_string(file_size) + " bytes; the tensor needs bytes " +
                     std::to_string(where.offset) + " to " + std::to_string(where.offset + length) +
                     ")");
  }
  std::ifstream file(path, std::ios::binary);
  std::string bytes(length, '\0');
  file.seekg(static_cast<std::streamoff>(where.offset));
  file.read(bytes.data(), static_cast<std::streamsize>(length));
  if (!file) {
    throw InputError(context + ": reading external data file '" + path.string() + "' failed");
  }
  return bytes;
}

}  // namespace kiln::onnx_import
