// The GPU session: kiln's public C++ API for running a compiled program (a .kiln file) on a CUDA
// device.
//
//   load   checks for a device; picks each kernel's CUBIN or PTX for it (kernel_image.h) and
//          loads it, checking that it takes as many pointers as its steps pass; uploads the
//          weights once; allocates the arena. SessionOptions::device picks the GPU (default:
//          the calling thread's current device).
//   share  another session of the same program on the same device, reading the same weights
//          (no second copy): its own arena, stream, buffers and graph.
//   run    the first run launches the steps one by one, in order, on the session's stream,
//          checking each, then builds a CUDA graph of them: one kernel node per step, after the
//          steps it depends on (step_dependencies.h), so steps that do not depend on each other
//          run at once. Later runs replay that graph. The graph holds the input and output
//          pointers it was built with: run_device with other pointers builds it again (and
//          updates the graph in place when CUDA can).
//   time   replays the graph back to back and measures each replay with CUDA events.
//   library calls  a step whose tactic is "cuBLASLt" (program.h, ProgramLibraryGemm) is a
//          cuBLASLt matmul, planned at load (library_gemm_plan.h) and held in the graph as a child
//          graph; where cuBLASLt cannot run (not installed, no algorithm) its kernel runs instead,
//          and library_notes() says so.
//   profile_steps  captures the steps once more, in order, with a CUDA event between each two,
//          replays that graph and reports each step's median time (where the time goes, kernel
//          by kernel; steps do not overlap there, so the sum can exceed time()'s median).
//
//   kiln::Session session = kiln::Session::load("model.kiln", {.device = 1});
//   std::vector<kiln::Tensor> outputs = session.run({input});
//   session.run_device({x}, {y}, stream);  // enqueued on the caller's cudaStream_t
//
// Devices: every CUDA call a session makes happens on its device; it sets the calling thread's
// current device for the call and sets the previous one back before returning.
//
// Streams: the session builds its graph without a stream, and captures the profile's on a
// private stream that never runs work, so capture never touches a stream of the caller's. run,
// run_device without a stream, time and profile_steps run on the session's own stream and return
// when done. run_device with a stream
// launches the graph on that stream, after the work already enqueued there, and returns without
// waiting. One session's runs never overlap on the GPU (they share the arena): each waits for
// the session's previous run, on whichever stream that was.
//
// Threads: separate sessions (on one device or several, sharing weights or not) may be used from
// separate threads at once. One session may also be called from several threads: its calls are
// serialized by a mutex in the session, so they are correct but do not run concurrently; for
// concurrency give each thread a session (share() costs no second copy of the weights).
// Destroying or moving a session while another thread is calling it is the caller's error.
//
// Errors: InputError for a bad program, bad inputs (naming the input) or a device index the
// machine does not have, or, after run and the waiting run_device, for an index input out of
// range (a gather's or scatter's; the kernel clamps it, the run's outputs are not valid; the
// run_device that returns at once does not check, and sessions sharing weights share the
// check); UnsupportedError "no CUDA device" when there is none, InternalError for
// CUDA failing.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ir/tensor.h"
#include "runtime/program.h"

struct CUstream_st;  // what a cudaStream_t points to: session.h needs no CUDA header

namespace kiln {

// Throws UnsupportedError unless a CUDA device can be used, saying which of these it is: "no CUDA
// device: no CUDA driver (libcuda.so.1 not found)", "no CUDA device: the CUDA driver supports
// CUDA X.Y, older than kiln's runtime A.B", "no CUDA device (the driver reports none)", or "no
// CUDA device (CUDA's reason)".
void require_cuda_device();

// The alignment run_device needs of every device pointer: kernels move 16 bytes at a time.
inline constexpr uintptr_t kDevicePointerAlignment = 16;

struct SessionOptions {
  // The CUDA device to load onto, by CUDA's index (after CUDA_VISIBLE_DEVICES); -1: the calling
  // thread's current device. An index the machine does not have is an InputError naming the
  // devices it has.
  int device = -1;
  // The CUDA graph chains every step after the one before (as the steps are listed) instead of
  // letting steps with no dependency between them run at once: what concurrency gains, measured
  // (kiln bench --steps-in-order).
  bool steps_in_order = false;
  // Early launch (programmatic dependent launch, sm_90+): in the CUDA graph a kernel is
  // launched as soon as every block of the kernels it depends on has finished, while their
  // completion is still being flushed, and waits for it inside (kiln_wait_for_prior_grids), so
  // its launch latency hides behind theirs. On by default; off, each kernel is launched after
  // its dependencies complete (kiln bench --no-early-launch measures the difference). Kernels
  // compiled without the wait, or for an arch before sm_90, always are.
  bool early_launch = true;
};

class Session {
 public:
  static Session load(const std::string& path, const SessionOptions& options = {});
  static Session load(Program program, const SessionOptions& options = {});

  Session(Session&&) noexcept;
  Session& operator=(Session&&) noexcept;
  ~Session();

  // A new session of this program on this device that reads this session's weights on the GPU
  // (no second copy) and has its own arena, stream, input and output buffers and graph. Either
  // session may be destroyed first: the weights go with the last of them. Its first run checks
  // each step, as any session's first run does. Without the free GPU memory for its arena and
  // buffers: InputError naming the bytes (device_memory_fit.h).
  Session share() const;

  const Program& program() const;
  // The CUDA device index the session runs on.
  int device() const;
  // "device 0: NVIDIA H100 80GB HBM3 (sm_90)".
  std::string device_description() const;

  // Host tensors, one per program input in order, of exactly the input's dtype and shape; returns
  // the outputs in order.
  std::vector<Tensor> run(const std::vector<Tensor>& inputs);
  // Device pointers, one per input and one per output in order, each to a buffer of its
  // signature's size, aligned to kDevicePointerAlignment (as cudaMalloc's are), on the session's
  // device; an output may not overlap another output or an input (InputError: independent steps
  // run at once, so nothing is computed in place). Returns when the outputs are written.
  void run_device(const std::vector<const void*>& inputs, const std::vector<void*>& outputs);
  // The same run ordered on the caller's `stream` (a cudaStream_t of the session's device; null is
  // the legacy default stream): it reads the inputs after the work enqueued on `stream` before the
  // call, and work enqueued there after the call sees the outputs. It returns without waiting for
  // the GPU (the caller synchronizes the stream and keeps the buffers valid until then), except
  // on the session's first run, which launches and checks the steps one by one on the session's
  // stream (after the work enqueued on `stream`) before building the graph. Other pointers than
  // the last run's build it again on the host, without waiting for the GPU. A stream being
  // captured into a CUDA graph is refused (InputError).
  void run_device(const std::vector<const void*>& inputs, const std::vector<void*>& outputs,
                  CUstream_st* stream);
  // Milliseconds of each of `iterations` graph replays after `warmup` unmeasured ones, on the
  // last run's inputs (zeros before the first run). With `copies` above 1, each replay is of one
  // graph holding the steps that many times over (each copy after the one before) and its time
  // is divided by `copies`: a run's time without a graph launch of its own, as a library call is
  // timed in a CUDA graph of many calls (bench/contraction_shapes.py).
  std::vector<float> time(int iterations, int warmup, int copies = 1);
  // Each step's median milliseconds over `iterations` replays (after `warmup`) of a graph of the
  // steps in order, with an event recorded before the first and after each, on the last run's
  // inputs. The events add a little to each step; the sum is close to time()'s median for a
  // program whose steps all depend on each other, and above it where independent steps overlap
  // in time()'s replays.
  std::vector<float> profile_steps(int iterations, int warmup);
  // Per step, for a step with a library call (the "cuBLASLt" tactic): what computes it on this
  // device ("cuBLASLt 130100, algorithm 21 (...)"), or why its kernel stands in (the reason alone:
  // "cuBLASLt not found (...)"); "" for the other steps.
  const std::vector<std::string>& library_notes() const;
  // Whether step `step` has a library call that runs its kernel instead (library_notes says why).
  bool library_call_stands_in(size_t step) const;

 private:
  friend class DynamicSession;
  // A session of one variant of a dynamic program (dynamic_session.h): reading the weights of
  // `weights_from` (loaded on the same device, its weights the same bytes) when given, and
  // running in `arena`, allocated here with `arena_bytes` when null. Sessions sharing an arena
  // must never run at once: DynamicSession runs one at a time and waits for each.
  static Session load_variant(Program program, const SessionOptions& options,
                              const Session* weights_from, std::shared_ptr<void>& arena,
                              int64_t arena_bytes);

  struct State;
  explicit Session(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

}  // namespace kiln
