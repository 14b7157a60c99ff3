// Cached CPU reference outputs for kiln bench (see the header).
#include "kiln/reference_cache.h"

#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <sstream>

#include "codegen/kernel_cache.h"
#include "codegen/sha256.h"
#include "ir/error.h"
#include "reference/reference_interpreter.h"
#include "runtime/byte_reader.h"
#include "runtime/byte_writer.h"

namespace kiln {
namespace {

constexpr std::string_view kEntryTag = "kiln reference outputs 1";

// This executable's path, size and modification time; "" when /proc/self/exe cannot be read
// (then nothing is cached: an answer must never outlive the interpreter that computed it).
std::string executable_identity() {
  char path[4096];
  const ssize_t length = readlink("/proc/self/exe", path, sizeof(path) - 1);
  if (length <= 0) return "";
  path[length] = '\0';
  struct stat status {};
  if (stat(path, &status) != 0) return "";
  return fmt::format("{} {} {}.{}", path, status.st_size, status.st_mtim.tv_sec,
                     status.st_mtim.tv_nsec);
}

std::optional<std::string> file_bytes(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  if (!file) return std::nullopt;
  std::ostringstream bytes;
  bytes << file.rdbuf();
  return std::move(bytes).str();
}

// A tensor's dtype, shape and bytes, as encode_tensors writes them.
void write_tensor(ByteWriter& out, const Tensor& tensor) {
  out.u8(static_cast<uint8_t>(tensor.dtype()));
  out.u32(static_cast<uint32_t>(tensor.shape().size()));
  for (const int64_t dim : tensor.shape()) out.i64(dim);
  out.blob({reinterpret_cast<const uint8_t*>(tensor.bytes()), tensor.num_bytes()});
}

// The constants of `graph` and of its fusions' bodies, in order: each one's dtype, shape and the
// SHA-256 of its bytes (the weights are hashed where they lie, not copied).
void write_constants(ByteWriter& out, const Graph& graph) {
  for (const Value* constant : graph.constants()) {
    if (!constant->has_data()) continue;
    const Tensor& tensor = constant->data();
    out.u8(static_cast<uint8_t>(tensor.dtype()));
    out.u32(static_cast<uint32_t>(tensor.shape().size()));
    for (const int64_t dim : tensor.shape()) out.i64(dim);
    out.string(
        codegen::sha256_hex({reinterpret_cast<const char*>(tensor.bytes()), tensor.num_bytes()}));
  }
  for (const Node* node : graph.nodes()) {
    if (node->body()) write_constants(out, *node->body());
  }
}

}  // namespace

std::vector<uint8_t> encode_tensors(const std::vector<Tensor>& tensors) {
  ByteWriter out;
  out.string(kEntryTag);
  out.u32(static_cast<uint32_t>(tensors.size()));
  for (const Tensor& tensor : tensors) write_tensor(out, tensor);
  return out.release();
}

std::optional<std::vector<Tensor>> decode_tensors(std::span<const uint8_t> bytes) {
  try {
    ByteReader in(bytes);
    if (in.string("the tag") != kEntryTag) return std::nullopt;
    const uint32_t count = in.count("the tensor count", 5);
    std::vector<Tensor> tensors;
    for (uint32_t k = 0; k < count; ++k) {
      const uint8_t code = in.u8("a dtype");
      if (code > static_cast<uint8_t>(DType::kBool)) return std::nullopt;
      Shape shape(in.count("a rank", 8));
      for (int64_t& dim : shape) {
        dim = in.i64("a dim");
        if (dim < 0) return std::nullopt;
      }
      Tensor tensor(static_cast<DType>(code), shape);
      const std::vector<uint8_t> content = in.blob("a tensor's bytes");
      if (content.size() != tensor.num_bytes()) return std::nullopt;
      std::copy(content.begin(), content.end(), reinterpret_cast<uint8_t*>(tensor.bytes()));
      tensors.push_back(std::move(tensor));
    }
    if (in.remaining() != 0) return std::nullopt;
    return tensors;
  } catch (const InputError&) {
    return std::nullopt;
  }
}

std::string reference_key(const std::string& executable_identity, std::string_view model_bytes,
                          const Graph& graph, const std::vector<Tensor>& inputs) {
  ByteWriter key;
  key.string(kEntryTag);
  key.string(executable_identity);
  key.string(codegen::sha256_hex(model_bytes));
  write_constants(key, graph);
  for (const Tensor& input : inputs) write_tensor(key, input);
  const std::vector<uint8_t> bytes = key.release();
  return "reference-" +
         codegen::sha256_hex({reinterpret_cast<const char*>(bytes.data()), bytes.size()});
}

std::vector<Tensor> cached_reference_outputs(const std::string& model_path, const Graph& graph,
                                             const std::vector<Tensor>& inputs,
                                             const std::string& cache_directory, bool* from_cache) {
  if (from_cache) *from_cache = false;
  const std::string directory = codegen::kernel_cache_directory(cache_directory);
  const std::string identity = executable_identity();
  const std::optional<std::string> model = file_bytes(model_path);
  if (directory.empty() || identity.empty() || !model) return run_reference(graph, inputs);
  const codegen::KernelCache cache(directory);
  const std::string key = reference_key(identity, *model, graph, inputs);
  if (const std::optional<std::vector<uint8_t>> entry = cache.load(key)) {
    if (std::optional<std::vector<Tensor>> outputs = decode_tensors(*entry)) {
      if (from_cache) *from_cache = true;
      return std::move(*outputs);
    }
  }
  std::vector<Tensor> outputs = run_reference(graph, inputs);
  cache.store(key, encode_tensors(outputs));
  return outputs;
}

}  // namespace kiln
