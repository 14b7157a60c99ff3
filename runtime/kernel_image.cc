// Arch names and the choice of a kernel's CUBIN or PTX for a GPU (the rules: kernel_image.h).
#include "runtime/kernel_image.h"

#include <cctype>

#include "ir/error.h"

namespace kiln {

std::optional<GpuArch> parse_gpu_arch(std::string_view name) {
  if (!name.starts_with("sm_")) return std::nullopt;
  std::string_view rest = name.substr(3);
  GpuArch arch;
  if (!rest.empty() && (rest.back() == 'a' || rest.back() == 'f')) {
    arch.suffix = rest.back();
    rest.remove_suffix(1);
  }
  if (rest.size() < 2 || rest.size() > 3 || rest.front() == '0') return std::nullopt;
  for (const char c : rest) {
    if (!std::isdigit(static_cast<unsigned char>(c))) return std::nullopt;
  }
  arch.major = std::stoi(std::string(rest.substr(0, rest.size() - 1)));
  arch.minor = rest.back() - '0';
  return arch;
}

std::string gpu_arch_name(int major, int minor) {
  return "sm_" + std::to_string(major) + std::to_string(minor);
}

KernelImage choose_kernel_image(const ProgramKernel& kernel, int major, int minor) {
  const KernelBinary* chosen = nullptr;
  int chosen_minor = -1;
  for (const KernelBinary& binary : kernel.binaries) {
    const std::optional<GpuArch> arch = parse_gpu_arch(binary.arch);
    if (!arch || arch->major != major || arch->minor > minor) continue;
    const bool exact = arch->minor == minor;
    if (!exact && !arch->suffix.empty()) continue;
    if (exact) return {binary.cubin.data(), "CUBIN " + binary.arch};
    if (arch->minor > chosen_minor) {
      chosen = &binary;
      chosen_minor = arch->minor;
    }
  }
  if (chosen) return {chosen->cubin.data(), "CUBIN " + chosen->arch};
  if (!kernel.ptx.empty()) return {kernel.ptx.c_str(), "PTX"};
  std::string compiled_for;
  for (const KernelBinary& binary : kernel.binaries) {
    compiled_for += (compiled_for.empty() ? "" : ", ") + binary.arch;
  }
  throw InputError("kernel '" + kernel.name + "': compiled for " + compiled_for + ", this GPU is " +
                   gpu_arch_name(major, minor) + " (no PTX)");
}

}  // namespace kiln
