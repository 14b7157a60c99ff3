// kiln inspect: reads a .kiln file (validating all of it) and prints what it holds: kernels,
// launch schedule, buffers, memory plan and weights (tools/inspect_report.h); for a program
// compiled for ranges of input shapes, its ranges and variants first.
#include <CLI/CLI.hpp>
#include <iostream>
#include <memory>

#include "runtime/dynamic_program.h"
#include "runtime/program_io.h"
#include "tools/commands.h"
#include "tools/inspect_report.h"

namespace kiln::tools {

void add_inspect_command(CLI::App& parent, int& exit_code) {
  auto path = std::make_shared<std::string>();
  CLI::App* command = parent.add_subcommand(
      "inspect", "Print a compiled program's kernels, launch schedule, buffers and memory plan");
  command->add_option("program", *path, "FILE.kiln (from kiln compile)")->required();
  command->callback([path, &exit_code] {
    std::cout << (is_dynamic_program_file(*path)
                      ? dynamic_inspect_report(read_dynamic_program(*path))
                      : inspect_report(read_program(*path)));
    exit_code = 0;
  });
}

}  // namespace kiln::tools
