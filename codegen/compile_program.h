// Compiling a lowered Program's kernels with NVRTC: a CUBIN per kernel and target arch, and
// PTX for the newest arch (for GPUs newer than every target), in parallel on a thread pool,
// through the disk cache (kernel_cache.h).
#pragma once

#include "codegen/options.h"
#include "runtime/program.h"

namespace kiln::codegen {

struct CompileStats {
  int compilations = 0;         // NVRTC runs (one per kernel and arch not found in the cache)
  int cache_hits = 0;           // kernel and arch pairs read from the cache
  double seconds = 0;           // wall time
  std::string cache_directory;  // "" when there is none
  // Compiled products the cache could not store (the compile still succeeds), and why the
  // first could not.
  int cache_store_failures = 0;
  std::string cache_store_error;
};

// Fills every kernel's binaries (in options.archs order) and PTX, and sets program.archs.
// Throws InputError on a malformed or unsupported arch and when NVRTC is missing; a kernel
// that fails to compile throws InternalError with its name and NVRTC's log.
CompileStats compile_program(Program& program, const CodegenOptions& options);

// Checks "sm_80"-style names against what NVRTC supports; throws InputError naming the bad one.
void check_archs(const std::vector<std::string>& archs);

}  // namespace kiln::codegen
