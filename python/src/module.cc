// kiln._kiln, the extension module under the kiln package (python/kiln/): compile,
// compile_dynamic, load, dump_ir, run_reference and the Executable and DynamicExecutable classes.
// The Python layer (kiln/__init__.py) turns friendly arguments (ModelProtos, arch strings, dicts of
// arrays, device tensors) into these.
#include <pybind11/functional.h>
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <exception>
#include <mutex>
#include <optional>
#include <set>

#include "dynamic_executable.h"
#include "errors.h"
#include "executable.h"
#include "frontend/onnx_importer.h"
#include "ir/error.h"
#include "kiln/compiler.h"
#include "kiln/dynamic_compile.h"
#include "kiln/ir_dump.h"
#include "models.h"
#include "reference/reference_interpreter.h"
#include "runtime/dynamic_program.h"
#include "runtime/program_io.h"
#include "runtime/session.h"
#include "tensors.h"

namespace kiln::python {
namespace {

namespace py = pybind11;

using InputShapes = std::map<std::string, Shape>;

// The pipeline's options from kiln/_model.py's pipeline_argument: {"precision": str,
// "io_precision": str or None, "keep_fp32": [op], "fusion": bool, "disabled_passes": [pass],
// "concat_views": bool (a compile option, read by compile_options)}.
std::set<std::string> name_set(const py::handle& names) {
  const auto list = names.cast<std::vector<std::string>>();
  return {list.begin(), list.end()};
}

PipelineOptions pipeline_options(const py::dict& pipeline) {
  PipelineOptions options;
  options.precision = passes::parse_precision(pipeline["precision"].cast<std::string>());
  const auto io_precision = pipeline["io_precision"].cast<std::optional<std::string>>();
  if (io_precision) options.io_dtype = passes::parse_io_precision(*io_precision);
  options.keep_fp32 = name_set(pipeline["keep_fp32"]);
  options.fusion = pipeline["fusion"].cast<bool>();
  options.disabled_passes = name_set(pipeline["disabled_passes"]);
  check_pipeline_options(options);
  return options;
}

CompileOptions compile_options(const std::vector<std::string>& archs, const py::dict& pipeline,
                               const std::string& cache_dir, int threads,
                               std::optional<bool> autotune) {
  CompileOptions options;
  options.archs = archs;
  options.pipeline = pipeline_options(pipeline);
  options.concat_views = pipeline["concat_views"].cast<bool>();
  options.cache_dir = cache_dir;
  options.threads = threads;
  options.autotune = autotune;
  return options;
}

// Calls the Python progress callback from NVRTC's worker threads (one at a time, with the GIL);
// the first exception it raises stops reporting and is raised again once compile returns.
class ProgressRelay {
 public:
  explicit ProgressRelay(py::object callback) : callback_(std::move(callback)) {}
  void operator()(size_t done, size_t total) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (error_) return;
    py::gil_scoped_acquire acquire;
    try {
      callback_(done, total);
    } catch (py::error_already_set&) {
      error_ = std::current_exception();
    }
  }
  void rethrow() {
    if (error_) std::rethrow_exception(error_);
  }

 private:
  py::object callback_;
  std::mutex mutex_;
  std::exception_ptr error_;
};

Executable compile_model(const py::object& model, const std::string& base_dir,
                         const std::vector<std::string>& archs, const py::dict& pipeline,
                         const InputShapes& input_shapes, const std::string& cache_dir,
                         int threads, const py::object& progress,
                         std::optional<bool> autotune) {
  CompileOptions options = compile_options(archs, pipeline, cache_dir, threads, autotune);
  auto relay = std::make_shared<ProgressRelay>(progress);
  if (!progress.is_none()) {
    options.on_progress = [relay](size_t done, size_t total) { (*relay)(done, total); };
  }
  std::unique_ptr<Graph> graph = load_graph(model_source(model, base_dir), input_shapes);
  std::optional<CompiledModel> compiled;
  {
    py::gil_scoped_release release;
    compiled.emplace(compile(*graph, options));
  }
  relay->rethrow();
  return Executable(std::move(compiled->program));
}

// Per input, a (min, max) per dim (kiln/_model.py's ranges_argument).
using Ranges = std::map<std::string, std::vector<std::pair<int64_t, int64_t>>>;

// A dynamic program (kiln/dynamic_compile.h): one variant per size the ranges need.
DynamicExecutable compile_dynamic_model(const py::object& model, const std::string& base_dir,
                                        const std::vector<std::string>& archs,
                                        const py::dict& pipeline, const Ranges& ranges,
                                        const InputShapes& opt_shapes, const std::string& cache_dir,
                                        int threads, std::optional<bool> autotune) {
  CompileOptions options = compile_options(archs, pipeline, cache_dir, threads, autotune);
  InputRanges input_ranges;
  for (const auto& [name, dims] : ranges) {
    for (const auto& [min, max] : dims) input_ranges[name].push_back({min, max});
  }
  const ModelSource source = model_source(model, base_dir);
  std::set<std::string> notes;  // each variant's import repeats them
  const auto note = [&notes](const std::string& text) { notes.insert(text); };
  const ModelLoader load =
      source.from_bytes
          ? ModelLoader([&](const InputShapes& shapes,
                            std::map<std::string, std::vector<std::string>>& dim_params) {
              onnx_import::ImportOptions import_options;
              import_options.input_shapes = shapes;
              import_options.on_defaulted_dims = note;
              import_options.symbolic_dims = &dim_params;
              return onnx_import::import_onnx_bytes(source.onnx_bytes, source.base_dir,
                                                    import_options);
            })
          : onnx_file_loader(source.path, note);
  std::optional<CompiledDynamicModel> compiled;
  {
    py::gil_scoped_release release;
    compiled.emplace(compile_dynamic(load, options, input_ranges, opt_shapes));
  }
  py::object warn = py::module_::import("warnings").attr("warn");
  for (const std::string& text : notes) {
    warn(text, py::module_::import("builtins").attr("UserWarning"), 2);
  }
  return DynamicExecutable(std::move(compiled->program));
}

// An Executable, or a DynamicExecutable for a dynamic .kiln file.
py::object load_executable(const std::string& path) {
  if (is_dynamic_program_file(path)) {
    std::optional<DynamicProgram> program;
    {
      py::gil_scoped_release release;
      program.emplace(read_dynamic_program(path));
    }
    return py::cast(DynamicExecutable(std::move(*program)));
  }
  std::optional<Program> program;
  {
    py::gil_scoped_release release;
    program.emplace(read_program(path));
  }
  return py::cast(Executable(std::move(*program)));
}

std::string dump_ir(const py::object& model, const std::string& base_dir,
                    const std::string& stage, const std::string& format,
                    const py::dict& pipeline, const InputShapes& input_shapes) {
  const Stage parsed_stage = passes::parse_stage(stage);
  const DumpFormat parsed_format = parse_dump_format(format);
  const PipelineOptions options = pipeline_options(pipeline);
  std::unique_ptr<Graph> graph = load_graph(model_source(model, base_dir), input_shapes);
  py::gil_scoped_release release;
  if (parsed_stage != Stage::kImported) optimize(*graph, parsed_stage, options);
  return dump_graph(*graph, parsed_format);
}

// Inputs by name; the arrays' shapes bind symbolic input dimensions.
py::dict reference_run(const py::object& model, const std::string& base_dir,
                       const py::dict& inputs, const std::string& stage,
                       const py::dict& pipeline) {
  InputShapes shapes;
  std::map<std::string, py::array> arrays;
  for (auto [key, value] : inputs) {
    const std::string name = key.cast<std::string>();
    arrays[name] = py::array::ensure(value);
    if (!arrays[name]) throw InputError("run_reference: input '" + name + "' is not an array");
    shapes[name] = Shape(arrays[name].shape(), arrays[name].shape() + arrays[name].ndim());
  }
  const Stage parsed_stage = passes::parse_stage(stage);
  const PipelineOptions options = pipeline_options(pipeline);
  std::unique_ptr<Graph> graph = load_graph(model_source(model, base_dir), shapes);
  std::vector<Tensor> tensors;
  for (const Value* input : graph->inputs()) {
    auto found = arrays.find(input->name());
    if (found == arrays.end()) {
      throw InputError("run_reference: no array for the model's input '" + input->name() + "'");
    }
    tensors.push_back(tensor_from_array(found->second, "input '" + input->name() + "'"));
    arrays.erase(found);
  }
  if (!arrays.empty()) {
    throw InputError("run_reference: the model has no input '" + arrays.begin()->first + "'");
  }
  std::vector<Tensor> outputs;
  {
    py::gil_scoped_release release;
    if (parsed_stage != Stage::kImported) optimize(*graph, parsed_stage, options);
    outputs = run_reference(*graph, tensors);
  }
  py::dict result;
  for (size_t i = 0; i < outputs.size(); ++i) {
    const std::string& name = graph->outputs().at(i)->name();
    result[py::str(name)] = array_from_tensor(outputs[i], "output '" + name + "'");
  }
  return result;
}

// None when a CUDA device can be used, else the reason ("no CUDA device: ...").
std::optional<std::string> cuda_device_error() {
  try {
    require_cuda_device();
    return std::nullopt;
  } catch (const UnsupportedError& error) {
    return std::string(error.what());
  }
}

}  // namespace
}  // namespace kiln::python

PYBIND11_MODULE(_kiln, module) {
  namespace py = pybind11;
  using namespace kiln::python;
  module.doc() = "kiln's C++ API (kiln/kiln.h); use it through the kiln package";
  module.attr("__version__") = KILN_VERSION;
  register_error_translator(module);
  bind_executable(module);
  bind_dynamic_executable(module);
  module.def("compile", &compile_model, py::arg("model"), py::arg("base_dir"), py::arg("archs"),
             py::arg("pipeline"), py::arg("input_shapes"), py::arg("cache_dir"),
             py::arg("threads"), py::arg("progress"), py::arg("autotune"));
  module.def("compile_dynamic", &compile_dynamic_model, py::arg("model"), py::arg("base_dir"),
             py::arg("archs"), py::arg("pipeline"), py::arg("ranges"), py::arg("opt_shapes"),
             py::arg("cache_dir"), py::arg("threads"), py::arg("autotune"));
  module.def("load", &load_executable, py::arg("path"));
  module.def("dump_ir", &dump_ir, py::arg("model"), py::arg("base_dir"), py::arg("stage"),
             py::arg("format"), py::arg("pipeline"), py::arg("input_shapes"));
  module.def("run_reference", &reference_run, py::arg("model"), py::arg("base_dir"),
             py::arg("inputs"), py::arg("stage"), py::arg("pipeline"));
  module.def("cuda_device_error", &cuda_device_error);
}
