// Codegen options for a list of archs or one target (see the header).
#include "codegen/options.h"

#include <algorithm>

#include "ir/error.h"

namespace kiln::codegen {
namespace {

int arch_number(const std::string& arch) { return std::stoi(arch.substr(3)); }

}  // namespace

const std::string& newest_arch(const std::vector<std::string>& archs) {
  return *std::max_element(archs.begin(), archs.end(), [](const auto& a, const auto& b) {
    return arch_number(a) < arch_number(b);
  });
}

CodegenOptions CodegenOptions::for_archs(std::vector<std::string> archs) {
  if (archs.empty()) throw InputError("no target architecture given (--arch sm_80,sm_90)");
  for (const std::string& arch : archs) {
    const Target target = target_for_arch(arch);  // names checked first
    if (target.arch_specific && archs.size() > 1) {
      throw InputError("--arch " + arch +
                       " cannot be combined with other archs: its kernels (wgmma on sm_90a) run "
                       "only on that architecture; compile for it alone");
    }
  }
  CodegenOptions options;
  options.target = target_for_arch(newest_arch(archs));
  options.archs = std::move(archs);
  return options;
}

CodegenOptions CodegenOptions::for_target(Target target) {
  CodegenOptions options;
  options.archs = {target.arch};
  options.target = std::move(target);
  return options;
}

}  // namespace kiln::codegen
