// .npy and .pb tensor files.
#include "tools/tensor_files.h"

#include <cstring>
#include <fstream>
#include <regex>

#include "frontend/proto_io.h"
#include "frontend/tensor_proto.h"
#include "ir/error.h"

namespace kiln::tools {
namespace {

struct NpyDType {
  DType dtype;
  const char* descr;
};

constexpr NpyDType kNpyDTypes[] = {
    {DType::kF32, "<f4"}, {DType::kF16, "<f2"}, {DType::kF64, "<f8"}, {DType::kI64, "<i8"},
    {DType::kI32, "<i4"}, {DType::kI8, "|i1"},  {DType::kU8, "|u1"},  {DType::kBool, "|b1"},
};

DType dtype_from_descr(const std::string& descr, const std::string& path) {
  for (const NpyDType& entry : kNpyDTypes) {
    if (descr == entry.descr) return entry.dtype;
  }
  // NumPy writes single-byte types with '|' but accepts '<' and '='; so do we.
  if (descr.size() == 3 && (descr[0] == '<' || descr[0] == '=' || descr[0] == '|')) {
    const std::string canonical = (descr[2] == '1' ? "|" : "<") + descr.substr(1);
    for (const NpyDType& entry : kNpyDTypes) {
      if (canonical == entry.descr) return entry.dtype;
    }
  }
  throw UnsupportedError(path + ": .npy dtype '" + descr +
                         "' is not supported (kiln reads f4, f2, f8, i8, i4, i1, u1, b1)");
}

}  // namespace

Tensor read_tensor_file(const std::string& path) {
  if (path.ends_with(".npy")) return read_npy(path);
  if (path.ends_with(".pb")) return onnx_import::read_tensor_pb_file(path);
  throw InputError(path + ": unknown tensor file type (expected .npy or .pb)");
}

Tensor read_npy(const std::string& path) {
  const std::string bytes = onnx_import::read_whole_file(path);
  if (bytes.size() < 10 || bytes.compare(0, 6, "\x93NUMPY") != 0) {
    throw InputError(path + ": not a .npy file (bad magic)");
  }
  const int major = static_cast<unsigned char>(bytes[6]);
  size_t header_length = 0;
  size_t header_start = 0;
  if (major == 1) {
    header_length = static_cast<unsigned char>(bytes[8]) |
                    (static_cast<size_t>(static_cast<unsigned char>(bytes[9])) << 8);
    header_start = 10;
  } else if (major == 2 || major == 3) {
    if (bytes.size() < 12) throw InputError(path + ": truncated .npy header");
    for (int i = 0; i < 4; ++i) {
      header_length |= static_cast<size_t>(static_cast<unsigned char>(bytes[8 + i])) << (8 * i);
    }
    header_start = 12;
  } else {
    throw InputError(path + ": unsupported .npy version " + std::to_string(major));
  }
  if (header_start + header_length > bytes.size()) {
    throw InputError(path + ": truncated .npy header");
  }
  const std::string header = bytes.substr(header_start, header_length);

  std::smatch match;
  if (!std::regex_search(header, match, std::regex("'descr':\\s*'([^']*)'"))) {
    throw InputError(path + ": .npy header has no 'descr'");
  }
  const DType dtype = dtype_from_descr(match[1], path);
  if (std::regex_search(header, std::regex("'fortran_order':\\s*True"))) {
    throw UnsupportedError(path + ": Fortran-ordered .npy arrays are not supported");
  }
  if (!std::regex_search(header, match, std::regex("'shape':\\s*\\(([^)]*)\\)"))) {
    throw InputError(path + ": .npy header has no 'shape'");
  }
  Shape shape;
  const std::string dims = match[1];
  const std::regex number("\\d+");
  for (auto it = std::sregex_iterator(dims.begin(), dims.end(), number);
       it != std::sregex_iterator(); ++it) {
    const std::string digits = it->str();
    if (digits.size() > 15) throw InputError(path + ": .npy dimension too large");
    shape.push_back(std::stoll(digits));
  }

  // The size check comes before allocating, so a corrupt header cannot exhaust memory.
  const TensorType type{dtype, shape};
  const size_t data_start = header_start + header_length;
  const size_t data_bytes = bytes.size() - data_start;
  const size_t element_bytes = dtype_size(dtype);
  if (data_bytes % element_bytes != 0 ||
      static_cast<uint64_t>(type.num_elements()) != data_bytes / element_bytes) {
    throw InputError(path + ": .npy data is " + std::to_string(data_bytes) + " bytes, but " +
                     type_to_string(type) + " needs " + std::to_string(type.num_elements()) +
                     " elements of " + std::to_string(element_bytes) + " bytes");
  }
  Tensor tensor(type);
  if (data_bytes) std::memcpy(tensor.bytes(), bytes.data() + data_start, data_bytes);
  return tensor;
}

void write_npy(const std::string& path, const Tensor& tensor) {
  Tensor stored = tensor;
  if (tensor.dtype() == DType::kBF16) {
    stored = Tensor(DType::kF32, tensor.shape());
    for (int64_t i = 0; i < tensor.num_elements(); ++i) stored.set_float(i, tensor.get_float(i));
  }
  const char* descr = nullptr;
  for (const NpyDType& entry : kNpyDTypes) {
    if (entry.dtype == stored.dtype()) descr = entry.descr;
  }
  std::string shape_text;
  for (int64_t dim : stored.shape()) shape_text += std::to_string(dim) + ",";
  if (stored.rank() > 1) shape_text.pop_back();  // (3,) for rank 1, (2,3) otherwise
  std::string header = "{'descr': '" + std::string(descr) +
                       "', 'fortran_order': False, 'shape': (" + shape_text + "), }";
  // Pad with spaces so the data starts at a multiple of 64 bytes; the header ends with '\n'.
  const size_t unpadded = 10 + header.size() + 1;
  header.append((64 - unpadded % 64) % 64, ' ');
  header += '\n';

  std::ofstream file(path, std::ios::binary);
  if (!file) throw InputError(path + ": cannot create file");
  file.write("\x93NUMPY\x01\x00", 8);
  const char length[2] = {static_cast<char>(header.size() & 0xff),
                          static_cast<char>(header.size() >> 8)};
  file.write(length, 2);
  file << header;
  file.write(reinterpret_cast<const char*>(stored.bytes()),
             static_cast<std::streamsize>(stored.num_bytes()));
  if (!file) throw InputError(path + ": write failed");
}

std::string file_name_for(const std::string& value_name) {
  std::string name = value_name;
  for (char& c : name) {
    const bool safe =
        std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '-';
    if (!safe) c = '_';
  }
  return name.empty() ? "_" : name;
}

}  // namespace kiln::tools
