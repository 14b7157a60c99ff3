// A model as the Python API takes it: a path (.onnx or .kir) or the bytes of a serialized ONNX
// ModelProto (kiln/_model.py turns an onnx.ModelProto into those), loaded into a Graph.
// Symbolic input dimensions that input_shapes leaves open are bound to 1, each with a Python
// UserWarning saying so (the note the kiln command prints).
#pragma once

#include <pybind11/pybind11.h>

#include <map>
#include <memory>
#include <string>

#include "ir/graph.h"

namespace kiln::python {

struct ModelSource {
  std::string path;         // set for a file
  std::string onnx_bytes;   // set for a ModelProto
  std::string base_dir;     // where a ModelProto's external data files are
  bool from_bytes = false;
};

// `model` is a str (a path) or bytes (a serialized ModelProto).
ModelSource model_source(const pybind11::object& model, const std::string& base_dir);

// Loads without the GIL; warns (with the GIL) for each defaulted dimension afterwards.
std::unique_ptr<Graph> load_graph(const ModelSource& source,
                                  const std::map<std::string, Shape>& input_shapes);

}  // namespace kiln::python
