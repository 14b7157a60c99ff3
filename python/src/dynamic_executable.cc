// The DynamicExecutable class of the extension module (see the header).
#include "dynamic_executable.h"

#include <pybind11/stl.h>

#include "ir/error.h"
#include "tensors.h"
#include "tools/inspect_report.h"

namespace kiln::python {

namespace py = pybind11;

void DynamicExecutable::save(const std::string& path) const {
  write_dynamic_program(*program_, path);
}

std::string DynamicExecutable::inspect() const { return tools::dynamic_inspect_report(*program_); }

py::list DynamicExecutable::signature(bool inputs) const {
  const Program& largest = program_->variants.back().program;
  py::list result;
  for (int index : inputs ? largest.inputs : largest.outputs) {
    const ProgramBuffer& buffer = largest.buffers.at(index);
    result.append(py::make_tuple(buffer.name, py::tuple(py::cast(buffer.type.shape)),
                                 dtype_to_numpy_name(buffer.type.dtype)));
  }
  return result;
}

py::list DynamicExecutable::ranges() const {
  const Program& first = program_->variants.at(0).program;
  py::list result;
  for (const VaryingDim& dim : program_->dims) {
    result.append(py::make_tuple(first.buffers.at(first.inputs.at(dim.input)).name, dim.axis,
                                 dim.min, dim.max, program_->classes.at(dim.dim_class).padded));
  }
  return result;
}

py::list DynamicExecutable::variants() const {
  py::list result;
  for (const ProgramVariant& variant : program_->variants) {
    py::list shapes;
    for (const Shape& shape : variant.input_shapes) shapes.append(py::tuple(py::cast(shape)));
    result.append(shapes);
  }
  return result;
}

DynamicSession& DynamicExecutable::session() {
  if (!session_) {
    session_ = std::make_unique<DynamicSession>(DynamicSession::load(DynamicProgram(*program_)));
  }
  return *session_;
}

py::list DynamicExecutable::run(const py::list& inputs) {
  const Program& first = program_->variants.at(0).program;
  if (inputs.size() != first.inputs.size()) {
    throw InputError("expected " + std::to_string(first.inputs.size()) + " inputs, got " +
                     std::to_string(inputs.size()));
  }
  std::vector<Tensor> tensors;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const std::string& name = first.buffers.at(first.inputs.at(i)).name;
    tensors.push_back(tensor_from_array(inputs[i].cast<py::array>(), "input '" + name + "'"));
  }
  std::vector<Tensor> outputs;
  {
    py::gil_scoped_release release;
    std::lock_guard<std::mutex> lock(*session_mutex_);
    outputs = session().run(tensors);
  }
  py::list result;
  for (size_t i = 0; i < outputs.size(); ++i) {
    const std::string& name = first.buffers.at(first.outputs.at(i)).name;
    result.append(array_from_tensor(outputs[i], "output '" + name + "'"));
  }
  return result;
}

std::string DynamicExecutable::device() {
  py::gil_scoped_release release;
  std::lock_guard<std::mutex> lock(*session_mutex_);
  return session().variant_session(0).device_description();
}

void bind_dynamic_executable(py::module_& module) {
  py::class_<DynamicExecutable>(module, "DynamicExecutable")
      .def("save", &DynamicExecutable::save, py::arg("path"))
      .def_property_readonly("inputs", [](const DynamicExecutable& e) { return e.signature(true); })
      .def_property_readonly("outputs",
                             [](const DynamicExecutable& e) { return e.signature(false); })
      .def_property_readonly("ranges", &DynamicExecutable::ranges)
      .def_property_readonly("variants", &DynamicExecutable::variants)
      .def("inspect", &DynamicExecutable::inspect)
      .def("run", &DynamicExecutable::run, py::arg("inputs"))
      .def("device", &DynamicExecutable::device);
}

}  // namespace kiln::python
