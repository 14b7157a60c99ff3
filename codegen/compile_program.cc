// compile_programs: jobs of (kernel, arch), one per distinct kernel source of all the programs,
// run by a pool of threads that each take the next job; results land in the job's own slot, and
// a program is filled, in a fixed order, once its last job is done.
#include "codegen/compile_program.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <exception>
#include <map>
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

// One kernel's compilation for one arch: the first kernel in program order with that source,
// shared by every program that has the same source (the tuning rounds share most kernels).
struct SharedJob {
  size_t program;
  Job job;
};

std::vector<std::exception_ptr> compile_programs(
    const std::vector<Program*>& programs, const CodegenOptions& options, CompileStats& stats,
    const std::function<void(size_t, std::exception_ptr)>& on_compiled) {
  const auto start = std::chrono::steady_clock::now();
  check_archs(options.archs);
  const Nvrtc& nvrtc = Nvrtc::instance();
  stats = {};
  stats.cache_directory = kernel_cache_directory(options.cache_dir);
  const KernelCache cache(stats.cache_directory);
  const std::string& ptx_arch = newest_arch(options.archs);  // PTX for the newest

  // Jobs in program order, one per distinct (source, arch); each program's jobs by kernel.
  std::vector<SharedJob> jobs;
  std::map<std::pair<std::string_view, size_t>, size_t> job_of;
  std::vector<std::vector<size_t>> jobs_of_program(programs.size());
  std::vector<std::vector<size_t>> programs_of_job;
  std::vector<size_t> jobs_left(programs.size());  // distinct jobs of each program not yet done
  for (size_t p = 0; p < programs.size(); ++p) {
    const Program& program = *programs[p];
    for (size_t k = 0; k < program.kernels.size(); ++k) {
      for (size_t a = 0; a < options.archs.size(); ++a) {
        const auto [at, added] =
            job_of.emplace(std::pair(std::string_view(program.kernels[k].source), a), jobs.size());
        if (added) {
          jobs.push_back({p, {k, a, options.archs[a] == ptx_arch}});
          programs_of_job.emplace_back();
        }
        jobs_of_program[p].push_back(at->second);
        std::vector<size_t>& sharing = programs_of_job[at->second];
        if (sharing.empty() || sharing.back() != p) {
          sharing.push_back(p);
          ++jobs_left[p];
        }
      }
    }
  }
  std::vector<JobResult> results(jobs.size());
  std::vector<std::exception_ptr> errors(programs.size());

  // Fills program p's binaries from its finished jobs, or records its first job's error.
  const auto finish_program = [&](size_t p) {
    Program& program = *programs[p];
    program.archs = options.archs;
    size_t next_job = 0;
    for (ProgramKernel& kernel : program.kernels) {
      kernel.binaries.clear();
      kernel.ptx.clear();
      for (size_t a = 0; a < options.archs.size(); ++a) {
        const size_t j = jobs_of_program[p][next_job++];
        if (results[j].error) {
          if (!errors[p]) errors[p] = results[j].error;
          continue;
        }
        kernel.binaries.push_back({options.archs[a], results[j].output.cubin});
        if (jobs[j].job.with_ptx) kernel.ptx = results[j].output.ptx;
      }
    }
    if (on_compiled) on_compiled(p, errors[p]);
  };

  std::atomic<size_t> next{0};
  std::mutex mutex;  // progress, jobs_left
  size_t done = 0;
  const auto work = [&] {
    for (size_t j = next++; j < jobs.size(); j = next++) {
      const SharedJob& shared = jobs[j];
      try {
        results[j] = run_job(shared.job, *programs[shared.program], options.archs, cache, nvrtc);
      } catch (...) {
        results[j].error = std::current_exception();
      }
      std::vector<size_t> finished;
      {
        const std::lock_guard<std::mutex> lock(mutex);
        if (options.on_progress) options.on_progress(++done, jobs.size());
        for (const size_t p : programs_of_job[j]) {
          if (--jobs_left[p] == 0) finished.push_back(p);
        }
      }
      for (const size_t p : finished) finish_program(p);
    }
  };
  for (size_t p = 0; p < programs.size(); ++p) {
    if (jobs_left[p] == 0) finish_program(p);  // no kernels
  }
  const unsigned hardware = std::max(1u, std::thread::hardware_concurrency());
  const size_t thread_count = std::min<size_t>(
      jobs.size(), options.threads > 0 ? static_cast<size_t>(options.threads) : hardware);
  std::vector<std::thread> threads;
  for (size_t t = 1; t < thread_count; ++t) threads.emplace_back(work);
  work();
  for (std::thread& thread : threads) thread.join();

  for (const JobResult& result : results) {
    if (result.error) continue;
    ++(result.from_cache ? stats.cache_hits : stats.compilations);
    stats.cache_store_failures += result.cache_store_failures;
    if (stats.cache_store_error.empty()) stats.cache_store_error = result.cache_store_error;
  }
  stats.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return errors;
}

CompileStats compile_program(Program& program, const CodegenOptions& options) {
  CompileStats stats;
  const std::vector<std::exception_ptr> errors = compile_programs({&program}, options, stats, {});
  if (errors[0]) std::rethrow_exception(errors[0]);
  return stats;
}

}  // namespace kiln::codegen
