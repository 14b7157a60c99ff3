// Loading a model for the Python API: a file through kiln::load_model, a ModelProto's bytes
// through the ONNX importer, without the GIL.
#include "models.h"

#include <vector>

#include "frontend/onnx_importer.h"
#include "kiln/compiler.h"

namespace kiln::python {

namespace py = pybind11;

ModelSource model_source(const py::object& model, const std::string& base_dir) {
  ModelSource source;
  source.base_dir = base_dir;
  if (py::isinstance<py::bytes>(model)) {
    source.onnx_bytes = model.cast<std::string>();
    source.from_bytes = true;
  } else {
    source.path = model.cast<std::string>();
  }
  return source;
}

std::unique_ptr<Graph> load_graph(const ModelSource& source,
                                  const std::map<std::string, Shape>& input_shapes) {
  std::vector<std::string> notes;
  auto note = [&notes](const std::string& text) { notes.push_back(text); };
  std::unique_ptr<Graph> graph;
  {
    py::gil_scoped_release release;
    if (source.from_bytes) {
      onnx_import::ImportOptions options;
      options.input_shapes = input_shapes;
      options.on_defaulted_dims = note;
      graph = onnx_import::import_onnx_bytes(source.onnx_bytes, source.base_dir, options);
    } else {
      graph = load_model(source.path, input_shapes, note);
    }
  }
  py::object warn = py::module_::import("warnings").attr("warn");
  for (const std::string& text : notes) warn(text, py::module_::import("builtins").attr("UserWarning"), 2);
  return graph;
}

}  // namespace kiln::python
