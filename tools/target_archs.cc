// Resolving --arch, with the driver query for `native` in the background (see the header).
#include "tools/target_archs.h"

#include "codegen/compile_program.h"
#include "ir/error.h"
#include "target/native_target.h"

namespace kiln::tools {

TargetArchs::TargetArchs(const std::vector<std::string>& requested) {
  if (requested.size() == 1 && requested[0] == "native") {
    native_ = std::async(std::launch::async, native_target);
    return;
  }
  for (const std::string& arch : requested) {
    if (arch == "native") throw InputError("--arch native cannot be combined with other archs");
  }
  codegen::check_archs(requested);
  archs_ = requested;
}

codegen::CodegenOptions TargetArchs::resolve() {
  if (native_.valid()) return codegen::CodegenOptions::for_target(native_.get());
  return codegen::CodegenOptions::for_archs(archs_);
}

}  // namespace kiln::tools
