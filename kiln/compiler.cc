// The compiler driver (see the header).
#include "kiln/compiler.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <future>
#include <limits>
#include <map>
#include <optional>

#include "codegen/kernel_cache.h"
#include "codegen/lower.h"
#include "codegen/nvrtc_compiler.h"
#include "codegen/output_placement.h"
#include "frontend/onnx_importer.h"
#include "frontend/proto_io.h"
#include "ir/error.h"
#include "ir/op_registry.h"
#include "ir/parser.h"
#include "passes/fuse_kernels.h"
#include "passes/fuse_siblings.h"
#include "runtime/session.h"
#include "runtime/timing_stats.h"
#include "target/native_target.h"

namespace kiln {
namespace {

// The codegen options of `options`, resolved in two halves so that the driver query of native
// (~0.4 s on an H100 host) runs beside loading and optimizing the model: the constructor checks
// archs (names, NVRTC's support) at once or starts the query; finish() waits for it and makes
// the options.
class CodegenResolution {
 public:
  explicit CodegenResolution(const CompileOptions& options) : options_(options) {
    const auto& archs = options.archs;
    if (std::find(archs.begin(), archs.end(), "native") == archs.end()) {
      codegen::check_archs(archs);
      if (options.autotune.value_or(false)) {
        throw InputError(
            "--autotune times tactics on this machine's GPU, for which --arch native generates "
            "the kernels; it cannot tune for " +
            fmt::format("{}", fmt::join(archs, ",")));
      }
      return;
    }
    if (archs.size() > 1) throw InputError("--arch native cannot be combined with other archs");
    native_ = std::async(std::launch::async, native_target);
  }

  // Waits for the driver query; when the caller's work failed, a failed query is the error
  // shown, as if it had come first.
  void settle() {
    if (native_.valid()) native_target_ = native_.get();
  }

  bool native() const { return native_target_.has_value(); }

  codegen::CodegenOptions finish() {
    settle();
    codegen::CodegenOptions codegen = native_target_
                                          ? codegen::CodegenOptions::for_target(*native_target_)
                                          : codegen::CodegenOptions::for_archs(options_.archs);
    codegen.cache_dir = options_.cache_dir;
    codegen.threads = options_.threads;
    codegen.on_progress = options_.on_progress;
    codegen.concat_views = options_.concat_views && options_.pipeline.fusion;
    codegen.library_tactics = options_.library_tactics;
    return codegen;
  }

 private:
  const CompileOptions& options_;
  std::future<Target> native_;
  std::optional<Target> native_target_;
};

passes::PassContext pass_context(const PipelineOptions& options) {
  check_pipeline_options(options);
  passes::PassContext context;
  context.disabled = options.disabled_passes;
  if (!options.fusion) {
    context.disabled.insert(passes::FuseKernels::kName);
    context.disabled.insert(passes::FuseSiblings::kName);
  }
  context.print_after = options.print_after;
  context.time_passes = options.time_passes;
  context.verify_each = true;
  context.dump = options.dump;
  context.precision = options.precision;
  context.io_dtype = options.io_dtype;
  context.keep_fp32 = options.keep_fp32;
  return context;
}

std::vector<std::string> run_pipeline(Graph& graph,
                                      const std::vector<std::unique_ptr<passes::Pass>>& pipeline,
                                      const PipelineOptions& options) {
  passes::PassContext context = pass_context(options);
  passes::run_passes(graph, pipeline, context);
  return std::move(context.refusals);
}

constexpr int kTuningIterations = 20;
constexpr int kTuningWarmup = 3;

// A candidate program run once on the tuning inputs, then its steps timed, then the whole
// program as the session replays it (its CUDA graph, kernels launched early, branches at once).
ProgramTimes time_on_gpu(Program program) {
  const std::vector<Tensor> inputs = tuning_inputs(program);
  Session session = Session::load(std::move(program));
  ProgramTimes times;
  times.outputs = session.run(inputs);
  times.step_ms = session.profile_steps(kTuningIterations, kTuningWarmup);
  // A step whose library call cannot run here (cuBLASLt missing, or without an algorithm for
  // the call on this GPU) ran its stand-in kernel, not the tactic it names: its time is
  // infinite, so that tactic is never taken, and the program is not timed whole.
  bool stood_in = false;
  for (size_t step = 0; step < times.step_ms.size(); ++step) {
    if (session.library_call_stands_in(step)) {
      times.step_ms[step] = std::numeric_limits<float>::infinity();
      stood_in = true;
    }
  }
  if (stood_in) return times;
  times.program_ms = median(session.time(kTuningIterations, kTuningWarmup));
  return times;
}

// What a tactic measured on `target` depends on besides its kernel: the GPU, its driver, NVRTC.
std::string tuning_identity(const Target& target) {
  return fmt::format("{} {} {} SMs, driver {}, NVRTC {}", target.device, target.arch,
                     target.sm_count, target.driver_version, codegen::Nvrtc::instance().version());
}

// Records in `report` the tactic `chosen` took at `site` unmeasured (for --explain-tactics):
// one entry a problem (site key), counting its nodes.
void record_unmeasured(const codegen::TacticSite& site, int chosen,
                       std::map<std::string, size_t>& entries, AutotuneReport& report) {
  const auto [it, inserted] = entries.try_emplace(site.key, report.sites.size());
  if (inserted) {
    report.sites.push_back({.label = site.label,
                            .tactics = site.tactics,
                            .ms = std::vector<double>(site.tactics.size(), -1.0),
                            .chosen = chosen,
                            .notes = site.notes});
  }
  ++report.sites[it->second].nodes;
}

// Lowers with every site taking the tactic named `text` exactly, else its first tactic whose
// name contains `text` (else the heuristic's); the report's note counts them and names the
// choices where the text matched several of a site's tactics. Text that names no tactic of any
// site is an InputError listing the tactics there are.
Program lower_forced(const Graph& fused_graph, codegen::CodegenOptions codegen,
                     const std::string& text, AutotuneReport& report) {
  int sites = 0, matched = 0;
  std::vector<std::string> names;
  std::vector<std::string> ambiguous;  // "'<taken>' of <n> at <site>"
  std::map<std::string, size_t> entries;
  codegen.choose_tactic = [&](const codegen::TacticSite& site) {
    ++sites;
    for (size_t t = 0; t < site.tactics.size(); ++t) {
      if (std::find(names.begin(), names.end(), site.tactics[t]) == names.end()) {
        names.push_back(site.tactics[t]);
      }
    }
    int exact = -1, first_containing = -1, containing = 0;
    for (size_t t = 0; t < site.tactics.size(); ++t) {
      if (site.tactics[t] == text) exact = static_cast<int>(t);
      if (site.tactics[t].find(text) == std::string::npos) continue;
      if (containing++ == 0) first_containing = static_cast<int>(t);
    }
    int chosen = 0;
    if (containing > 0) {  // an exact name contains the text too
      ++matched;
      chosen = exact >= 0 ? exact : first_containing;
      if (exact < 0 && containing > 1 && !entries.count(site.key)) {
        ambiguous.push_back(
            fmt::format("'{}' of {} at {}", site.tactics[chosen], containing, site.label));
      }
    }
    record_unmeasured(site, chosen, entries, report);
    return chosen;
  };
  Program program = codegen::lower_graph(fused_graph, codegen);
  if (matched == 0) {
    throw InputError(
        sites == 0 ? fmt::format("--tactic '{}': no kernel of this model has several tactics", text)
                   : fmt::format("--tactic '{}' names no tactic of the {} kernels with several; "
                                 "theirs: {}",
                                 text, sites, fmt::join(names, ", ")));
  }
  report.note = fmt::format(
      "forced (--tactic '{}'): {} of {} nodes with several take it, the others the heuristic's",
      text, matched, sites);
  if (!ambiguous.empty()) {
    report.note += fmt::format("; it names several tactics of a node, the first taken: {}",
                               fmt::join(ambiguous, ", "));
  }
  return program;
}

Program lower(const Graph& fused_graph, const codegen::CodegenOptions& codegen,
              bool native, const CompileOptions& options, AutotuneReport& report) {
  if (!options.forced_tactic.empty()) {
    return lower_forced(fused_graph, codegen, options.forced_tactic, report);
  }
  if (!native || !options.autotune.value_or(true)) {
    report.note = !native ? "chosen by heuristics; autotuning times them on this machine's GPU "
                            "(--arch native)"
                          : "chosen by heuristics (--no-autotune)";
    codegen::CodegenOptions heuristic = codegen;
    std::map<std::string, size_t> entries;
    heuristic.choose_tactic = [&](const codegen::TacticSite& site) {
      record_unmeasured(site, 0, entries, report);
      return 0;
    };
    return codegen::lower_graph(fused_graph, heuristic);
  }
  codegen::CodegenOptions quiet = codegen;
  quiet.on_progress = nullptr;
  AutotuneHooks hooks;
  hooks.compile = [&quiet](const std::vector<Program*>& rounds, const RoundCompiled& compiled) {
    codegen::CompileStats stats;
    codegen::compile_programs(rounds, quiet, stats, [&](size_t round, std::exception_ptr error) {
      if (!error) {
        try {
          plan_memory(*rounds[round]);
        } catch (...) {
          error = std::current_exception();
        }
      }
      compiled(round, error);
    });
  };
  // The first Session a process loads replays faster than later ones (docs/RUNTIME.md), and
  // round 0 (the heuristic program) would be it: its first timing is thrown away, so that every
  // round the tuner compares is timed as a later Session.
  hooks.measure = [timed_before = false](Program program) mutable {
    if (!timed_before) {
      timed_before = true;
      time_on_gpu(program);
    }
    return time_on_gpu(std::move(program));
  };
  hooks.cache_directory = codegen::kernel_cache_directory(codegen.cache_dir);
  hooks.cache_identity = tuning_identity(codegen.target);
  return lower_autotuned(fused_graph, codegen, hooks, report);
}

CompiledModel compile_with(const Graph& fused_graph, CodegenResolution& resolution,
                           const CompileOptions& options) {
  const codegen::CodegenOptions codegen = resolution.finish();
  CompiledModel compiled;
  compiled.target = codegen.target;
  compiled.program =
      lower(fused_graph, codegen, resolution.native(), options, compiled.autotune);
  if (options.on_lowered) options.on_lowered(compiled.program);
  compiled.stats = codegen::compile_program(compiled.program, codegen);
  compiled.memory = plan_memory(compiled.program);
  if (codegen.concat_views) {
    codegen::ConcatViews views = codegen::concat_views(fused_graph);
    compiled.refusals = std::move(views.refusals);
    compiled.concat_views = static_cast<int>(views.concats.size());
  }
  for (std::string& note : unfused_notes(compiled.autotune)) {
    compiled.refusals.push_back(std::move(note));
  }
  return compiled;
}

// Optimizes `graph` to the fused stage beside the resolution's driver query, then compiles it.
CompiledModel optimize_and_compile(Graph& graph, CodegenResolution& resolution,
                                   const CompileOptions& options) {
  std::vector<std::string> refusals;
  try {
    refusals = optimize(graph, Stage::kFused, options.pipeline);
  } catch (...) {
    resolution.settle();
    throw;
  }
  CompiledModel compiled = compile_with(graph, resolution, options);
  compiled.refusals.insert(compiled.refusals.begin(), refusals.begin(), refusals.end());
  return compiled;
}

}  // namespace

void check_pipeline_options(const PipelineOptions& options) {
  for (const std::string& op : options.keep_fp32) {
    if (!OpRegistry::global().find(op)) {
      throw InputError("--keep-fp32 '" + op +
                       "': no kiln op has that name (kiln op names are snake_case, such as "
                       "matmul or layer_normalization; kiln list-ops shows them all)");
    }
  }
  passes::check_io_precision(options.precision, options.io_dtype);
}

std::unique_ptr<Graph> load_model(const std::string& path,
                                  const std::map<std::string, Shape>& input_shapes,
                                  const std::function<void(const std::string&)>& on_defaulted_dims) {
  if (path.ends_with(".onnx")) {
    onnx_import::ImportOptions import_options;
    import_options.input_shapes = input_shapes;
    import_options.on_defaulted_dims = on_defaulted_dims;
    return onnx_import::import_onnx_file(path, import_options);
  }
  if (path.ends_with(".kir")) return parse_graph(onnx_import::read_whole_file(path), path);
  throw InputError(path + ": unknown model type (expected .onnx or .kir)");
}

std::vector<std::string> optimize(Graph& graph, Stage stage, const PipelineOptions& options) {
  if (stage == Stage::kImported) return {};
  return run_pipeline(graph, passes::default_pipeline(stage), options);
}

std::vector<std::string> run_passes(Graph& graph, const std::vector<std::string>& pass_names,
                                    const PipelineOptions& options) {
  std::vector<std::unique_ptr<passes::Pass>> pipeline;
  for (const std::string& name : pass_names) pipeline.push_back(passes::make_pass(name));
  return run_pipeline(graph, pipeline, options);
}

CompiledModel compile(const std::string& model_path, const CompileOptions& options,
                      const std::map<std::string, Shape>& input_shapes) {
  CodegenResolution resolution(options);
  std::unique_ptr<Graph> graph;
  try {
    graph = load_model(model_path, input_shapes, options.on_defaulted_dims);
  } catch (...) {
    resolution.settle();
    throw;
  }
  return optimize_and_compile(*graph, resolution, options);
}

CompiledModel compile(Graph& graph, const CompileOptions& options) {
  CodegenResolution resolution(options);
  return optimize_and_compile(graph, resolution, options);
}

CompiledModel compile_fused(const Graph& fused_graph, const CompileOptions& options) {
  CodegenResolution resolution(options);
  return compile_with(fused_graph, resolution, options);
}

}  // namespace kiln
