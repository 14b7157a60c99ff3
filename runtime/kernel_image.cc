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

std::optional<GpuArch> ptx_target(std::string_view ptx) {
  constexpr std::string_view kDirective = ".target";
  for (size_t at = ptx.find(kDirective); at != std::string_view::npos;
       at = ptx.find(kDirective, at + 1)) {
    const bool line_start = at == 0 || ptx[at - 1] == '\n';
    const size_t name_start = ptx.find_first_not_of(" \t", at + kDirective.size());
    if (!line_start || name_start == at + kDirective.size() ||
        name_start == std::string_view::npos) {
      continue;
    }
    const size_t name_end = ptx.find_first_of(" \t,\r\n", name_start);
    return parse_gpu_arch(ptx.substr(name_start, name_end - name_start));
  }
  return std::nullopt;
}

bool can_jit_ptx(const GpuArch& target, int major, int minor) {
  if (target.suffix == "a") return target.major == major && target.minor == minor;
  if (target.suffix == "f") return target.major == major && target.minor <= minor;
  return target.major < major || (target.major == major && target.minor <= minor);
}

KernelImage choose_kernel_image(const ProgramKernel& kernel, int major, int minor) {
  const KernelBinary* chosen = nullptr;
  int chosen_minor = -1;
  for (const KernelBinary& binary : kernel.binaries) {
    const std::optional<GpuArch> arch = parse_gpu_arch(binary.arch);
    if (!arch || arch->major != major || arch->minor > minor) continue;
    const bool exact = arch->minor == minor;
    if (!exact && !arch->suffix.empty()) continue;
    if (exact) return {binary.cubin.data(), "CUBIN " + binary.arch, arch->major};
    if (arch->minor > chosen_minor) {
      chosen = &binary;
      chosen_minor = arch->minor;
    }
  }
  if (chosen) return {chosen->cubin.data(), "CUBIN " + chosen->arch, major};
  std::string why_not_ptx = "no PTX";
  if (!kernel.ptx.empty()) {
    const std::optional<GpuArch> target = ptx_target(kernel.ptx);
    if (!target || can_jit_ptx(*target, major, minor)) {
      return {kernel.ptx.c_str(), "PTX", target ? target->major : 0};
    }
    why_not_ptx = "its PTX is for " + gpu_arch_name(target->major, target->minor) + target->suffix +
                  (target->suffix == "a" ? ", that GPU only" : ", newer than this GPU");
  }
  std::string compiled_for;
  for (const KernelBinary& binary : kernel.binaries) {
    compiled_for += (compiled_for.empty() ? "" : ", ") + binary.arch;
  }
  throw InputError("kernel '" + kernel.name + "': compiled for " + compiled_for + ", this GPU is " +
                   gpu_arch_name(major, minor) + " (" + why_not_ptx + ")");
}

}  // namespace kiln
