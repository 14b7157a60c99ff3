// kiln run: runs a model on the CPU reference interpreter, or a compiled program (.kiln) on the
// GPU session, on given inputs; writes the outputs as .npy, optionally compares them with
// expected outputs (--expect DIR).
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <filesystem>
#include <iostream>
#include <memory>

#include "ir/error.h"
#include "kiln/compiler.h"
#include "reference/reference_interpreter.h"
#include "runtime/dynamic_session.h"
#include "runtime/session.h"
#include "tools/commands.h"
#include "tools/compare.h"
#include "tools/input_shapes.h"
#include "tools/library_fallback_note.h"
#include "tools/model_inputs.h"
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
  int runs = 1;  // GPU: the runs after the first replay the CUDA graph; the last is reported
};

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

std::vector<std::string> output_names(const Program& program) {
  std::vector<std::string> names;
  for (const int output : program.outputs) names.push_back(program.buffers[output].name);
  return names;
}

// What the first GPU run was and what later ones are, for the timing line.
std::string runs_note(int runs) {
  return runs == 1 ? "first run: each checked"
                   : fmt::format("run {} of {}: a CUDA-graph replay", runs, runs);
}

// A .kiln file for ranges of shapes: the variant for the inputs' shapes runs.
int run_dynamic(const RunOptions& options, const std::map<std::string, Tensor>& given) {
  DynamicSession session = DynamicSession::load(options.model);
  const Program& first = session.program().variants.at(0).program;
  const std::vector<Tensor> inputs = order_inputs(program_signature(first), given);
  std::vector<Shape> shapes;
  for (const Tensor& input : inputs) shapes.push_back(input.shape());
  const size_t variant = choose_variant(session.program(), shapes);
  for (int run = 1; run < options.runs; ++run) session.run(inputs);
  const auto start = std::chrono::steady_clock::now();
  const std::vector<Tensor> outputs = session.run(inputs);
  const double milliseconds =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  const ProgramVariant& chosen = session.program().variants[variant];
  std::cerr << fmt::format(
      "ran variant {} of {} (compiled for sizes {}{}) on {} in {:.3f} ms ({})\n", variant,
      session.program().variants.size(), fmt::join(chosen.sizes, ","),
      chosen.input_shapes == shapes ? "" : "; inputs padded, outputs cut back",
      session.variant_session(variant).device_description(), milliseconds, runs_note(options.runs));
  return report_outputs(output_names(first), outputs, options);
}

// A .kiln file: runs on the GPU session.
int run_compiled(const RunOptions& options) {
  if (options.device == "cpu") {
    throw InputError("--device cpu: '" + options.model +
                     "' is compiled for the GPU; run the ONNX model on the CPU reference");
  }
  create_output_dir(options);
  const std::map<std::string, Tensor> given = read_input_files(options.inputs);
  if (is_dynamic_program_file(options.model)) return run_dynamic(options, given);
  Session session = Session::load(options.model);
  std::cerr << library_fallback_note(session);
  const Program& program = session.program();
  const std::vector<Tensor> inputs = order_inputs(program_signature(program), given);
  for (int run = 1; run < options.runs; ++run) session.run(inputs);
  const auto start = std::chrono::steady_clock::now();
  const std::vector<Tensor> outputs = session.run(inputs);
  const double milliseconds =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  std::cerr << fmt::format("ran {} kernel launches on {} in {:.3f} ms ({})\n", program.steps.size(),
                           session.device_description(), milliseconds, runs_note(options.runs));
  return report_outputs(output_names(program), outputs, options);
}

int run_model(const RunOptions& options) {
  if (options.model.ends_with(".kiln")) return run_compiled(options);
  if (options.device == "gpu") {
    throw UnsupportedError(
        "--device gpu runs compiled programs: compile the model first (kiln "
        "compile MODEL -o OUT.kiln), then kiln run OUT.kiln");
  }
  if (options.runs != 1) {
    throw InputError("--runs repeats a compiled program's run on the GPU; '" + options.model +
                     "' runs once on the CPU reference interpreter");
  }
  if (options.device == "auto") {
    std::cerr << "note: running the model on the CPU reference interpreter (for the GPU, run a "
                 "compiled .kiln file)\n";
  }
  create_output_dir(options);
  const std::map<std::string, Tensor> given = read_input_files(options.inputs);
  std::map<std::string, Shape> input_shapes = parse_input_shapes(options.input_shapes);
  // Symbolic dimensions not bound by --input-shape take the shape of the input file.
  for (const auto& [name, tensor] : given) input_shapes.emplace(name, tensor.shape());
  const std::unique_ptr<Graph> graph = load_model(options.model, input_shapes);
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
  command
      ->add_option("--runs", options->runs,
                   "GPU: run N times and write and check the last run's outputs; the first run "
                   "launches its kernels one by one, each checked, later ones replay the CUDA "
                   "graph (concurrent branches, early launch) (default 1)")
      ->check(CLI::Range(1, 1000000));
  command->callback([options, &exit_code] { exit_code = run_model(*options); });
}

}  // namespace kiln::tools
