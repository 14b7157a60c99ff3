// A session for a dynamic program (dynamic_program.h): runs inputs of any shape in the compiled
// ranges on the GPU. Each run takes the variant choose_variant picks; a padded class's inputs are
// padded with zeros to the variant's size on the host and its outputs cut back to the real rows.
// A variant's Session (session.h) is loaded on its first use and kept. Variants whose weights are
// the same bytes read one copy on the GPU, uploaded by the first of them loaded (kiln compile
// gives all the variants one blob: kiln/weight_sharing.h); every variant runs in one arena, sized
// for the largest variant's plan (runs never overlap: run() serializes them and waits for each).
//
//   kiln::DynamicSession session = kiln::DynamicSession::load("model.kiln");
//   std::vector<kiln::Tensor> outputs = session.run({input});  // any batch in the range
//
// Errors: as Session's; an input shape outside the ranges, or dims of one class disagreeing,
// is an InputError naming the input and dim.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "runtime/dynamic_program.h"
#include "runtime/session.h"

namespace kiln {

class DynamicSession {
 public:
  static DynamicSession load(const std::string& path, const SessionOptions& options = {});
  static DynamicSession load(DynamicProgram program, const SessionOptions& options = {});

  const DynamicProgram& program() const { return *program_; }
  // Host tensors, one per input in order, of the inputs' dtypes and of shapes in range; returns
  // the outputs at the run's shapes.
  std::vector<Tensor> run(const std::vector<Tensor>& inputs);
  // The session of variant `index`, loaded on first use (for timing one variant). It shares the
  // arena with the others: do not use it while run() is running on another thread.
  Session& variant_session(size_t index);

 private:
  DynamicSession(std::unique_ptr<DynamicProgram> program, const SessionOptions& options);
  Session& loaded_variant(size_t index);  // with the mutex held
  std::unique_ptr<DynamicProgram> program_;
  SessionOptions options_;
  std::unique_ptr<std::mutex> mutex_;
  std::vector<size_t> weight_set_;  // per variant: the first variant with the same weights
  int64_t arena_bytes_ = 0;         // the largest variant's
  std::map<size_t, Session> sessions_;
  // Last, so it goes first: the last session holding the arena frees it on its device.
  std::shared_ptr<void> arena_;
};

}  // namespace kiln
