// A dynamic program (compiled for ranges of input shapes, runtime/dynamic_program.h) as Python
// holds it: the program and, from the first run on, the DynamicSession that runs it. Saving,
// the signature, the ranges and inspect work without a GPU; a run takes host arrays of any
// shape in range, without the GIL, one call at a time.
#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <memory>
#include <mutex>
#include <string>

#include "runtime/dynamic_program.h"
#include "runtime/dynamic_session.h"

namespace kiln::python {

class DynamicExecutable {
 public:
  explicit DynamicExecutable(DynamicProgram program)
      : program_(std::make_shared<DynamicProgram>(std::move(program))),
        session_mutex_(std::make_unique<std::mutex>()) {}

  const DynamicProgram& program() const { return *program_; }
  void save(const std::string& path) const;
  std::string inspect() const;
  // (name, shape of the largest variant, numpy dtype name) per input or output, in order.
  pybind11::list signature(bool inputs) const;
  // (input name, axis, min, max, padded) per varying dim.
  pybind11::list ranges() const;
  // Each variant's input shapes: [[shape per input], ...].
  pybind11::list variants() const;
  // Host arrays of any shape in range; the outputs at the run's shapes.
  pybind11::list run(const pybind11::list& inputs);
  // "NVIDIA H100 80GB HBM3 (sm_90)" of the device the variants run on.
  std::string device();

 private:
  DynamicSession& session();  // loaded on first use; call without the GIL, holding the mutex

  std::shared_ptr<DynamicProgram> program_;
  std::unique_ptr<std::mutex> session_mutex_;  // a pointer: DynamicExecutable moves
  std::unique_ptr<DynamicSession> session_;
};

void bind_dynamic_executable(pybind11::module_& module);

}  // namespace kiln::python
