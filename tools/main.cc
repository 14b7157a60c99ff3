// The kiln command. Exit codes: 0 success, 1 a check failed (a mismatch), 2 bad input or usage,
// 3 internal error.
#include <malloc.h>

#include <CLI/CLI.hpp>
#include <cstdio>

#include "ir/error.h"
#include "tools/commands.h"

int main(int argc, char** argv) {
  // Weight-sized blocks (tensors, up to tens of MB) come from the heap, not each from its own
  // mmap: the passes make new weights as the model's are dropped (folded, converted), and freed
  // heap memory is reused where fresh mappings would fault in every page again (ResNet-50:
  // fold-batch-norm ~50 -> ~13 ms). 32 MiB is glibc's largest threshold on 64-bit systems.
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
  CLI::App app{"kiln: compiles ONNX models to fused GPU kernels; runs them on a CPU reference"};
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
