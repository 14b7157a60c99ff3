// The kiln subcommands. Each add_*_command registers its options on `parent` and, when chosen,
// stores its exit status in `exit_code` (0 ok, 1 a check failed; bad input throws InputError).
#pragma once

namespace CLI {
class App;
}

namespace kiln::tools {

void add_dump_ir_command(CLI::App& parent, int& exit_code);
void add_run_command(CLI::App& parent, int& exit_code);
void add_test_onnx_command(CLI::App& parent, int& exit_code);
void add_opt_command(CLI::App& parent, int& exit_code);
void add_list_ops_command(CLI::App& parent, int& exit_code);
void add_compile_command(CLI::App& parent, int& exit_code);
void add_inspect_command(CLI::App& parent, int& exit_code);
void add_bench_command(CLI::App& parent, int& exit_code);

}  // namespace kiln::tools
