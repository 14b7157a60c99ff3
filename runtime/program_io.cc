// Encoding and decoding .kiln files (the layout: program_io.h). Decoding checks the structure as
// it goes; validate_program then checks what the fields mean.
#include "runtime/program_io.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <bit>
#include <climits>
#include <filesystem>
#include <fstream>
#include <future>
#include <limits>

#include "ir/error.h"
#include "runtime/byte_reader.h"
#include "runtime/byte_writer.h"
#include "runtime/fnv1a.h"
#include "runtime/program_validation.h"

namespace kiln {
namespace {

constexpr std::string_view kMagic = "KILN";

// The file's codes for buffer kinds and dtypes: their positions here.
constexpr std::array<ProgramBuffer::Kind, 4> kKindCodes = {
    ProgramBuffer::Kind::kInput, ProgramBuffer::Kind::kOutput, ProgramBuffer::Kind::kWeight,
    ProgramBuffer::Kind::kIntermediate};
constexpr std::array<DType, 9> kDTypeCodes = {DType::kF32, DType::kF16, DType::kBF16,
                                              DType::kF64, DType::kI64, DType::kI32,
                                              DType::kI8,  DType::kU8,  DType::kBool};

template <class T, size_t N>
uint8_t code_of(const std::array<T, N>& codes, T value) {
  for (size_t i = 0; i < N; ++i) {
    if (codes[i] == value) return static_cast<uint8_t>(i);
  }
  throw InternalError("a buffer kind or dtype has no .kiln code");
}

// ---- Encoding ----------------------------------------------------------------------------------

void write_kernel(ByteWriter& out, const ProgramKernel& kernel) {
  out.string(kernel.name);
  out.string(kernel.source);
  out.u64(fnv1a_64(kernel.source));
  out.u32(static_cast<uint32_t>(kernel.provenance.size()));
  for (const std::string& node : kernel.provenance) out.string(node);
  out.u32(static_cast<uint32_t>(kernel.binaries.size()));
  for (const KernelBinary& binary : kernel.binaries) {
    out.string(binary.arch);
    out.blob(binary.cubin);
  }
  out.blob({reinterpret_cast<const uint8_t*>(kernel.ptx.data()), kernel.ptx.size()});
}

void write_buffer(ByteWriter& out, const ProgramBuffer& buffer) {
  out.u8(code_of(kKindCodes, buffer.kind));
  out.string(buffer.name);
  out.u8(code_of(kDTypeCodes, buffer.type.dtype));
  out.u32(static_cast<uint32_t>(buffer.type.shape.size()));
  for (const int64_t dim : buffer.type.shape) out.i64(dim);
  out.i64(buffer.offset);
}

void write_indices(ByteWriter& out, const std::vector<int>& indices) {
  out.u32(static_cast<uint32_t>(indices.size()));
  for (const int index : indices) out.u32(static_cast<uint32_t>(index));
}

void write_step(ByteWriter& out, const ProgramStep& step) {
  out.u32(static_cast<uint32_t>(step.kernel));
  for (const uint32_t dim : step.grid) out.u32(dim);
  for (const uint32_t dim : step.block) out.u32(dim);
  out.u32(step.shared_bytes);
  write_indices(out, step.args);
  out.u8(step.library ? 1 : 0);
  if (!step.library) return;
  const ProgramLibraryGemm& gemm = *step.library;
  for (const int position : {gemm.a, gemm.b, gemm.d, gemm.c, gemm.bias}) {
    out.i64(position);
  }
  out.u8(static_cast<uint8_t>((gemm.transpose_a ? 1 : 0) | (gemm.transpose_b ? 2 : 0) |
                              (gemm.relu ? 4 : 0)));
  for (const int64_t value :
       {gemm.m, gemm.n, gemm.k, gemm.lda, gemm.ldb, gemm.ldd, gemm.batch, gemm.batch_stride_a,
        gemm.batch_stride_b, gemm.batch_stride_d, gemm.workspace_bytes, gemm.workspace_offset}) {
    out.i64(value);
  }
  out.u32(std::bit_cast<uint32_t>(gemm.alpha));
  out.u32(std::bit_cast<uint32_t>(gemm.beta));
}

// The bytes before the weights': everything up to the padding that aligns them.
ByteWriter encode_up_to_weights(const Program& program) {
  ByteWriter out;
  out.raw({reinterpret_cast<const uint8_t*>(kMagic.data()), kMagic.size()});
  out.u32(kKilnFormatVersion);
  out.string(program.name);
  out.u32(static_cast<uint32_t>(program.archs.size()));
  for (const std::string& arch : program.archs) out.string(arch);
  out.u32(static_cast<uint32_t>(program.kernels.size()));
  for (const ProgramKernel& kernel : program.kernels) write_kernel(out, kernel);
  out.u32(static_cast<uint32_t>(program.buffers.size()));
  for (const ProgramBuffer& buffer : program.buffers) write_buffer(out, buffer);
  write_indices(out, program.inputs);
  write_indices(out, program.outputs);
  out.u32(static_cast<uint32_t>(program.steps.size()));
  for (const ProgramStep& step : program.steps) write_step(out, step);
  out.i64(program.arena_bytes);
  out.u64(program.weights.size());
  out.pad_to(kWeightAlignment);
  return out;
}

// ---- Decoding ----------------------------------------------------------------------------------

// Minimum encoded sizes, so a count is checked against the bytes left before anything is read.
constexpr size_t kMinStringBytes = 4;
constexpr size_t kMinKernelBytes = 4 + 4 + 8 + 4 + 4 + 8;
constexpr size_t kMinBinaryBytes = 4 + 8;
constexpr size_t kMinBufferBytes = 1 + 4 + 1 + 4 + 8;
constexpr size_t kMinStepBytes = 4 + 12 + 12 + 4 + 4;

int read_index(ByteReader& in, const std::string& what) {
  const uint32_t index = in.u32(what);
  if (index > INT_MAX) throw InputError(fmt::format("{}: index {} is too large", what, index));
  return static_cast<int>(index);
}

// A count of `plural`, then each item; `item` names the i-th one ("input {}").
std::vector<int> read_indices(ByteReader& in, const std::string& plural, const std::string& item) {
  std::vector<int> indices(in.count(plural, 4));
  for (size_t i = 0; i < indices.size(); ++i) {
    indices[i] = read_index(in, fmt::format(fmt::runtime(item), i));
  }
  return indices;
}

std::vector<std::string> read_strings(ByteReader& in, const std::string& plural,
                                      const std::string& item) {
  std::vector<std::string> strings(in.count(plural, kMinStringBytes));
  for (size_t i = 0; i < strings.size(); ++i) {
    strings[i] = in.string(fmt::format(fmt::runtime(item), i));
  }
  return strings;
}

ProgramKernel read_kernel(ByteReader& in, uint32_t index) {
  const std::string what = fmt::format("kernel {}", index);
  ProgramKernel kernel;
  kernel.name = in.string("the name of " + what);
  kernel.source = in.string("the source of " + what);
  const uint64_t source_hash = in.u64("the source hash of " + what);
  if (source_hash != fnv1a_64(kernel.source)) {
    throw InputError(fmt::format("{}: source hash {:#018x} does not match its source ({:#018x})",
                                 what, source_hash, fnv1a_64(kernel.source)));
  }
  kernel.provenance =
      read_strings(in, "provenance entries of " + what, "provenance entry {} of " + what);
  kernel.binaries.resize(in.count("binaries of " + what, kMinBinaryBytes));
  for (size_t i = 0; i < kernel.binaries.size(); ++i) {
    kernel.binaries[i].arch = in.string(fmt::format("the arch of binary {} of {}", i, what));
    kernel.binaries[i].cubin = in.blob(fmt::format("the CUBIN of binary {} of {}", i, what));
  }
  const std::vector<uint8_t> ptx = in.blob("the PTX of " + what);
  kernel.ptx.assign(ptx.begin(), ptx.end());
  return kernel;
}

ProgramBuffer read_buffer(ByteReader& in, uint32_t index) {
  const std::string what = fmt::format("buffer {}", index);
  ProgramBuffer buffer;
  const uint8_t kind = in.u8("the kind of " + what);
  if (kind >= kKindCodes.size()) {
    throw InputError(fmt::format(
        "{}: kind code {} is not valid (0 input, 1 output, 2 weight, 3 intermediate)", what, kind));
  }
  buffer.kind = kKindCodes[kind];
  buffer.name = in.string("the name of " + what);
  const uint8_t dtype = in.u8("the dtype of " + what);
  if (dtype >= kDTypeCodes.size()) {
    throw InputError(
        fmt::format("{}: dtype code {} is not valid (0 to 8: f32 f16 bf16 f64 i64 i32 i8 u8 bool)",
                    what, dtype));
  }
  buffer.type.dtype = kDTypeCodes[dtype];
  buffer.type.shape.resize(in.count("dims of " + what, 8));
  for (size_t i = 0; i < buffer.type.shape.size(); ++i) {
    buffer.type.shape[i] = in.i64(fmt::format("dim {} of {}", i, what));
  }
  buffer.offset = in.i64("the offset of " + what);
  return buffer;
}

ProgramStep read_step(ByteReader& in, uint32_t index, uint32_t version) {
  const std::string what = fmt::format("step {}", index);
  ProgramStep step;
  step.kernel = read_index(in, "the kernel of " + what);
  for (uint32_t& dim : step.grid) dim = in.u32("the grid of " + what);
  for (uint32_t& dim : step.block) dim = in.u32("the block of " + what);
  step.shared_bytes = in.u32("the shared-memory size of " + what);
  step.args = read_indices(in, "arguments of " + what, "argument {} of " + what);
  if (version < 2) return step;
  const uint8_t library = in.u8("the library flag of " + what);
  if (library > 1) throw InputError(fmt::format("{}: library flag {} (0 or 1)", what, library));
  if (library == 0) return step;
  ProgramLibraryGemm& gemm = step.library.emplace();
  // Positions are checked against the step's arguments by validate_program.
  const auto position = [&](const char* name) {
    const int64_t value = in.i64(fmt::format("the {} position of {}'s library call", name, what));
    if (value < -1 || value > std::numeric_limits<int>::max()) {
      throw InputError(fmt::format("{}: library operand {} at position {}", what, name, value));
    }
    return static_cast<int>(value);
  };
  gemm.a = position("A");
  gemm.b = position("B");
  gemm.d = position("D");
  gemm.c = position("C");
  gemm.bias = position("bias");
  const uint8_t flags = in.u8("the flags of " + what + "'s library call");
  if (flags > 7) throw InputError(fmt::format("{}: library call flags {:#x}", what, flags));
  gemm.transpose_a = (flags & 1) != 0;
  gemm.transpose_b = (flags & 2) != 0;
  gemm.relu = (flags & 4) != 0;
  for (int64_t* value : {&gemm.m, &gemm.n, &gemm.k, &gemm.lda, &gemm.ldb, &gemm.ldd, &gemm.batch,
                         &gemm.batch_stride_a, &gemm.batch_stride_b, &gemm.batch_stride_d,
                         &gemm.workspace_bytes, &gemm.workspace_offset}) {
    *value = in.i64("the sizes of " + what + "'s library call");
  }
  gemm.alpha = std::bit_cast<float>(in.u32("alpha of " + what + "'s library call"));
  gemm.beta = std::bit_cast<float>(in.u32("beta of " + what + "'s library call"));
  return step;
}

// Returns the format version: kKilnFormatVersion, or 1 (steps without library calls).
uint32_t read_header(ByteReader& in) {
  const std::span<const uint8_t> magic = in.bytes(kMagic.size(), "the magic \"KILN\"");
  if (std::string_view(reinterpret_cast<const char*>(magic.data()), magic.size()) == "KILR") {
    throw InputError(
        "a dynamic program (compiled for ranges of input shapes): kiln run and kiln inspect read "
        "it, and in C++ kiln::DynamicSession (runtime/dynamic_session.h)");
  }
  if (!std::equal(magic.begin(), magic.end(), kMagic.begin())) {
    throw InputError("not a .kiln file (it does not start with \"KILN\")");
  }
  const uint32_t version = in.u32("the format version");
  if (version != kKilnFormatVersion && version != 1) {
    throw InputError(
        fmt::format("format version {}; this kiln reads versions 1 to {} (compile the model again)",
                    version, kKilnFormatVersion));
  }
  return version;
}

void read_weights(ByteReader& in, Program& program) {
  const uint64_t size = in.u64("the size of the weights");
  const size_t padding = (kWeightAlignment - in.offset() % kWeightAlignment) % kWeightAlignment;
  const size_t padding_offset = in.offset();
  for (const uint8_t byte : in.bytes(padding, "padding before the weights")) {
    if (byte != 0) {
      throw InputError(
          fmt::format("the padding at offset {} before the weights is not zero", padding_offset));
    }
  }
  const std::span<const uint8_t> weights = in.bytes(size, "weights");
  program.weights.assign(weights.begin(), weights.end());
}

void check_checksum(ByteReader& in, std::span<const uint8_t> bytes) {
  const size_t checksum_offset = in.offset();
  const uint64_t stored = in.u64("the checksum");
  const uint64_t computed = fnv1a_64(bytes.first(checksum_offset));
  if (stored != computed) {
    throw InputError(fmt::format(
        "checksum mismatch: the file says {:#018x}, its first {} bytes hash to {:#018x} "
        "(the file is corrupted)",
        stored, checksum_offset, computed));
  }
  if (in.remaining() != 0) {
    throw InputError(fmt::format("{} unexpected bytes after the checksum at offset {}",
                                 in.remaining(), checksum_offset));
  }
}

Program decode(std::span<const uint8_t> bytes) {
  ByteReader in(bytes);
  const uint32_t version = read_header(in);
  Program program;
  program.name = in.string("the program name");
  program.archs = read_strings(in, "archs", "arch {}");
  program.kernels.resize(in.count("kernels", kMinKernelBytes));
  for (uint32_t i = 0; i < program.kernels.size(); ++i) program.kernels[i] = read_kernel(in, i);
  program.buffers.resize(in.count("buffers", kMinBufferBytes));
  for (uint32_t i = 0; i < program.buffers.size(); ++i) program.buffers[i] = read_buffer(in, i);
  program.inputs = read_indices(in, "inputs", "input {}");
  program.outputs = read_indices(in, "outputs", "output {}");
  program.steps.resize(in.count("steps", kMinStepBytes));
  for (uint32_t i = 0; i < program.steps.size(); ++i) program.steps[i] = read_step(in, i, version);
  program.arena_bytes = in.i64("the arena size");
  read_weights(in, program);
  check_checksum(in, bytes);
  return program;
}

}  // namespace

std::vector<uint8_t> program_to_bytes(const Program& program) {
  ByteWriter out = encode_up_to_weights(program);
  out.raw(program.weights.bytes());
  out.u64(fnv1a_64(out.bytes()));
  return out.release();
}

Program program_from_bytes(std::span<const uint8_t> bytes, const std::string& source) {
  try {
    Program program = decode(bytes);
    validate_program(program);
    return program;
  } catch (const InputError& error) {
    error.rethrow_prefixed(source + ": ");
  }
}

Program unvalidated_program_from_bytes(std::span<const uint8_t> bytes, const std::string& source) {
  try {
    return decode(bytes);
  } catch (const InputError& error) {
    error.rethrow_prefixed(source + ": ");
  }
}

// The bytes of program_to_bytes, written without copying the weights into one buffer first; the
// checksum (~1 ns a byte: a tenth of a second for 100 MB of weights) is computed on another
// thread while the file is written.
void write_program(const Program& program, const std::string& path) {
  const ByteWriter head = encode_up_to_weights(program);
  std::future<uint64_t> checksum = std::async(std::launch::async, [&] {
    return fnv1a_64(program.weights.bytes(), fnv1a_64(head.bytes()));
  });
  std::ofstream file(path, std::ios::binary);
  const auto write = [&](std::span<const uint8_t> bytes) {
    file.write(reinterpret_cast<const char*>(bytes.data()),
               static_cast<std::streamsize>(bytes.size()));
  };
  write(head.bytes());
  write(program.weights.bytes());
  ByteWriter tail;
  tail.u64(checksum.get());
  write(tail.bytes());
  file.close();
  if (!file) throw InputError(path + ": cannot write the .kiln file");
}

std::vector<uint8_t> read_kiln_file(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  std::error_code error;
  const uintmax_t size = std::filesystem::file_size(path, error);
  if (!file || error) throw InputError(path + ": cannot open the .kiln file");
  std::vector<uint8_t> bytes(size);
  file.read(reinterpret_cast<char*>(bytes.data()), static_cast<std::streamsize>(size));
  if (!file) throw InputError(path + ": cannot read the .kiln file");
  return bytes;
}

Program read_program(const std::string& path) {
  return program_from_bytes(read_kiln_file(path), path);
}

}  // namespace kiln
