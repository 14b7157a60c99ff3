// kiln opt: reads IR text, verifies it and prints it back (the FileCheck driver; the passes
// will run here with --passes once they exist).
#include <CLI/CLI.hpp>
#include <iostream>
#include <memory>

#include "ir/printer.h"
#include "tools/commands.h"
#include "tools/model_loading.h"

namespace kiln::tools {
namespace {

struct OptOptions {
  std::string file;
  int64_t max_inline_elements = PrintOptions{}.max_inline_elements;
};

int run_opt(const OptOptions& options) {
  const std::unique_ptr<Graph> graph = load_model(options.file);
  PrintOptions print_options;
  print_options.max_inline_elements = options.max_inline_elements;
  std::cout << print_graph(*graph, print_options);
  return 0;
}

}  // namespace

void add_opt_command(CLI::App& parent, int& exit_code) {
  auto options = std::make_shared<OptOptions>();
  CLI::App* command =
      parent.add_subcommand("opt", "Parse, verify and print IR text (or an ONNX model's IR)");
  command->add_option("file", options->file, "FILE.kir (or MODEL.onnx)")->required();
  command->add_option("--inline-elements", options->max_inline_elements,
                      "Print constants with at most N elements inline (default 16)");
  command->callback([options, &exit_code] { exit_code = run_opt(*options); });
}

}  // namespace kiln::tools
