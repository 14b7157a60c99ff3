// compile_program: jobs of (kernel, arch), run by a pool of threads that each take the next
// job; results land in the job's own slot, so the Program is filled in a fixed order.
#include "codegen/compile_program.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <exception>
#include <mutex>
#include <regex>
#include <thread>

#include "codegen/kernel_cache.h"
#include "codegen/nvrtc_compiler.h"
#include "ir/error.h"

namespace kiln::codegen {
namespace {

struct Job {
  size_t kernel;
  size_t arch;
  bool with_ptx;
};

struct JobResult {
  NvrtcOutput output;
  bool from_cache = false;
  std::exception_ptr error;
  int cache_store_failures = 0;
  std::string cache_store_error;
};

// One kernel for one arch, from the cache when both products are there.
JobResult run_job(const Job& job, const Program& program, const std::vector<std::string>& archs,
                  const KernelCache& cache, const Nvrtc& nvrtc) {
  JobResult result;
  const ProgramKernel& kernel = program.kernels[job.kernel];
  const std::string& arch = archs[job.arch];
  const std::vector<std::string> options = Nvrtc::options_for(arch);
  const std::string cubin_key =
      KernelCache::key(kernel.source, arch, options, nvrtc.version(), "cubin");
  const std::string ptx_key =
      KernelCache::key(kernel.source, arch, options, nvrtc.version(), "ptx");
  std::optional<std::vector<uint8_t>> cubin = cache.load(cubin_key);
  std::optional<std::vector<uint8_t>> ptx = job.with_ptx ? cache.load(ptx_key) : std::nullopt;
  if (cubin && (!job.with_ptx || ptx)) {
    result.output.cubin = std::move(*cubin);
    if (ptx) result.output.ptx.assign(ptx->begin(), ptx->end());
    result.from_cache = true;
    return result;
  }
  result.output = nvrtc.compile(kernel.source, kernel.name, arch, job.with_ptx);
  if (cache.directory().empty()) return result;
  const auto store = [&](const std::string& key, std::span<const uint8_t> bytes) {
    std::string why;
    if (!cache.store(key, bytes, &why)) {
      ++result.cache_store_failures;
      if (result.cache_store_error.empty()) result.cache_store_error = why;
    }
  };
  store(cubin_key, result.output.cubin);
  if (job.with_ptx) {
    store(ptx_key, {reinterpret_cast<const uint8_t*>(result.output.ptx.data()),
                    result.output.ptx.size()});
  }
  return result;
}

}  // namespace

void check_archs(const std::vector<std::string>& archs) {
  if (archs.empty()) throw InputError("no target architecture given (--arch sm_80,sm_90)");
  const std::vector<std::string> supported = Nvrtc::instance().supported_archs();
  const std::regex pattern("sm_[0-9]+a?");  // sm_90a: Hopper's arch-specific features
  for (size_t i = 0; i < archs.size(); ++i) {
    const std::string& arch = archs[i];
    if (!std::regex_match(arch, pattern)) {
      throw InputError("architecture '" + arch + "' is not of the form sm_80");
    }
    if (std::find(archs.begin(), archs.begin() + i, arch) != archs.begin() + i) {
      throw InputError("architecture " + arch + " is given twice");
    }
    const std::string base = arch.back() == 'a' ? arch.substr(0, arch.size() - 1) : arch;
    if (std::find(supported.begin(), supported.end(), base) == supported.end()) {
      std::string list;
      for (const std::string& known : supported) list += (list.empty() ? "" : ", ") + known;
      throw InputError("NVRTC " + Nvrtc::instance().version() + " does not compile for " + arch +
                       " (it supports " + list + ")");
    }
  }
}

CompileStats compile_program(Program& program, const CodegenOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  check_archs(options.archs);
  const Nvrtc& nvrtc = Nvrtc::instance();
  CompileStats stats;
  stats.cache_directory = kernel_cache_directory(options.cache_dir);
  const KernelCache cache(stats.cache_directory);
  const std::string& ptx_arch = newest_arch(options.archs);  // PTX for the newest

  std::vector<Job> jobs;
  for (size_t k = 0; k < program.kernels.size(); ++k) {
    for (size_t a = 0; a < options.archs.size(); ++a) {
      jobs.push_back({k, a, options.archs[a] == ptx_arch});
    }
  }
  std::vector<JobResult> results(jobs.size());
  std::atomic<size_t> next{0};
  std::mutex progress_mutex;
  size_t done = 0;
  const auto work = [&] {
    for (size_t j = next++; j < jobs.size(); j = next++) {
      try {
        results[j] = run_job(jobs[j], program, options.archs, cache, nvrtc);
      } catch (...) {
        results[j].error = std::current_exception();
      }
      if (options.on_progress) {
        const std::lock_guard<std::mutex> lock(progress_mutex);
        options.on_progress(++done, jobs.size());
      }
    }
  };
  const unsigned hardware = std::max(1u, std::thread::hardware_concurrency());
  const size_t thread_count = std::min<size_t>(
      jobs.size(), options.threads > 0 ? static_cast<size_t>(options.threads) : hardware);
  std::vector<std::thread> threads;
  for (size_t t = 1; t < thread_count; ++t) threads.emplace_back(work);
  work();
  for (std::thread& thread : threads) thread.join();

  program.archs = options.archs;
  for (ProgramKernel& kernel : program.kernels) {
    kernel.binaries.clear();
    kernel.ptx.clear();
  }
  for (size_t j = 0; j < jobs.size(); ++j) {
    if (results[j].error) std::rethrow_exception(results[j].error);
    ProgramKernel& kernel = program.kernels[jobs[j].kernel];
    kernel.binaries.push_back({options.archs[jobs[j].arch], std::move(results[j].output.cubin)});
    if (jobs[j].with_ptx) kernel.ptx = std::move(results[j].output.ptx);
    ++(results[j].from_cache ? stats.cache_hits : stats.compilations);
    stats.cache_store_failures += results[j].cache_store_failures;
    if (stats.cache_store_error.empty()) stats.cache_store_error = results[j].cache_store_error;
  }
  stats.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return stats;
}

}  // namespace kiln::codegen
