// Compiling a lowered Program's kernels with NVRTC: a CUBIN per kernel and target arch, and
// PTX for the newest arch (for GPUs newer than every target), in parallel on a thread pool,
// through the disk cache (kernel_cache.h).
#pragma once

#include <exception>
#include <functional>
#include <vector>

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

// compile_program for several programs on one pool of threads (the autotuner's rounds): the
// kernels in program order, a source that several programs share compiled once. As each
// program's last kernel is done, fills the program and calls on_compiled(index, error) from
// the thread that finished it (error: the InternalError of its first kernel that failed to
// compile, its binaries then incomplete; null otherwise). Returns each program's error; `stats`
// counts the distinct kernels. Throws, before compiling anything, what compile_program does for
// the archs and NVRTC.
std::vector<std::exception_ptr> compile_programs(
    const std::vector<Program*>& programs, const CodegenOptions& options, CompileStats& stats,
    const std::function<void(size_t, std::exception_ptr)>& on_compiled);

// Checks "sm_80"-style names against what NVRTC supports; throws InputError naming the bad one.
void check_archs(const std::vector<std::string>& archs);

}  // namespace kiln::codegen
