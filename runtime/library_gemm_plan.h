// cuBLASLt for the steps whose tactic is "cuBLASLt" (runtime/program.h, ProgramLibraryGemm),
// opened on demand with dlopen like NVRTC: kiln links no CUDA library but the static runtime, so
// it starts without cuBLASLt, and a step runs its own kernel instead where cuBLASLt cannot run.
//
//   the library  libcublasLt.so.13 ($KILN_CUBLASLT, else $CUDA_HOME/lib64, /usr/local/cuda/lib64,
//                the loader's path), of the major version kiln was built against
//   a plan       one step's call on one device: the operation and layout descriptors and the
//                algorithm cuBLASLt's heuristic ranks first for them, within the step's
//                workspace, made when the program is loaded (loaded_program.h)
//   a call       enqueued on a stream, directly or under stream capture (the session's CUDA
//                graph holds it as a child graph)
#pragma once

#include <cuda_runtime_api.h>

#include <memory>
#include <string>

#include "ir/dtype.h"
#include "runtime/program.h"

namespace kiln {

// The device pointers of one call's operands (null where the call has none).
struct LibraryGemmPointers {
  const void* a = nullptr;
  const void* b = nullptr;
  const void* c = nullptr;
  const void* bias = nullptr;
  void* d = nullptr;
  void* workspace = nullptr;
};

class LibraryGemmPlan {
 public:
  // The plan of `call` on the current device (operands of `type`, the bias of `bias_type`), or
  // null with `why` saying why there is none: cuBLASLt not found (and where it was looked for),
  // of another major version, or without an algorithm for this call on this GPU.
  static std::unique_ptr<LibraryGemmPlan> create(const ProgramLibraryGemm& call, DType type,
                                                 DType bias_type, std::string& why);
  ~LibraryGemmPlan();
  LibraryGemmPlan(const LibraryGemmPlan&) = delete;
  LibraryGemmPlan& operator=(const LibraryGemmPlan&) = delete;

  // Enqueues the call on `stream`; InternalError naming cuBLASLt's status if it refuses. Safe to
  // call from several threads (sessions sharing a loaded program): calls are serialized.
  void enqueue(const LibraryGemmPointers& pointers, cudaStream_t stream) const;

  // "cuBLASLt 13.1.0, algorithm 21 (tile 7, 3 stages)": what runs, for kiln bench --profile.
  const std::string& description() const { return description_; }

 private:
  struct State;
  explicit LibraryGemmPlan(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
  std::string description_;
};

}  // namespace kiln
