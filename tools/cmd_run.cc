// kiln run: runs a model on the CPU reference interpreter, or a compiled program (.kiln) on the
// GPU session, on given inputs; writes the outputs as .npy, optionally compares them with
// expected outputs (--expect DIR).
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <filesystem>
#include <iostream>
#include <memory>

#include "ir/error.h"
#include "runtime/reference_interpreter.h"
#include "runtime/session.h"
#include "tools/commands.h"
#include "tools/compare.h"
#include "tools/model_loading.h"
#include "tools/pass_options.h"
#include "tools/tensor_files.h"

namespace kiln::tools {
namespace {

struct RunOptions {
  std::string model;
  std::string device = "auto";
  std::vector<std::string> inputs;
  std::vector<std::string> input_shapes;
  StageOptions stage;
  std::string output_dir;
  std::string expect_dir;
  Tolerance tolerance;
};

// Reads the --input NAME=FILE options, by input name.
std::map<std::string, Tensor> read_input_files(const std::vector<std::string>& specs) {
  std::map<std::string, Tensor> tensors;
  for (const std::string& spec : specs) {
    const size_t equals = spec.find('=');
    if (equals == std::string::npos || equals == 0) {
      throw InputError("--input '" + spec + "': expected NAME=FILE.npy or NAME=FILE.pb");
    }
    const std::string name = spec.substr(0, equals);
    if (tensors.count(name)) throw InputError("--input '" + name + "' is given twice");
    tensors[name] = read_tensor_file(spec.substr(equals + 1));
  }
  return tensors;
}

// A model's or program's input: its name and type.
struct InputSignature {
  std::string name;
  TensorType type;
};

std::vector<InputSignature> graph_signature(const Graph& graph) {
  std::vector<InputSignature> signature;
  for (const Value* input : graph.inputs()) signature.push_back({input->name(), input->type()});
  return signature;
}

std::vector<InputSignature> program_signature(const Program& program) {
  std::vector<InputSignature> signature;
  for (const int input : program.inputs) {
    signature.push_back({program.buffers[input].name, program.buffers[input].type});
  }
  return signature;
}

// The file's tensor for `input`. NumPy has no bfloat16, so a bf16 input also takes an f32 .npy
// file, rounded to bf16 (as bf16 outputs are written as f32); any other dtype difference is an
// error that says how to fix it.
Tensor input_tensor(const InputSignature& input, const Tensor& given) {
  const DType wanted = input.type.dtype;
  if (given.dtype() == wanted) return given;
  if (wanted == DType::kBF16 && given.dtype() == DType::kF32) return given.converted(wanted);
  const std::string numpy_hint =
      wanted == DType::kF16 ? ", e.g. with numpy's .astype(np.float16)" : "";
  throw InputError("--input '" + input.name + "': the model takes " + type_to_string(input.type) +
                   ", the file holds " + type_to_string(given.type()) + " (convert the file" +
                   numpy_hint + "; --io-precision sets the dtype of the model's float inputs)");
}

// The input tensors in signature order; every input needs one and every one must be used.
std::vector<Tensor> order_inputs(const std::vector<InputSignature>& signature,
                                 std::map<std::string, Tensor> given) {
  std::vector<Tensor> tensors;
  std::string missing;
  for (const InputSignature& input : signature) {
    auto it = given.find(input.name);
    if (it == given.end()) {
      missing += " " + input.name + ":" + type_to_string(input.type);
      continue;
    }
    tensors.push_back(input_tensor(input, it->second));
    given.erase(it);
  }
  if (!given.empty()) {
    std::string known;
    for (const InputSignature& input : signature) known += " " + input.name;
    throw InputError("--input '" + given.begin()->first +
                     "': the model has no such input (inputs:" + known + ")");
  }
  if (!missing.empty()) throw InputError("no --input given for model inputs:" + missing);
  return tensors;
}

std::string preview(const Tensor& tensor) {
  std::string text;
  const int64_t shown = std::min<int64_t>(tensor.num_elements(), 6);
  for (int64_t i = 0; i < shown; ++i) {
    text += (i ? ", " : "") + fmt::format("{:.6g}", tensor.get_double(i));
  }
  if (shown < tensor.num_elements()) text += ", ...";
  return "[" + text + "]";
}

void create_output_dir(const RunOptions& options) {
  if (options.output_dir.empty()) return;
  std::error_code error;
  std::filesystem::create_directories(options.output_dir, error);
  if (error) {
    throw InputError("--output-dir '" + options.output_dir + "': cannot create (" +
                     error.message() + ")");
  }
}

// Prints each output, writes it to --output-dir and compares it with --expect; returns the exit
// code (1 on a mismatch).
int report_outputs(const std::vector<std::string>& names, const std::vector<Tensor>& outputs,
                   const RunOptions& options) {
  bool all_match = true;
  for (size_t i = 0; i < outputs.size(); ++i) {
    const std::string file = file_name_for(names[i]) + ".npy";
    std::cout << fmt::format("{}: {} {}\n", names[i], type_to_string(outputs[i].type()),
                             preview(outputs[i]));
    if (!options.output_dir.empty()) {
      write_npy((std::filesystem::path(options.output_dir) / file).string(), outputs[i]);
    }
    if (!options.expect_dir.empty()) {
      const std::string expected_path = (std::filesystem::path(options.expect_dir) / file).string();
      const Comparison comparison =
          compare_tensors(outputs[i], read_tensor_file(expected_path), options.tolerance);
      std::cout << fmt::format("  {} vs {}: {}\n", comparison.ok ? "MATCH" : "MISMATCH",
                               expected_path, comparison.summary());
      all_match = all_match && comparison.ok;
    }
  }
  if (!options.expect_dir.empty()) {
    std::cout << (all_match ? "all outputs match" : "outputs differ")
              << fmt::format(" (atol {:g}, rtol {:g})\n", options.tolerance.atol,
                             options.tolerance.rtol);
  }
  return all_match ? 0 : 1;
}

// A .kiln file: runs on the GPU session.
int run_compiled(const RunOptions& options) {
  if (options.device == "cpu") {
    throw InputError("--device cpu: '" + options.model +
                     "' is compiled for the GPU; run the ONNX model on the CPU reference");
  }
  create_output_dir(options);
  const std::map<std::string, Tensor> given = read_input_files(options.inputs);
  Session session = Session::load(options.model);
  const Program& program = session.program();
  const std::vector<Tensor> inputs = order_inputs(program_signature(program), given);
  const auto start = std::chrono::steady_clock::now();
  const std::vector<Tensor> outputs = session.run(inputs);
  const double milliseconds =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  std::cerr << fmt::format("ran {} kernel launches on {} in {:.3f} ms (first run: each checked)\n",
                           program.steps.size(), session.device_description(), milliseconds);
  std::vector<std::string> names;
  for (const int output : program.outputs) names.push_back(program.buffers[output].name);
  return report_outputs(names, outputs, options);
}

int run_model(const RunOptions& options) {
  if (options.model.ends_with(".kiln")) return run_compiled(options);
  if (options.device == "gpu") {
    throw UnsupportedError(
        "--device gpu runs compiled programs: compile the model first (kiln "
        "compile MODEL -o OUT.kiln), then kiln run OUT.kiln");
  }
  if (options.device == "auto") {
    std::cerr << "note: running the model on the CPU reference interpreter (for the GPU, run a "
                 "compiled .kiln file)\n";
  }
  create_output_dir(options);
  const std::map<std::string, Tensor> given = read_input_files(options.inputs);
  onnx_import::ImportOptions import_options;
  import_options.input_shapes = parse_input_shapes(options.input_shapes);
  // Symbolic dimensions not bound by --input-shape take the shape of the input file.
  for (const auto& [name, tensor] : given)
    import_options.input_shapes.emplace(name, tensor.shape());
  const std::unique_ptr<Graph> graph = load_model(options.model, import_options);
  apply_stage(*graph, options.stage);
  const std::vector<Tensor> inputs = order_inputs(graph_signature(*graph), given);

  const auto start = std::chrono::steady_clock::now();
  const std::vector<Tensor> outputs = run_reference(*graph, inputs);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::cerr << fmt::format("ran {} nodes on the CPU reference in {:.3f} s\n", graph->num_nodes(),
                           seconds);

  std::vector<std::string> names;
  for (const Value* output : graph->outputs()) names.push_back(output->name());
  return report_outputs(names, outputs, options);
}

}  // namespace

void add_run_command(CLI::App& parent, int& exit_code) {
  auto options = std::make_shared<RunOptions>();
  CLI::App* command = parent.add_subcommand("run", "Run a model on inputs and write its outputs");
  command->add_option("model", options->model, "MODEL.onnx, FILE.kir or compiled FILE.kiln")
      ->required();
  command
      ->add_option("--device", options->device,
                   "cpu (the reference interpreter), gpu (a .kiln file), or auto (default: the "
                   "GPU for a .kiln file, else the CPU)")
      ->check(CLI::IsMember({"auto", "cpu", "gpu"}));
  command->add_option("--input", options->inputs, "NAME=FILE.npy or NAME=FILE.pb (repeatable)");
  command->add_option("--input-shape", options->input_shapes,
                      "Bind symbolic input dims: NAME=1x3x224x224 (repeatable)");
  add_stage_options(*command, options->stage);
  command->add_option("--output-dir", options->output_dir, "Write each output as DIR/NAME.npy");
  command->add_option("--expect", options->expect_dir,
                      "Compare with DIR/NAME.npy; exit 1 on a mismatch");
  command->add_option("--atol", options->tolerance.atol, "Absolute tolerance (default 1e-4)");
  command->add_option("--rtol", options->tolerance.rtol, "Relative tolerance (default 1e-3)");
  command->callback([options, &exit_code] { exit_code = run_model(*options); });
}

}  // namespace kiln::tools
