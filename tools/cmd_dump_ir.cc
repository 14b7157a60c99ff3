// kiln dump-ir: prints a model's IR at a stage as text, DOT, JSON, or a short summary
// (kiln/ir_dump.h).
#include <CLI/CLI.hpp>
#include <fstream>
#include <iostream>
#include <memory>

#include "ir/error.h"
#include "kiln/compiler.h"
#include "kiln/ir_dump.h"
#include "tools/commands.h"
#include "tools/input_shapes.h"
#include "tools/pass_options.h"

namespace kiln::tools {
namespace {

struct DumpIrOptions {
  std::string model;
  std::string format = "text";
  std::string output;
  std::vector<std::string> input_shapes;
  StageOptions stage;
};

int run_dump_ir(const DumpIrOptions& options) {
  const std::unique_ptr<Graph> graph =
      load_model(options.model, parse_input_shapes(options.input_shapes),
                 [](const std::string& note) { std::cerr << "kiln dump-ir: note: " << note << "\n"; });
  apply_stage(*graph, options.stage);
  const std::string text = dump_graph(*graph, parse_dump_format(options.format));

  if (options.output.empty()) {
    std::cout << text;
  } else {
    std::ofstream file(options.output);
    if (!(file << text)) throw InputError(options.output + ": cannot write");
  }
  return 0;
}

}  // namespace

void add_dump_ir_command(CLI::App& parent, int& exit_code) {
  auto options = std::make_shared<DumpIrOptions>();
  CLI::App* command =
      parent.add_subcommand("dump-ir", "Print a model's IR (text, dot, json, summary)");
  command->add_option("model", options->model, "MODEL.onnx or FILE.kir")->required();
  command->add_option("--format", options->format, "text (default), dot, json or summary")
      ->check(CLI::IsMember({"text", "dot", "json", "summary"}));
  command->add_option("-o,--output", options->output, "Write to FILE instead of stdout");
  command->add_option("--input-shape", options->input_shapes,
                      "Bind symbolic input dims: NAME=1x3x224x224 (repeatable)");
  add_stage_options(*command, options->stage);
  command->callback([options, &exit_code] { exit_code = run_dump_ir(*options); });
}

}  // namespace kiln::tools
