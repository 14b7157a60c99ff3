// Options of code generation and kernel compilation (kiln compile's flags map onto them).
#pragma once

#include <string>
#include <vector>

namespace kiln::codegen {

struct CodegenOptions {
  // NVRTC targets: a CUBIN for each, and PTX for the newest (for GPUs newer than all of them).
  std::vector<std::string> archs = {"sm_80", "sm_90"};
  // Where compiled kernels are cached. Empty: $KILN_CACHE_DIR, else $XDG_CACHE_HOME/kiln, else
  // ~/.cache/kiln (nvrtc_compiler.h).
  std::string cache_dir;
  // Kernels compiled at once; 0: one per hardware thread.
  int threads = 0;
  // Lower the kernels that can be generated and leave the others out, listing them in the
  // LoweringReport, instead of refusing the graph. Only for the test that compiles every
  // supported kernel of many models: the Program is incomplete.
  bool skip_unsupported = false;
};

}  // namespace kiln::codegen
