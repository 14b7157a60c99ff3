// A compiled program as Python holds it: the Program (compiled or read from a .kiln file) and,
// from the first run on, the GPU Session that runs it. Everything but running works without a
// GPU; running without one raises kiln.UnsupportedError "no CUDA device ...". GPU work runs
// without the GIL, one call at a time (a Session is not for concurrent use).
#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <mutex>
#include <string>
#include <vector>

#include "runtime/program.h"
#include "runtime/session.h"

namespace kiln::python {

class Executable {
 public:
  explicit Executable(Program program)
      : program_(std::move(program)), session_mutex_(std::make_unique<std::mutex>()) {}

  const Program& program() const { return program_; }
  void save(const std::string& path) const;
  // (name, shape, numpy dtype name) per input or output, in order.
  pybind11::list signature(const std::vector<int>& buffers) const;
  // The text `kiln inspect` prints.
  std::string inspect() const;

  // Host arrays in, host arrays out (copied), in the program's order.
  pybind11::list run(const pybind11::list& inputs);
  // Device pointers (ints), one per input and output; with `stream` (a cudaStream_t's value, 0 the legacy default
  // stream) enqueued on it and returning at once, without: on the session's stream, waited for.
  void run_device(const std::vector<uintptr_t>& inputs, const std::vector<uintptr_t>& outputs,
                  std::optional<uintptr_t> stream);
  // Milliseconds of each of `iterations` CUDA-graph replays after `warmup` (Session::time).
  std::vector<float> time(int iterations, int warmup);
  // "NVIDIA H100 80GB HBM3 (sm_90)"; loads the session.
  std::string device();
  // The program loaded on each device `devices` lists ("all", "0,1"), a Session each (run once on
  // `inputs` when given), timed alone on the first device, then on all at once, one host thread
  // each (runtime/concurrent_timing.h): {"devices": [(index, description, [ms...])...],
  // "one_device_wall_s", "all_devices_wall_s"}.
  pybind11::dict time_devices(const std::string& devices, const pybind11::list& inputs,
                              int iterations, int warmup);

 private:
  // The inputs as tensors, each checked against the program's input (named in errors).
  std::vector<Tensor> input_tensors(const pybind11::list& inputs) const;
  // Runs `work` on the session (loaded on first use) without the GIL, holding session_mutex_.
  template <class Work>
  auto with_session(Work work);

  Program program_;
  std::unique_ptr<std::mutex> session_mutex_;  // a pointer: Executable moves
  std::unique_ptr<Session> session_;
};

void bind_executable(pybind11::module_& module);

}  // namespace kiln::python
