// The long-run check of the session: one Session run RUNS times, then CYCLES load/unload cycles
// (a Session loaded from the file, run once, destroyed), each phase after a warm-up, with the
// process's resident host memory and the GPU's used memory sampled at ten points. Fails when
// either grew over a phase by more than its allowance (memory_growth.h); prints the figures
// docs/RUNTIME.md records. The inputs are zeros; the last run must give the first run's outputs.
//
//   usage: session_soak FILE.kiln [RUNS [CYCLES]] [--leak-host-bytes N] [--leak-gpu-bytes N]
//
// RUNS defaults to 100000 and CYCLES to 1000 (0 leaves a phase out). --leak-host-bytes leaks N
// bytes of host memory each run and --leak-gpu-bytes N bytes of GPU memory each cycle, on
// purpose: the test gpu_session_soak_catches_leaks shows the soak fails on a leak.
// Exit codes: 0 no growth past the allowances, 1 growth (or changed outputs), 2 usage or a bad
// program, 3 an internal error, 77 no CUDA device (ctest: skipped).
#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "ir/error.h"
#include "runtime/session.h"
#include "tests/runtime/cuda_device_skip.h"
#include "tests/runtime/memory_growth.h"
#include "tools/inspect_report.h"

namespace kiln::test {
namespace {

constexpr int kWarmupRuns = 1000;
constexpr int kWarmupCycles = 50;
constexpr int kSamples = 10;
// What a phase may grow: room for the allocator's and the driver's own bookkeeping and for the
// GPU's 2 MiB allocation granularity, less than a leak of one 32-byte allocation a run over
// 100000 runs (3.2 MB), or of 8 KiB a cycle over 1000 cycles (8 MB), leaves.
constexpr MemoryBytes kAllowed{2 << 20, 2 << 20};

struct Options {
  std::string path;
  int64_t runs = 100000;
  int64_t cycles = 1000;
  int64_t leak_host_bytes = 0;
  int64_t leak_gpu_bytes = 0;
};

int64_t parse_count(const char* text) {
  int64_t value = -1;
  const char* end = text + std::strlen(text);
  const auto [parsed_to, error] = std::from_chars(text, end, value);
  if (error != std::errc() || parsed_to != end || value < 0) {
    throw InputError(fmt::format("'{}' is not a count", text));
  }
  return value;
}

Options parse_options(int argc, char** argv) {
  Options options;
  std::vector<int64_t*> positional = {&options.runs, &options.cycles};
  size_t next = 0;
  for (int i = 1; i < argc; ++i) {
    const std::string argument = argv[i];
    if ((argument == "--leak-host-bytes" || argument == "--leak-gpu-bytes") && i + 1 < argc) {
      (argument == "--leak-host-bytes" ? options.leak_host_bytes : options.leak_gpu_bytes) =
          parse_count(argv[++i]);
    } else if (options.path.empty() && !argument.starts_with("-")) {
      options.path = argument;
    } else if (next < positional.size() && !argument.starts_with("-")) {
      *positional[next++] = parse_count(argv[i]);
    } else {
      throw InputError("unexpected argument '" + argument + "'");
    }
  }
  if (options.path.empty()) throw InputError("no program given");
  return options;
}

MemoryBytes sample_memory() {
  size_t free_bytes = 0;
  size_t total_bytes = 0;
  if (cudaMemGetInfo(&free_bytes, &total_bytes) != cudaSuccess) {
    throw InternalError("cudaMemGetInfo failed");
  }
  return {resident_host_bytes(), static_cast<int64_t>(total_bytes - free_bytes)};
}

std::string describe(const MemoryBytes& sample) {
  return fmt::format("host {} ({} B), GPU used {} ({} B)", tools::format_bytes(sample.host),
                     sample.host, tools::format_bytes(sample.gpu), sample.gpu);
}

// Repeats `step` `warmup` times, then `count` times with memory sampled before, at every tenth
// and after the last; prints the samples, the time and the growth; returns growth_failure's
// verdict.
std::string soak_phase(const std::string& unit, int64_t warmup, int64_t count,
                       const std::function<void()>& step) {
  if (count == 0) return "";
  for (int64_t i = 0; i < warmup; ++i) step();
  const MemoryBytes start = sample_memory();
  std::printf("%s (after %lld warm-up %s):\n  %10d  %s\n", unit.c_str(),
              static_cast<long long>(warmup), unit.c_str(), 0, describe(start).c_str());
  const int64_t every = std::max<int64_t>(1, count / kSamples);
  MemoryBytes end;
  const auto began = std::chrono::steady_clock::now();
  for (int64_t i = 1; i <= count; ++i) {
    step();
    if (i % every == 0 || i == count) {
      end = sample_memory();
      std::printf("  %10lld  %s\n", static_cast<long long>(i), describe(end).c_str());
      std::fflush(stdout);
    }
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
  const std::string span = fmt::format("{} {}", count, unit);
  std::printf(
      "%s in %.3f s (%.1f us each): host %s, GPU %s (each %s allowed)\n", span.c_str(), seconds,
      seconds * 1e6 / static_cast<double>(count), format_growth(end.host - start.host).c_str(),
      format_growth(end.gpu - start.gpu).c_str(), tools::format_bytes(kAllowed.host).c_str());
  return growth_failure(span, start, end, kAllowed);
}

std::vector<Tensor> zero_inputs(const Program& program) {
  std::vector<Tensor> inputs;
  for (const int input : program.inputs) inputs.emplace_back(program.buffers[input].type);
  return inputs;
}

bool same_outputs(const std::vector<Tensor>& a, const std::vector<Tensor>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (!a[i].same_contents(b[i])) return false;
  }
  return true;
}

int soak(const Options& options) {
  // What --leak-*-bytes leak: held to the end, never used.
  std::vector<std::unique_ptr<char[]>> leaked_host;
  std::vector<void*> leaked_gpu;
  std::string failures;
  {
    Session session = Session::load(options.path);
    const std::vector<Tensor> inputs = zero_inputs(session.program());
    std::printf("session_soak: %s on %s\n", options.path.c_str(),
                session.device_description().c_str());
    const std::vector<Tensor> first = session.run(inputs);
    std::vector<Tensor> last;
    failures += soak_phase("runs", kWarmupRuns, options.runs, [&] {
      last = session.run(inputs);
      if (options.leak_host_bytes > 0) {
        leaked_host.emplace_back(new char[options.leak_host_bytes]);
        std::memset(leaked_host.back().get(), 1, options.leak_host_bytes);
      }
    });
    if (!last.empty() && !same_outputs(first, last)) {
      failures += "the last run's outputs differ from the first run's\n";
    }
  }
  failures += soak_phase("load/unload cycles", kWarmupCycles, options.cycles, [&] {
    Session session = Session::load(options.path);
    session.run(zero_inputs(session.program()));
    if (options.leak_gpu_bytes > 0) {
      void* pointer = nullptr;
      if (cudaMalloc(&pointer, options.leak_gpu_bytes) != cudaSuccess) {
        throw InternalError("cudaMalloc for --leak-gpu-bytes failed");
      }
      leaked_gpu.push_back(pointer);
    }
  });
  for (void* pointer : leaked_gpu) cudaFree(pointer);
  if (!failures.empty()) {
    std::printf("session_soak: FAILED\n%s", failures.c_str());
    return 1;
  }
  std::printf("session_soak: ok, no growth past the allowances\n");
  return 0;
}

}  // namespace
}  // namespace kiln::test

int main(int argc, char** argv) {
  kiln::test::Options options;
  try {
    options = kiln::test::parse_options(argc, argv);
  } catch (const kiln::InputError& error) {
    std::fprintf(stderr,
                 "session_soak: error: %s\nusage: session_soak FILE.kiln [RUNS [CYCLES]] "
                 "[--leak-host-bytes N] [--leak-gpu-bytes N]\n",
                 error.what());
    return 2;
  }
  if (kiln::test::skip_without_cuda_device()) return kiln::test::kSkippedExitCode;
  try {
    return kiln::test::soak(options);
  } catch (const kiln::InputError& error) {
    std::fprintf(stderr, "session_soak: error: %s\n", error.what());
    return 2;
  } catch (const std::exception& error) {
    std::fprintf(stderr, "session_soak: internal error: %s\n", error.what());
    return 3;
  }
}
