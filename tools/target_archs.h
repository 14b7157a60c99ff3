// The target GPUs of kiln compile's --arch: a list of archs (sm_80,sm_90), or `native`, this
// machine's GPU. Asking the CUDA driver for `native` (native_target) initializes the
// driver, which takes a large part of a compile whose kernels all come from the cache (~0.4 s on
// an H100 host); so the query starts on its own thread when a TargetArchs is made, overlapping
// loading and optimizing the model, and resolve() waits for it.
#pragma once

#include <future>
#include <string>
#include <vector>

#include "codegen/options.h"
#include "target/target.h"

namespace kiln::tools {

class TargetArchs {
 public:
  // Starts the driver query for `native`; a list of archs is checked (codegen::check_archs)
  // here, and `native` combined with other archs is an InputError.
  explicit TargetArchs(const std::vector<std::string>& requested);

  // Codegen options for the archs (the kernels generated for the newest), or for `native` the
  // GPU's own target: waits for the driver query and throws its InputError ("no CUDA device;
  // pass --arch sm_80 or sm_90 (...)") when it failed; compiling checks the native arch like any
  // other.
  codegen::CodegenOptions resolve();

 private:
  std::vector<std::string> archs_;
  std::future<Target> native_;  // valid until resolve() for `native`
};

}  // namespace kiln::tools
