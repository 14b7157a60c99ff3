// Options of code generation and kernel compilation (kiln compile's flags map onto them).
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "codegen/tactic_site.h"
#include "target/target.h"

namespace kiln::codegen {

struct CodegenOptions {
  // NVRTC targets: a CUBIN for each, and PTX for the newest (for GPUs newer than all of them).
  std::vector<std::string> archs = {"sm_80", "sm_90"};
  // The GPU the kernels are generated for (one source serves every arch): its SM count sizes
  // grids and splits, its architecture picks emitter variants. for_archs() and for_target() set
  // both fields consistently.
  Target target = target_for_arch("sm_90");
  // Where compiled kernels are cached. Empty: $KILN_CACHE_DIR, else $XDG_CACHE_HOME/kiln, else
  // ~/.cache/kiln (nvrtc_compiler.h).
  std::string cache_dir;
  // Kernels compiled at once; 0: one per hardware thread.
  int threads = 0;
  // Lower the kernels that can be generated and leave the others out, listing them in the
  // LoweringReport, instead of refusing the graph. Only for the test that compiles every
  // supported kernel of many models: the Program is incomplete.
  bool skip_unsupported = false;
  // When set, compile_program calls it after each (kernel, arch) job, compiled or from the
  // cache, with the jobs done so far and their total; one call at a time (kiln bench's
  // progress bar).
  std::function<void(size_t done, size_t total)> on_progress;
  // Concats as views: each operand's producer writes its slice of the concat's buffer, where it
  // can (output_placement.h); false: every concat kernel node is a copy kernel.
  bool concat_views = true;
  // Which way to compute each kernel node that has several (an index into site.tactics); null:
  // the heuristic's (0) everywhere.
  std::function<int(const TacticSite& site)> choose_tactic;
  // Offer library tactics (cuBLASLt, codegen/library_gemm.h) beside kiln's own kernels; false:
  // kiln's kernels alone (kiln compile --no-library-tactics).
  bool library_tactics = true;

  // Compiling for `archs`, the kernels generated for the newest of them (its nominal figures).
  // Throws InputError on a malformed arch name or an empty list.
  static CodegenOptions for_archs(std::vector<std::string> archs);
  // Compiling for `target` alone (--arch native: the GPU's own figures).
  static CodegenOptions for_target(Target target);
};

// The newest of `archs` (by number; sm_90a counts as sm_90), which is not empty.
const std::string& newest_arch(const std::vector<std::string>& archs);

}  // namespace kiln::codegen
