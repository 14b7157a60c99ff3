// Nominal targets by architecture name, and what each architecture offers (see the header).
#include "target/target.h"

#include <fmt/format.h>

#include <regex>

#include "ir/error.h"

namespace kiln {
namespace {

constexpr int64_t kKiB = 1024;
constexpr int64_t kMiB = 1024 * kKiB;

// The data-center part whose figures stand for an architecture (vendor specifications).
struct NominalPart {
  int major;
  int minor;
  const char* device;
  int sm_count;
  int64_t shared_memory_per_sm;
  int64_t shared_memory_per_block;
  int64_t l2_bytes;
  double memory_bandwidth_gb_s;
};

constexpr NominalPart kNominalParts[] = {
    {7, 5, "T4", 40, 64 * kKiB, 64 * kKiB, 4 * kMiB, 320},
    {8, 0, "A100 SXM4 80GB", 108, 164 * kKiB, 163 * kKiB, 40 * kMiB, 2039},
    {8, 6, "A10", 72, 100 * kKiB, 99 * kKiB, 6 * kMiB, 600},
    {8, 9, "L40S", 142, 100 * kKiB, 99 * kKiB, 96 * kMiB, 864},
    {9, 0, "H100 SXM5", 132, 228 * kKiB, 227 * kKiB, 50 * kMiB, 3350},
};

// The newest known part not newer than (major, minor); the oldest for older archs (NVRTC's
// supported list, checked when compiling, keeps those out).
const NominalPart& nominal_part(int major, int minor) {
  const NominalPart* chosen = &kNominalParts[0];
  for (const NominalPart& part : kNominalParts) {
    if (part.major < major || (part.major == major && part.minor <= minor)) chosen = &part;
  }
  return *chosen;
}

}  // namespace

std::string_view tensor_cores_name(TensorCores kind) {
  switch (kind) {
    case TensorCores::kNone:
      return "none";
    case TensorCores::kMmaSync:
      return "mma.sync";
    case TensorCores::kWarpgroupMma:
      return "wgmma";
  }
  throw InternalError("unknown TensorCores value");
}

TensorCores Target::tensor_cores() const {
  if (major == 9 && minor == 0 && arch_specific) return TensorCores::kWarpgroupMma;
  return major >= 8 ? TensorCores::kMmaSync : TensorCores::kNone;
}

bool Target::has_tma() const { return major >= 9; }

std::string Target::describe() const {
  return fmt::format(
      "{} ({}{}): {} SMs, {} KiB shared memory per block ({} per SM), {} registers per SM, "
      "{} MiB L2, {:.0f} GB/s, tensor cores {}{}",
      arch, from_device ? "" : "nominal ", device, sm_count, shared_memory_per_block / kKiB,
      shared_memory_per_sm / kKiB, registers_per_sm, l2_bytes / kMiB, memory_bandwidth_gb_s,
      tensor_cores_name(tensor_cores()), has_tma() ? ", TMA" : "");
}

Target target_for_arch(const std::string& arch) {
  static const std::regex pattern("sm_([0-9]+)([0-9])(a?)");
  std::smatch match;
  if (!std::regex_match(arch, match, pattern)) {
    throw InputError("architecture '" + arch + "' is not of the form sm_80");
  }
  Target target;
  target.arch = arch;
  target.major = std::stoi(match[1]);
  target.minor = std::stoi(match[2]);
  target.arch_specific = match[3].length() > 0;
  const NominalPart& part = nominal_part(target.major, target.minor);
  target.device = part.device;
  target.sm_count = part.sm_count;
  target.shared_memory_per_sm = part.shared_memory_per_sm;
  target.shared_memory_per_block = part.shared_memory_per_block;
  target.registers_per_sm = 64 * 1024;
  target.registers_per_block = 64 * 1024;
  target.max_threads_per_sm = part.major == 7                      ? 1024
                              : part.major == 8 && part.minor != 0 ? 1536
                                                                   : 2048;
  target.l2_bytes = part.l2_bytes;
  target.memory_bandwidth_gb_s = part.memory_bandwidth_gb_s;
  return target;
}

}  // namespace kiln
