// The kiln command. Exit codes: 0 success, 1 a check failed (a mismatch), 2 bad input or usage,
// 3 internal error.
#include <malloc.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <iostream>
#include <string>

#include "ir/error.h"
#include "tools/commands.h"

namespace {

std::string command_list(CLI::App& app) {
  std::string list;
  for (const CLI::App* command : app.get_subcommands({})) {
    list += (list.empty() ? "" : ", ") + command->get_name();
  }
  return list;
}

// What the first argument asks before CLI11 parses: `kiln help [COMMAND]` prints the help, no
// command or an unknown one is a usage error listing the commands. Returns the exit status, or
// -1 when CLI11 should parse the arguments.
int handle_command_name(CLI::App& app, int argc, char** argv) {
  const std::string first = argc > 1 ? argv[1] : "";
  if (!first.empty() && first[0] == '-') return -1;  // --help, --version, or an error CLI11 reports
  const std::string usage = "the commands are " + command_list(app) +
                            "; `kiln help COMMAND` or `kiln COMMAND --help` describes one";
  if (first.empty()) {
    std::fprintf(stderr, "kiln: error: no command given; %s\n", usage.c_str());
    return 2;
  }
  if (first == "help") {
    if (argc == 2) {
      std::cout << app.help();
      return 0;
    }
    for (CLI::App* command : app.get_subcommands({})) {
      if (command->get_name() == argv[2]) {
        std::cout << command->help();
        return 0;
      }
    }
    std::fprintf(stderr, "kiln: error: no command '%s' to describe; %s\n", argv[2], usage.c_str());
    return 2;
  }
  for (const CLI::App* command : app.get_subcommands({})) {
    if (command->get_name() == first) return -1;
  }
  std::fprintf(stderr, "kiln: error: unknown command '%s'; %s\n", first.c_str(), usage.c_str());
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  // Weight-sized blocks (tensors, up to tens of MB) come from the heap, not each from its own
  // mmap: the passes make new weights as the model's are dropped (folded, converted), and freed
  // heap memory is reused where fresh mappings would fault in every page again (ResNet-50:
  // fold-batch-norm ~50 -> ~13 ms). 32 MiB is glibc's largest threshold on 64-bit systems.
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
  CLI::App app{"kiln: compiles ONNX models to fused GPU kernels; runs them on a CPU reference",
               "kiln"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "kiln 0.1");
  int exit_code = 0;
  kiln::tools::add_dump_ir_command(app, exit_code);
  kiln::tools::add_run_command(app, exit_code);
  kiln::tools::add_test_onnx_command(app, exit_code);
  kiln::tools::add_opt_command(app, exit_code);
  kiln::tools::add_list_ops_command(app, exit_code);
  kiln::tools::add_compile_command(app, exit_code);
  kiln::tools::add_inspect_command(app, exit_code);
  kiln::tools::add_bench_command(app, exit_code);
  if (const int status = handle_command_name(app, argc, argv); status >= 0) return status;
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& help) {
    return app.exit(help);
  } catch (const CLI::CallForVersion& version) {
    return app.exit(version);
  } catch (const CLI::ParseError& error) {
    app.exit(error);
    return 2;
  } catch (const kiln::InputError& error) {
    std::fprintf(stderr, "kiln: error: %s\n", error.what());
    return 2;
  } catch (const std::exception& error) {
    std::fprintf(stderr, "kiln: internal error: %s\n", error.what());
    return 3;
  }
  return exit_code;
}
