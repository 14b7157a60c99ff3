// Whether a program fits the GPU's free memory (see the header).
#include "runtime/device_memory_fit.h"

#include <fmt/format.h>

namespace kiln {
namespace {

uint64_t io_bytes(const Program& program) {
  uint64_t bytes = 0;
  for (const ProgramBuffer& buffer : program.buffers) {
    if (buffer.kind == ProgramBuffer::Kind::kInput || buffer.kind == ProgramBuffer::Kind::kOutput) {
      bytes += buffer.type.num_bytes();
    }
  }
  return bytes;
}

std::string readable(uint64_t bytes) {
  constexpr double kKiB = 1024.0, kMiB = kKiB * 1024, kGiB = kMiB * 1024;
  const double value = static_cast<double>(bytes);
  if (value >= kGiB) return fmt::format("{:.2f} GiB", value / kGiB);
  if (value >= kMiB) return fmt::format("{:.1f} MiB", value / kMiB);
  if (value >= kKiB) return fmt::format("{:.1f} KiB", value / kKiB);
  return fmt::format("{} B", bytes);
}

}  // namespace

uint64_t device_bytes_needed(const Program& program) {
  return program.weights.size() + static_cast<uint64_t>(program.arena_bytes) + io_bytes(program);
}

std::string device_memory_shortfall(const Program& program, uint64_t free_bytes) {
  const uint64_t needed = device_bytes_needed(program);
  if (needed <= free_bytes) return "";
  return fmt::format(
      "the program needs {} of GPU memory (weights {}, arena {}, inputs and outputs {}); the "
      "GPU has {} free",
      readable(needed), readable(program.weights.size()),
      readable(static_cast<uint64_t>(program.arena_bytes)), readable(io_bytes(program)),
      readable(free_bytes));
}

std::string shared_session_shortfall(const Program& program, uint64_t free_bytes) {
  const uint64_t needed = static_cast<uint64_t>(program.arena_bytes);
  if (needed <= free_bytes) return "";
  return fmt::format(
      "a shared session of the program needs {} of GPU memory for its arena (the weights are "
      "shared); the GPU has {} free",
      readable(needed), readable(free_bytes));
}

}  // namespace kiln
