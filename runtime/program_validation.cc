// The checks of validate_program, one function per part of the program (the list:
// program_validation.h).
#include "runtime/program_validation.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "ir/error.h"
#include "runtime/kernel_header.h"
#include "runtime/kernel_image.h"
#include "runtime/library_gemm_validation.h"
#include "runtime/memory_plan.h"

namespace kiln {
namespace {

// CUDA's launch limits (compute capability 7.0 and later).
constexpr uint32_t kMaxGridX = 2147483647;
constexpr uint32_t kMaxGridYZ = 65535;
constexpr uint32_t kMaxBlockXY = 1024;
constexpr uint32_t kMaxBlockZ = 64;
constexpr uint64_t kMaxThreadsPerBlock = 1024;

std::string describe_buffer(const Program& program, size_t index) {
  return fmt::format("buffer {} ('{}')", index, program.buffers[index].name);
}

// A step whose kernel index is valid.
std::string describe_step(const Program& program, size_t index) {
  return fmt::format("step {} (kernel '{}')", index,
                     program.kernels[program.steps[index].kernel].name);
}

bool is_identifier(const std::string& name) {
  if (name.empty() || std::isdigit(static_cast<unsigned char>(name[0]))) return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
  });
}

void check_archs(const Program& program) {
  if (program.archs.empty()) throw InputError("the program names no target arch");
  std::set<std::string> seen;
  for (const std::string& arch : program.archs) {
    if (!parse_gpu_arch(arch)) {
      throw InputError("target arch '" + arch + "' is not of the form sm_90 or sm_90a");
    }
    if (!seen.insert(arch).second) throw InputError("target arch " + arch + " is listed twice");
  }
}

void check_kernel(const Program& program, const ProgramKernel& kernel, size_t index) {
  const std::string what = fmt::format("kernel {} ('{}')", index, kernel.name);
  if (!is_identifier(kernel.name)) throw InputError(what + ": the name is not a C identifier");
  if (kernel.binaries.empty() && kernel.ptx.empty()) {
    throw InputError(what + ": has neither a CUBIN nor PTX");
  }
  std::set<std::string> seen;
  for (const KernelBinary& binary : kernel.binaries) {
    if (std::find(program.archs.begin(), program.archs.end(), binary.arch) == program.archs.end()) {
      throw InputError(what + ": has a CUBIN for '" + binary.arch +
                       "', which is not a target arch of the program");
    }
    if (!seen.insert(binary.arch).second) {
      throw InputError(what + ": has two CUBINs for " + binary.arch);
    }
    if (binary.cubin.empty())
      throw InputError(what + ": its CUBIN for " + binary.arch + " is empty");
  }
  if (kernel.ptx.find('\0') != std::string::npos) {
    throw InputError(what + ": its PTX contains a NUL byte");
  }
}

// The buffer's size in bytes; throws when a dim is negative or the size overflows int64.
int64_t checked_byte_size(const Program& program, size_t index) {
  const ProgramBuffer& buffer = program.buffers[index];
  int64_t elements = 1;
  bool overflow = false;
  for (const int64_t dim : buffer.type.shape) {
    if (dim < 0) {
      throw InputError(fmt::format("{}: shape [{}] has a negative dim",
                                   describe_buffer(program, index),
                                   shape_to_string(buffer.type.shape)));
    }
    overflow = overflow || __builtin_mul_overflow(elements, dim, &elements);
  }
  int64_t bytes = 0;
  const auto element_bytes = static_cast<int64_t>(dtype_size(buffer.type.dtype));
  overflow = overflow || __builtin_mul_overflow(elements, element_bytes, &bytes);
  const bool empty =
      std::find(buffer.type.shape.begin(), buffer.type.shape.end(), 0) != buffer.type.shape.end();
  if (overflow && !empty) {
    throw InputError(fmt::format("{}: shape [{}] has more bytes than int64 holds",
                                 describe_buffer(program, index),
                                 shape_to_string(buffer.type.shape)));
  }
  return empty ? 0 : bytes;
}

// Checks that `bytes` at the buffer's offset lie within `region_bytes`, aligned.
void check_placement(const Program& program, size_t index, int64_t bytes, int64_t region_bytes,
                     const char* region, int64_t alignment) {
  const int64_t offset = program.buffers[index].offset;
  if (offset < 0 || offset % alignment != 0) {
    throw InputError(fmt::format("{}: offset {} in the {} is not a multiple of {}",
                                 describe_buffer(program, index), offset, region, alignment));
  }
  if (offset > region_bytes || bytes > region_bytes - offset) {
    throw InputError(fmt::format("{}: {} bytes at offset {} overrun the {} ({} bytes)",
                                 describe_buffer(program, index), bytes, offset, region,
                                 region_bytes));
  }
}

void check_buffers(const Program& program) {
  if (program.arena_bytes < 0) {
    throw InputError(fmt::format("the arena size {} is negative", program.arena_bytes));
  }
  for (size_t i = 0; i < program.buffers.size(); ++i) {
    const int64_t bytes = checked_byte_size(program, i);
    switch (program.buffers[i].kind) {
      case ProgramBuffer::Kind::kWeight:
        check_placement(program, i, bytes, std::ssize(program.weights), "weights",
                        kWeightAlignment);
        break;
      case ProgramBuffer::Kind::kIntermediate:
        check_placement(program, i, bytes, program.arena_bytes, "arena", kArenaAlignment);
        break;
      case ProgramBuffer::Kind::kInput:
      case ProgramBuffer::Kind::kOutput:
        break;
    }
  }
}

// Two intermediates live at a common step must not share a byte. Steps run at once never touch
// shared bytes concurrently either: the session's step graph orders them (step_dependencies.h).
void check_arena_plan(const Program& program) {
  const std::vector<LiveRange> ranges = live_ranges(program);
  struct Placement {
    size_t index;
    int64_t begin;
    int64_t end;
  };
  std::vector<Placement> placements;
  for (size_t i = 0; i < program.buffers.size(); ++i) {
    if (program.buffers[i].kind != ProgramBuffer::Kind::kIntermediate) continue;
    const int64_t begin = program.buffers[i].offset;
    placements.push_back({i, begin, begin + checked_byte_size(program, i)});
  }
  for (size_t a = 0; a < placements.size(); ++a) {
    for (size_t b = a + 1; b < placements.size(); ++b) {
      const Placement& first = placements[a];
      const Placement& second = placements[b];
      if (ranges[first.index].overlaps(ranges[second.index]) && first.begin < second.end &&
          second.begin < first.end) {
        throw InputError(fmt::format("{} and {} are live at the same steps but share arena bytes",
                                     describe_buffer(program, first.index),
                                     describe_buffer(program, second.index)));
      }
    }
  }
}

void check_signature(const Program& program, const std::vector<int>& signature,
                     ProgramBuffer::Kind kind, const char* what) {
  std::vector<int> listed(program.buffers.size(), 0);
  std::set<std::string> names;
  for (size_t position = 0; position < signature.size(); ++position) {
    const int index = signature[position];
    if (index < 0 || index >= std::ssize(program.buffers)) {
      throw InputError(fmt::format("{} {}: buffer index {} is out of range ({} buffers)", what,
                                   position, index, program.buffers.size()));
    }
    const ProgramBuffer& buffer = program.buffers[index];
    if (buffer.kind != kind) {
      throw InputError(fmt::format("{} {}: {} is not an {} buffer", what, position,
                                   describe_buffer(program, index), what));
    }
    if (buffer.offset != static_cast<int64_t>(position)) {
      throw InputError(fmt::format("{} {}: {} has offset {}, not its position {}", what, position,
                                   describe_buffer(program, index), buffer.offset, position));
    }
    if (buffer.name.empty()) {
      throw InputError(
          fmt::format("{} {}: {} has no name", what, position, describe_buffer(program, index)));
    }
    if (!names.insert(buffer.name).second) {
      throw InputError(fmt::format("two {}s are named '{}'", what, buffer.name));
    }
    ++listed[index];
  }
  for (size_t i = 0; i < program.buffers.size(); ++i) {
    if (program.buffers[i].kind == kind && listed[i] != 1) {
      throw InputError(fmt::format("{} is an {} buffer but is listed {} times among the {}s",
                                   describe_buffer(program, i), what, listed[i], what));
    }
  }
}

void check_launch_geometry(const Program& program, size_t index) {
  const ProgramStep& step = program.steps[index];
  const std::string what = describe_step(program, index);
  const auto& [grid_x, grid_y, grid_z] = step.grid;
  const auto& [block_x, block_y, block_z] = step.block;
  if (grid_x == 0 || grid_y == 0 || grid_z == 0 || grid_x > kMaxGridX || grid_y > kMaxGridYZ ||
      grid_z > kMaxGridYZ) {
    throw InputError(fmt::format("{}: grid {}x{}x{} is outside CUDA's limits (1 to {}x{}x{})", what,
                                 grid_x, grid_y, grid_z, kMaxGridX, kMaxGridYZ, kMaxGridYZ));
  }
  if (block_x == 0 || block_y == 0 || block_z == 0 || block_x > kMaxBlockXY ||
      block_y > kMaxBlockXY || block_z > kMaxBlockZ ||
      uint64_t{block_x} * block_y * block_z > kMaxThreadsPerBlock) {
    throw InputError(fmt::format(
        "{}: block {}x{}x{} is outside CUDA's limits (1 to {}x{}x{}, at most {} threads)", what,
        block_x, block_y, block_z, kMaxBlockXY, kMaxBlockXY, kMaxBlockZ, kMaxThreadsPerBlock));
  }
  if (step.shared_bytes > kMaxSharedBytes) {
    throw InputError(fmt::format("{}: {} bytes of shared memory exceed the {} a block can have",
                                 what, step.shared_bytes, kMaxSharedBytes));
  }
}

// The tensor maps a step's kernel states (runtime/kernel_header.h): well formed, each of a
// pointer parameter the step passes, of its buffer's element type, within the buffer's bytes,
// in the limits cuTensorMapEncodeTiled sets (strides multiples of 16 bytes, boxes of 1 to 256
// elements, a swizzled box row no longer than the swizzle). Expects the step's arguments to be
// valid buffer indices.
void check_tensor_maps(const Program& program, size_t index) {
  const ProgramStep& step = program.steps[index];
  const ProgramKernel& kernel = program.kernels[step.kernel];
  const std::optional<std::vector<KernelTensorMap>> maps = kernel_tensor_maps(kernel);
  const std::string what = describe_step(program, index);
  if (!maps) {
    throw InputError(fmt::format(
        "{}: its kernel's header line '// tensor maps' is malformed (\"0 f16 dims 768x4096 "
        "strides 1536 box 64x128 swizzle 128\", \"; \"-separated)",
        what));
  }
  if (!maps->empty() && kernel_parameter_count(kernel) < 0) {
    throw InputError(fmt::format(
        "{}: its kernel states tensor maps but not its parameter count ('// parameters')", what));
  }
  for (size_t j = 0; j < maps->size(); ++j) {
    const KernelTensorMap& map = (*maps)[j];
    if (map.parameter >= std::ssize(step.args)) {
      throw InputError(
          fmt::format("{}: tensor map {} reads parameter {}; the step passes {} "
                      "arguments",
                      what, j, map.parameter, step.args.size()));
    }
    const size_t buffer_index = static_cast<size_t>(step.args[map.parameter]);
    const ProgramBuffer& buffer = program.buffers[buffer_index];
    if (buffer.type.dtype != map.dtype) {
      throw InputError(
          fmt::format("{}: tensor map {} reads {} elements from parameter {}, {} of {}", what, j,
                      dtype_name(map.dtype), map.parameter, describe_buffer(program, buffer_index),
                      dtype_name(buffer.type.dtype)));
    }
    const int64_t element = static_cast<int64_t>(dtype_size(map.dtype));
    int64_t last = (map.dims[0] - 1) * element;
    for (size_t d = 1; d < map.dims.size(); ++d) {
      if (map.strides[d - 1] % 16 != 0) {
        throw InputError(fmt::format("{}: tensor map {}'s stride {} bytes is not a multiple of 16",
                                     what, j, map.strides[d - 1]));
      }
      last += (map.dims[d] - 1) * map.strides[d - 1];
    }
    if (last + element > static_cast<int64_t>(buffer.type.num_bytes())) {
      throw InputError(
          fmt::format("{}: tensor map {} spans {} bytes of parameter {}, {} of {} "
                      "bytes",
                      what, j, last + element, map.parameter,
                      describe_buffer(program, buffer_index), buffer.type.num_bytes()));
    }
    for (const int64_t box : map.box) {
      if (box > 256) {
        throw InputError(
            fmt::format("{}: tensor map {}'s box of {} elements exceeds 256", what, j, box));
      }
    }
    if (map.swizzle != 0 && map.box[0] * element > map.swizzle) {
      throw InputError(
          fmt::format("{}: tensor map {}'s box rows of {} bytes exceed its {}-byte "
                      "swizzle",
                      what, j, map.box[0] * element, map.swizzle));
    }
  }
}

// A region must be a written parameter's, and its runs must tile the buffer passed there.
void check_output_regions(const Program& program, size_t i, const std::vector<int>& written) {
  const ProgramStep& step = program.steps[i];
  const std::optional<std::vector<KernelOutputRegion>> regions =
      kernel_output_regions(program.kernels[step.kernel]);
  if (!regions) {
    throw InputError(fmt::format(
        "{}: its kernel's header line '// output regions' is malformed (\"PARAM block B stride "
        "S offset O\" in increasing parameter order, 0 < B, O + B <= S)",
        describe_step(program, i)));
  }
  for (const KernelOutputRegion& region : *regions) {
    if (!std::binary_search(written.begin(), written.end(), region.parameter)) {
      throw InputError(
          fmt::format("{}: its kernel states an output region of parameter {}, "
                      "which it does not write",
                      describe_step(program, i), region.parameter));
    }
    const ProgramBuffer& buffer = program.buffers[step.args[region.parameter]];
    if (buffer.type.num_elements() % region.stride != 0) {
      throw InputError(fmt::format(
          "{}: its kernel writes parameter {} in runs {} elements apart, which do not tile {}",
          describe_step(program, i), region.parameter, region.stride,
          describe_buffer(program, step.args[region.parameter])));
    }
  }
}

void check_steps(const Program& program) {
  for (size_t i = 0; i < program.steps.size(); ++i) {
    const ProgramStep& step = program.steps[i];
    if (step.kernel < 0 || step.kernel >= std::ssize(program.kernels)) {
      throw InputError(fmt::format("step {}: kernel index {} is out of range ({} kernels)", i,
                                   step.kernel, program.kernels.size()));
    }
    check_launch_geometry(program, i);
    const int parameters = kernel_parameter_count(program.kernels[step.kernel]);
    if (parameters >= 0 && std::ssize(step.args) != parameters) {
      throw InputError(fmt::format("{} passes {} arguments; its kernel takes {}",
                                   describe_step(program, i), step.args.size(), parameters));
    }
    const ProgramKernel& kernel = program.kernels[step.kernel];
    const std::optional<std::vector<int>> written = kernel_written_parameters(kernel);
    if (!written && kernel_states_written_parameters(kernel)) {
      throw InputError(fmt::format(
          "{}: its kernel's header line '{}' is malformed (increasing parameter positions, "
          "\"2, 3\")",
          describe_step(program, i), "// written parameters"));
    }
    if (written && !written->empty() && written->back() >= std::ssize(step.args)) {
      throw InputError(
          fmt::format("{}: its kernel writes parameter {}; the step passes {} arguments",
                      describe_step(program, i), written->back(), step.args.size()));
    }
    for (size_t position = 0; position < step.args.size(); ++position) {
      const int arg = step.args[position];
      if (arg < 0 || arg >= std::ssize(program.buffers)) {
        throw InputError(
            fmt::format("{}: argument {} is buffer index {}, out of range ({} buffers)",
                        describe_step(program, i), position, arg, program.buffers.size()));
      }
    }
    check_tensor_maps(program, i);
    check_output_regions(program, i, written.value_or(std::vector<int>()));
    check_library_gemm(program, i, written.value_or(std::vector<int>()));
    // Inputs and weights are read only: a kernel stating it writes one contradicts the program.
    for (const int position : written.value_or(std::vector<int>())) {
      const ProgramBuffer& buffer = program.buffers[step.args[position]];
      if (buffer.kind == ProgramBuffer::Kind::kInput ||
          buffer.kind == ProgramBuffer::Kind::kWeight) {
        throw InputError(fmt::format("{}: its kernel writes parameter {}, {}, which is read only",
                                     describe_step(program, i), position,
                                     describe_buffer(program, step.args[position])));
      }
    }
  }
}

void check_outputs_written(const Program& program) {
  const std::vector<LiveRange> ranges = live_ranges(program);
  for (const int output : program.outputs) {
    if (!ranges[output].used()) {
      throw InputError(
          fmt::format("output {} is written by no step", describe_buffer(program, output)));
    }
  }
}

}  // namespace

void validate_program(const Program& program) {
  check_archs(program);
  for (size_t i = 0; i < program.kernels.size(); ++i) check_kernel(program, program.kernels[i], i);
  check_buffers(program);
  check_signature(program, program.inputs, ProgramBuffer::Kind::kInput, "input");
  check_signature(program, program.outputs, ProgramBuffer::Kind::kOutput, "output");
  check_steps(program);
  check_arena_plan(program);
  check_outputs_written(program);
}

}  // namespace kiln
