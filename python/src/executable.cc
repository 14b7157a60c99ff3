// The Executable class of the extension module: save, signature, inspect, and runs on the
// Session (host arrays, device pointers, timing, timing on several devices at once). GPU work
// runs without the GIL.
#include "executable.h"

#include <pybind11/stl.h>

#include "ir/error.h"
#include "runtime/concurrent_timing.h"
#include "runtime/device_list.h"
#include "runtime/program_io.h"
#include "tensors.h"
#include "tools/inspect_report.h"

namespace kiln::python {

namespace py = pybind11;

void Executable::save(const std::string& path) const { write_program(program_, path); }

py::list Executable::signature(const std::vector<int>& buffers) const {
  py::list result;
  for (int index : buffers) {
    const ProgramBuffer& buffer = program_.buffers.at(index);
    result.append(py::make_tuple(buffer.name, py::tuple(py::cast(buffer.type.shape)),
                                 dtype_to_numpy_name(buffer.type.dtype)));
  }
  return result;
}

std::string Executable::inspect() const { return tools::inspect_report(program_); }

template <class Work>
auto Executable::with_session(Work work) {
  py::gil_scoped_release release;
  std::lock_guard<std::mutex> lock(*session_mutex_);
  if (!session_) session_ = std::make_unique<Session>(Session::load(program_));
  return work(*session_);
}

std::vector<Tensor> Executable::input_tensors(const py::list& inputs) const {
  std::vector<Tensor> tensors;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const std::string& name = program_.buffers.at(program_.inputs.at(i)).name;
    tensors.push_back(tensor_from_array(inputs[i].cast<py::array>(), "input '" + name + "'"));
  }
  return tensors;
}

py::list Executable::run(const py::list& inputs) {
  const std::vector<Tensor> tensors = input_tensors(inputs);
  for (int index : program_.outputs) {  // refused before running, not after
    const ProgramBuffer& buffer = program_.buffers.at(index);
    check_numpy_dtype(buffer.type.dtype, "output '" + buffer.name + "'");
  }
  const std::vector<Tensor> outputs =
      with_session([&tensors](Session& session) { return session.run(tensors); });
  py::list result;
  for (size_t i = 0; i < outputs.size(); ++i) {
    const std::string& name = program_.buffers.at(program_.outputs.at(i)).name;
    result.append(array_from_tensor(outputs[i], "output '" + name + "'"));
  }
  return result;
}

void Executable::run_device(const std::vector<uintptr_t>& inputs,
                            const std::vector<uintptr_t>& outputs,
                            std::optional<uintptr_t> stream) {
  std::vector<const void*> input_pointers;
  for (uintptr_t pointer : inputs) input_pointers.push_back(reinterpret_cast<const void*>(pointer));
  std::vector<void*> output_pointers;
  for (uintptr_t pointer : outputs) output_pointers.push_back(reinterpret_cast<void*>(pointer));
  with_session([&](Session& session) {
    if (stream) {
      session.run_device(input_pointers, output_pointers, reinterpret_cast<CUstream_st*>(*stream));
    } else {
      session.run_device(input_pointers, output_pointers);
    }
  });
}

std::vector<float> Executable::time(int iterations, int warmup) {
  if (iterations < 1 || warmup < 0) {
    throw InputError("bench: iterations must be at least 1 and warmup at least 0");
  }
  return with_session([&](Session& session) { return session.time(iterations, warmup); });
}

std::string Executable::device() {
  return with_session([](Session& session) { return session.device_description(); });
}

py::dict Executable::time_devices(const std::string& devices, const py::list& inputs,
                                  int iterations, int warmup) {
  if (iterations < 1 || warmup < 0) {
    throw InputError("bench: iterations must be at least 1 and warmup at least 0");
  }
  const std::vector<Tensor> tensors = input_tensors(inputs);
  std::vector<int> indices;
  std::vector<Session> sessions;
  ConcurrentTiming alone, together;
  {
    py::gil_scoped_release release;
    require_cuda_device();  // "no CUDA driver" / "no CUDA device" before any device is named
    try {
      indices = parse_device_list(devices, cuda_device_names());
    } catch (const InputError& error) {
      throw InputError(std::string("bench: devices: ") + error.what());
    }
    for (const int index : indices) {
      sessions.push_back(Session::load(program_, {.device = index}));
      if (!tensors.empty()) sessions.back().run(tensors);
    }
    std::vector<Session*> all;
    for (Session& session : sessions) all.push_back(&session);
    alone = time_concurrently({all[0]}, iterations, warmup);
    together = all.size() > 1 ? time_concurrently(all, iterations, warmup) : alone;
  }
  py::list per_device;
  for (size_t i = 0; i < sessions.size(); ++i) {
    per_device.append(py::make_tuple(indices[i], sessions[i].device_description(),
                                     py::cast(together.milliseconds[i])));
  }
  py::dict result;
  result["devices"] = per_device;
  result["one_device_wall_s"] = alone.wall_seconds;
  result["all_devices_wall_s"] = together.wall_seconds;
  return result;
}

void bind_executable(py::module_& module) {
  py::class_<Executable>(module, "Executable")
      .def("save", &Executable::save, py::arg("path"))
      .def_property_readonly("inputs",
                             [](const Executable& e) { return e.signature(e.program().inputs); })
      .def_property_readonly("outputs",
                             [](const Executable& e) { return e.signature(e.program().outputs); })
      .def_property_readonly("archs", [](const Executable& e) { return e.program().archs; })
      .def_property_readonly("name", [](const Executable& e) { return e.program().name; })
      .def_property_readonly("kernel_count",
                             [](const Executable& e) { return e.program().kernels.size(); })
      .def("inspect", &Executable::inspect)
      .def("run", &Executable::run, py::arg("inputs"))
      .def("run_device", &Executable::run_device, py::arg("inputs"), py::arg("outputs"),
           py::arg("stream") = py::none())
      .def("time", &Executable::time, py::arg("iterations"), py::arg("warmup"))
      .def("time_devices", &Executable::time_devices, py::arg("devices"), py::arg("inputs"),
           py::arg("iterations"), py::arg("warmup"))
      .def("device", &Executable::device);
}

}  // namespace kiln::python
