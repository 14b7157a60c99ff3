// Resolving --arch, with the driver query for `native` in the background (see the header).
#include "tools/target_archs.h"

#include "codegen/compile_program.h"
#include "codegen/native_arch.h"
#include "ir/error.h"

namespace kiln::tools {

TargetArchs::TargetArchs(const std::vector<std::string>& requested) {
  if (requested.size() == 1 && requested[0] == "native") {
    native_ = std::async(std::launch::async, codegen::native_arch);
    return;
  }
  for (const std::string& arch : requested) {
    if (arch == "native") throw InputError("--arch native cannot be combined with other archs");
  }
  codegen::check_archs(requested);
  archs_ = requested;
}

std::vector<std::string> TargetArchs::resolve() {
  if (native_.valid()) archs_ = {native_.get()};
  return archs_;
}

}  // namespace kiln::tools
