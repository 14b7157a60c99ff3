// Example: serving a compiled kiln program from several threads on every GPU through the public
// API (runtime/session.h). Loads PROGRAM.kiln once per device, gives each of THREADS worker
// threads per device a session of its own made by share() (the weights stay on each GPU once),
// and lets every worker run the program RUNS times on its own CUDA stream with run_device:
// inputs copied in, the run and the outputs copied out all enqueued on the stream, one
// synchronization per run. Prints each device's runs per second.
//
//   usage: serve_threads PROGRAM.kiln [THREADS] [RUNS]
//
// Build: link kiln_runtime and the CUDA runtime (examples/api/CMakeLists.txt). Exit codes as
// kiln's: 0 success, 2 bad input or no CUDA device, 3 internal error.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "ir/error.h"
#include "runtime/session.h"

namespace {

void check(cudaError_t status, const char* what) {
  if (status != cudaSuccess) {
    throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(status));
  }
}

// One worker: its own stream and device buffers, `runs` runs of `session` on zeros.
void serve(kiln::Session& session, int runs) {
  check(cudaSetDevice(session.device()), "cudaSetDevice");
  cudaStream_t stream = nullptr;
  check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate");
  const kiln::Program& program = session.program();
  std::vector<void*> buffers;
  std::vector<const void*> inputs;
  std::vector<void*> outputs;
  std::vector<kiln::Tensor> host;
  for (const std::vector<int>* signature : {&program.inputs, &program.outputs}) {
    for (const int index : *signature) {
      host.emplace_back(program.buffers[index].type);
      buffers.push_back(nullptr);
      check(cudaMalloc(&buffers.back(), std::max<size_t>(host.back().num_bytes(), 1)),
            "cudaMalloc");
      if (signature == &program.inputs) {
        inputs.push_back(buffers.back());
      } else {
        outputs.push_back(buffers.back());
      }
    }
  }
  for (int run = 0; run < runs; ++run) {
    for (size_t i = 0; i < inputs.size(); ++i) {
      check(cudaMemcpyAsync(buffers[i], host[i].bytes(), host[i].num_bytes(),
                            cudaMemcpyHostToDevice, stream),
            "copying an input");
    }
    session.run_device(inputs, outputs, stream);
    for (size_t i = inputs.size(); i < buffers.size(); ++i) {
      check(cudaMemcpyAsync(host[i].bytes(), buffers[i], host[i].num_bytes(),
                            cudaMemcpyDeviceToHost, stream),
            "copying an output");
    }
    check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
  }
  for (void* buffer : buffers) cudaFree(buffer);
  cudaStreamDestroy(stream);
}

int serve_all(const std::string& path, int threads, int runs) {
  kiln::require_cuda_device();
  int devices = 0;
  check(cudaGetDeviceCount(&devices), "cudaGetDeviceCount");
  std::vector<kiln::Session> sessions;  // threads per device, the first of each loaded
  for (int device = 0; device < devices; ++device) {
    sessions.push_back(kiln::Session::load(path, {.device = device}));
    for (int t = 1; t < threads; ++t) sessions.push_back(sessions[device * threads].share());
  }
  const auto start = std::chrono::steady_clock::now();
  std::vector<std::thread> workers;
  std::vector<std::string> errors(sessions.size());
  for (size_t w = 0; w < sessions.size(); ++w) {
    workers.emplace_back([&, w] {
      try {
        serve(sessions[w], runs);
      } catch (const std::exception& error) {
        errors[w] = error.what();
      }
    });
  }
  for (std::thread& worker : workers) worker.join();
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  for (const std::string& error : errors) {
    if (!error.empty()) throw std::runtime_error(error);
  }
  for (int device = 0; device < devices; ++device) {
    std::printf("%s: %d threads, %.0f runs/s\n",
                sessions[device * threads].device_description().c_str(), threads,
                threads * runs / seconds);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || argc > 4 || std::strcmp(argv[1], "--help") == 0) {
    std::printf(
        "usage: serve_threads PROGRAM.kiln [THREADS] [RUNS]\n"
        "Runs a compiled kiln program from THREADS (default 4) threads per GPU, each with a\n"
        "session of its own sharing the GPU's weights and a CUDA stream of its own, RUNS\n"
        "(default 1000) times each, and prints each GPU's runs per second.\n");
    return argc == 2 ? 0 : 2;
  }
  const int threads = argc > 2 ? std::atoi(argv[2]) : 4;
  const int runs = argc > 3 ? std::atoi(argv[3]) : 1000;
  if (threads < 1 || runs < 1) {
    std::fprintf(stderr, "serve_threads: THREADS and RUNS must be positive numbers\n");
    return 2;
  }
  try {
    return serve_all(argv[1], threads, runs);
  } catch (const kiln::InputError& error) {
    std::fprintf(stderr, "serve_threads: %s\n", error.what());
    return 2;
  } catch (const std::exception& error) {
    std::fprintf(stderr, "serve_threads: internal error: %s\n", error.what());
    return 3;
  }
}
