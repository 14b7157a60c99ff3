// The GPU session: kiln's public C++ API for running a compiled program (a .kiln file) on the
// current CUDA device.
//
//   load   checks for a device; picks each kernel's CUBIN or PTX for it (kernel_image.h) and
//          loads it, checking that it takes as many pointers as its steps pass; uploads the
//          weights once; allocates the arena.
//   run    the first run launches the steps one by one on the session's stream, checking each,
//          then captures them into a CUDA graph; later runs replay that graph. The graph holds
//          the input and output pointers it was captured with: run_device with other pointers
//          captures again (and updates the graph in place when CUDA can).
//   time   replays the graph back to back and measures each replay with CUDA events.
//   profile_steps  captures the steps once more with a CUDA event between each two, replays that
//          graph and reports each step's median time (where the time goes, kernel by kernel).
//
//   kiln::Session session = kiln::Session::load("model.kiln");
//   std::vector<kiln::Tensor> outputs = session.run({input});
//
// Errors: InputError for a bad program or bad inputs (naming the input), UnsupportedError
// "no CUDA device" when there is none, InternalError for CUDA failing.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ir/tensor.h"
#include "runtime/program.h"

namespace kiln {

// Throws UnsupportedError unless a CUDA device can be used, saying which of these it is: "no CUDA
// device: no CUDA driver (libcuda.so.1 not found)", "no CUDA device: the CUDA driver supports
// CUDA X.Y, older than kiln's runtime A.B", "no CUDA device (the driver reports none)", or "no
// CUDA device (CUDA's reason)".
void require_cuda_device();

// The alignment run_device needs of every device pointer: kernels move 16 bytes at a time.
inline constexpr uintptr_t kDevicePointerAlignment = 16;

class Session {
 public:
  static Session load(const std::string& path);
  static Session load(Program program);

  Session(Session&&) noexcept;
  Session& operator=(Session&&) noexcept;
  ~Session();

  const Program& program() const;
  // "NVIDIA H100 80GB HBM3 (sm_90)".
  std::string device_description() const;

  // Host tensors, one per program input in order, of exactly the input's dtype and shape; returns
  // the outputs in order.
  std::vector<Tensor> run(const std::vector<Tensor>& inputs);
  // Device pointers, one per input and one per output in order, each to a buffer of its
  // signature's size, aligned to kDevicePointerAlignment (as cudaMalloc's are). Returns when the
  // outputs are written.
  void run_device(const std::vector<const void*>& inputs, const std::vector<void*>& outputs);
  // Milliseconds of each of `iterations` graph replays after `warmup` unmeasured ones, on the
  // last run's inputs (zeros before the first run).
  std::vector<float> time(int iterations, int warmup);
  // Each step's median milliseconds over `iterations` replays (after `warmup`) of a graph of the
  // steps with an event recorded before the first and after each, on the last run's inputs. The
  // events add a little to each step; the sum is close to, not equal to, time()'s median.
  std::vector<float> profile_steps(int iterations, int warmup);

 private:
  struct State;
  explicit Session(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

}  // namespace kiln
