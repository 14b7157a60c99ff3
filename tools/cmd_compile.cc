// kiln compile: a model compiled by the driver (kiln/compiler.h: the pass pipeline to the fused
// stage, CUDA kernels for the target, NVRTC, the memory plan) and written as a .kiln program
// (runtime/program_io.h), to -o or beside the model (model.onnx -> model.kiln), saying where.
// --emit-cuda DIR writes each kernel's source as DIR/<kernel>.cu, exactly what NVRTC compiles,
// before compiling. --input-shape with ranges (x=1..16x3x224x224) compiles a dynamic program:
// variants for sizes in the ranges (kiln/dynamic_compile.h).
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <set>

#include "ir/error.h"
#include "kiln/compiler.h"
#include "kiln/dynamic_compile.h"
#include "runtime/dynamic_program.h"
#include "runtime/program_io.h"
#include "tools/commands.h"
#include "tools/input_shapes.h"
#include "tools/pass_options.h"
#include "tools/tactic_options.h"

namespace kiln::tools {
namespace {

struct CompileCommandOptions {
  std::string model;
  std::string output;
  std::vector<std::string> archs = {"sm_80", "sm_90"};
  std::string emit_cuda;
  std::string cache_dir;
  int jobs = 0;
  bool no_fusion = false;
  bool concat_copies = false;
  std::vector<std::string> input_shapes;
  std::vector<std::string> opt_shapes;
  PassOptions passes;
  TacticOptions tactics;
};

void write_kernel_sources(const Program& program, const std::string& directory) {
  std::error_code error;
  std::filesystem::create_directories(directory, error);
  if (error) throw InputError("--emit-cuda " + directory + ": " + error.message());
  for (const ProgramKernel& kernel : program.kernels) {
    const std::string path = directory + "/" + kernel.name + ".cu";
    std::ofstream file(path);
    if (!(file << kernel.source)) throw InputError(path + ": cannot write");
  }
}

std::string output_path(const CompileCommandOptions& options) {
  // Without -o the program goes beside the model: model.onnx -> model.kiln.
  return options.output.empty()
             ? std::filesystem::path(options.model).replace_extension(".kiln").string()
             : options.output;
}

// The target the kernels were generated for and how the tactics were chosen (with
// --explain-tactics, per contraction), `what` naming the program they describe.
void print_target_and_tactics(const CompileCommandOptions& options, const CompiledModel& compiled,
                              const std::string& what) {
  std::cerr << "kiln compile: kernels generated for " << compiled.target.describe() << "\n";
  std::cerr << "kiln compile: " << what << tactic_summary(compiled.autotune) << "\n";
  if (options.tactics.explain) std::cerr << tactic_table(compiled.autotune);
  if (compiled.concat_views > 0) {
    std::cerr << fmt::format(
        "kiln compile: {}{} concat{} launch{} no kernel: {} operands' kernels write their slices "
        "(--concat-copies to compare; --explain-fusion says why others do not)\n",
        what, compiled.concat_views, compiled.concat_views == 1 ? "" : "s",
        compiled.concat_views == 1 ? "es" : "", compiled.concat_views == 1 ? "its" : "their");
  }
}

// --input-shape with ranges: one program of variants (kiln/dynamic_compile.h).
int run_compile_dynamic(const CompileCommandOptions& options, CompileOptions compile_options,
                        const InputRanges& ranges) {
  // Each variant's import repeats the notes of dims left unbound: print each once.
  auto notes = std::make_shared<std::set<std::string>>();
  compile_options.on_defaulted_dims = [notes](const std::string& note) {
    if (notes->insert(note).second) std::cerr << "kiln compile: note: " << note << "\n";
  };
  const CompiledDynamicModel compiled = compile_dynamic(
      options.model, compile_options, ranges, parse_input_shapes(options.opt_shapes),
      [](size_t index, size_t count, const std::string& shapes) {
        std::cerr << fmt::format("kiln compile: variant {} of {}: {}\n", index + 1, count, shapes);
      });
  const DynamicProgram& program = compiled.program;
  for (size_t c = 0; c < program.classes.size(); ++c) {
    std::string dims;
    for (const VaryingDim& dim : program.dims) {
      if (dim.dim_class != static_cast<int>(c)) continue;
      const Program& first = program.variants[0].program;
      dims += fmt::format("{}{} dim {}", dims.empty() ? "" : ", ",
                          first.buffers[first.inputs[dim.input]].name, dim.axis);
    }
    std::vector<int64_t> sizes;
    for (const ProgramVariant& variant : program.variants) {
      if (std::find(sizes.begin(), sizes.end(), variant.sizes[c]) == sizes.end()) {
        sizes.push_back(variant.sizes[c]);
      }
    }
    std::cerr << fmt::format("kiln compile: {}: sizes {} {}\n", dims, fmt::join(sizes, ","),
                             program.classes[c].padded
                                 ? "(smaller sizes run padded to the next one)"
                                 : "(each its own: " + program.classes[c].note + ")");
  }
  double seconds = 0;
  for (const CompiledModel& variant : compiled.variants) seconds += variant.stats.seconds;
  std::cerr << fmt::format("kiln compile: {} variants, NVRTC and the cache in {:.2f} s\n",
                           program.variants.size(), seconds);
  // The largest variant's refusals, target and tactics stand for all (the same graph and passes).
  const CompiledModel& largest = compiled.variants.back();
  options.passes.print_refusals(largest.refusals);
  print_target_and_tactics(options, largest, "largest variant: ");
  const std::string output = output_path(options);
  write_dynamic_program(program, output);
  std::cerr << "kiln compile: wrote " << output << "\n";
  return 0;
}

int run_compile(const CompileCommandOptions& options) {
  CompileOptions compile_options;
  compile_options.archs = options.archs;
  compile_options.pipeline = options.passes.pipeline();
  compile_options.pipeline.fusion = !options.no_fusion;
  compile_options.concat_views = !options.concat_copies;
  compile_options.cache_dir = options.cache_dir;
  compile_options.threads = options.jobs;
  compile_options.autotune = options.tactics.setting();
  compile_options.forced_tactic = options.tactics.forced;
  compile_options.library_tactics = !options.tactics.no_library;
  compile_options.on_lowered = [&](const Program& program) {
    if (!options.emit_cuda.empty()) write_kernel_sources(program, options.emit_cuda);
  };
  compile_options.on_defaulted_dims = [](const std::string& note) {
    std::cerr << "kiln compile: note: " << note << "\n";
  };
  const InputRanges ranges = parse_input_ranges(options.input_shapes);
  if (has_varying_dims(ranges)) return run_compile_dynamic(options, compile_options, ranges);
  if (!options.opt_shapes.empty()) {
    throw InputError(
        "--opt-shape names the shape to tune for within --input-shape ranges; no "
        "--input-shape has a range (LO..HI)");
  }
  const CompiledModel compiled =
      compile(options.model, compile_options, parse_input_shapes(options.input_shapes));
  options.passes.print_refusals(compiled.refusals);
  const Program& program = compiled.program;
  const codegen::CompileStats& stats = compiled.stats;
  std::cerr << fmt::format(
      "kiln compile: {} steps, {} kernels for {}: {} NVRTC compilations, {} from the cache{} in "
      "{:.2f} s; arena {} bytes\n",
      program.steps.size(), program.kernels.size(), fmt::join(program.archs, ","),
      stats.compilations, stats.cache_hits,
      stats.cache_directory.empty() ? "" : " (" + stats.cache_directory + ")", stats.seconds,
      compiled.memory.peak_bytes);
  if (stats.cache_store_failures > 0) {
    std::cerr << fmt::format(
        "kiln compile: note: the kernel cache could not store {} compiled products ({}); they "
        "were compiled and not cached (--cache-dir or $KILN_CACHE_DIR picks another directory)\n",
        stats.cache_store_failures, stats.cache_store_error);
  }
  print_target_and_tactics(options, compiled, "");
  const std::string output = output_path(options);
  write_program(program, output);
  std::cerr << "kiln compile: wrote " << output << "\n";
  return 0;
}

}  // namespace

void add_compile_command(CLI::App& parent, int& exit_code) {
  auto options = std::make_shared<CompileCommandOptions>();
  CLI::App* command =
      parent.add_subcommand("compile", "Compile a model's kernels for the GPU (NVRTC)");
  command->add_option("model", options->model, "MODEL.onnx or FILE.kir")->required();
  command->add_option("-o,--output", options->output,
                      "Write the program to OUT.kiln (default: the model's path with .kiln)");
  command
      ->add_option("--arch", options->archs,
                   "Target GPUs: sm_80,sm_90 (the default), sm_90a alone (Hopper's wgmma "
                   "kernels, H100/H200 only) or native (this machine's GPU; sm_90a on an "
                   "H100/H200); a CUBIN for each and PTX for the newest")
      ->delimiter(',');
  command->add_option("--emit-cuda", options->emit_cuda,
                      "Write each kernel's CUDA source as DIR/<kernel>.cu");
  command->add_flag("--no-fusion", options->no_fusion,
                    "Compile without the fusion passes (fuse-kernels, fuse-siblings): one kernel "
                    "per op");
  command->add_flag("--concat-copies", options->concat_copies,
                    "Copy each concat's operands into its buffer with a kernel, rather than have "
                    "their producers write their slices of it (--explain-fusion says why a "
                    "concat stays a copy anyway)");
  command->add_option("--cache-dir", options->cache_dir,
                      "Compiled-kernel cache (default $KILN_CACHE_DIR, $XDG_CACHE_HOME/kiln or "
                      "~/.cache/kiln)");
  command->add_option("-j,--jobs", options->jobs,
                      "Kernels compiled at once (default: one per hardware thread)");
  command->add_option("--input-shape", options->input_shapes,
                      "Bind symbolic input dims: NAME=1x3x224x224 (repeatable); a range LO..HI "
                      "for a dim (NAME=1..32x3x224x224) compiles one program for every size in "
                      "it (docs/DYNAMIC_SHAPES.md)");
  command->add_option("--opt-shape", options->opt_shapes,
                      "With --input-shape ranges: NAME=DIMS, a shape to compile a variant of "
                      "its own for (no padding at that size)");
  add_pass_options(*command, options->passes);
  add_tactic_options(*command, options->tactics);
  command->callback([options, &exit_code] { exit_code = run_compile(*options); });
}

}  // namespace kiln::tools
