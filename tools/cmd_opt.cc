// kiln opt: reads IR text (or an ONNX model), runs the passes named by --passes, verifying the
// graph after each, and prints the result: the FileCheck driver of the pass tests.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <iostream>
#include <memory>

#include "ir/error.h"
#include "ir/printer.h"
#include "kiln/compiler.h"
#include "passes/mixed_precision.h"
#include "tools/commands.h"
#include "tools/pass_options.h"

namespace kiln::tools {
namespace {

struct OptOptions {
  std::string file;
  std::vector<std::string> passes;
  PassOptions pass_options;
  int64_t max_inline_elements = PrintOptions{}.max_inline_elements;
};

int run_opt(const OptOptions& options) {
  const std::unique_ptr<Graph> graph = load_model(options.file);
  const bool runs_mixed_precision =
      std::count(options.passes.begin(), options.passes.end(), passes::MixedPrecision::kName) != 0;
  if (options.pass_options.precision.requested() && !runs_mixed_precision) {
    throw InputError(std::string("--precision, --io-precision and --keep-fp32 act through the ") +
                     passes::MixedPrecision::kName + " pass: add it to --passes");
  }

  const PassOptions& pass_options = options.pass_options;
  pass_options.print_refusals(run_passes(*graph, options.passes, pass_options.pipeline()));

  PrintOptions print_options;
  print_options.max_inline_elements = options.max_inline_elements;
  std::cout << print_graph(*graph, print_options);
  return 0;
}

}  // namespace

void add_opt_command(CLI::App& parent, int& exit_code) {
  auto options = std::make_shared<OptOptions>();
  CLI::App* command = parent.add_subcommand(
      "opt", "Run passes on IR text (or an ONNX model's IR), verify, and print the result");
  command->add_option("file", options->file, "FILE.kir (or MODEL.onnx)")->required();
  command->add_option("--passes", options->passes, "Passes to run, in order: a,b,c")
      ->delimiter(',');
  add_pass_options(*command, options->pass_options);
  command
      ->add_option("--inline-elements", options->max_inline_elements,
                   "Print constants with at most N elements inline (default 16)")
      ->check(CLI::NonNegativeNumber);
  command->callback([options, &exit_code] { exit_code = run_opt(*options); });
}

}  // namespace kiln::tools
