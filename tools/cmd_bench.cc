// kiln bench: compiles a model in each variant of --compare (unfused: one kernel per op;
// fused: the whole pipeline), runs every variant on the GPU, checks its outputs against kiln's
// CPU reference interpreter of the f32 model (tools/compare.h, tolerance_for_model at the
// judged_precision: the error, the norm and, in 16 bits, cosine — a model holding f16 values of
// its own is judged in 16 bits at any --precision; integer outputs exactly; max abs and rel
// error and cosine printed; a variant that does not match is a MISMATCH row and exit status
// 1), then times it: CUDA-event timings
// of CUDA-graph replays after a warm-up, reported as median and p90, with each variant's speedup
// over the first that ran; then checks one more run, through the CUDA graph (its concurrent
// branches and early launches: --steps-in-order, --no-early-launch) as the first was not. Inputs
// come from --input files or are seeded random numbers (never zeros; integer inputs take 0 and 1,
// valid as token ids and masks). --json writes the figures.
//
// --profile N times each kernel launch as well (Session::profile_steps: events between the steps
// of a captured graph) and prints each variant's N slowest launches with their share of the sum,
// launch geometry, the ONNX nodes of their kernel (of every launch of that kernel: steps that
// compute the same code share one kernel), the kernel's tactic and, for contractions and
// attention, the TFLOP/s the launch achieved (its source header's flops over its time,
// runtime/kernel_header.h); the JSON gets every launch, slowest first.
//
// --devices all|0,1 also runs the last variant of --compare on each listed GPU at once, one
// Session and host thread per device (tools/bench_devices.h): each device's outputs checked, its
// median and p90 latency, and the throughput of one device alone and of all together.
//
// A variant that fails (an op the GPU backend does not generate, a kernel NVRTC rejects, a CUDA
// error) is reported in its table row and as {"error": ...} in the JSON, the other variants still
// run, and the exit status is 1. Progress (the stage, a bar of kernels compiled) goes to stderr
// when it is a terminal or with --progress (tools/progress.h); stdout and --json never carry it.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <fstream>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>

#include "ir/error.h"
#include "kiln/compiler.h"
#include "kiln/reference_cache.h"
#include "passes/precision_policy.h"
#include "runtime/copy_bandwidth.h"
#include "runtime/device_list.h"
#include "runtime/kernel_header.h"
#include "runtime/session.h"
#include "runtime/timing_stats.h"
#include "tools/bench_devices.h"
#include "tools/commands.h"
#include "tools/compare.h"
#include "tools/input_shapes.h"
#include "tools/library_fallback_note.h"
#include "tools/model_inputs.h"
#include "tools/pass_options.h"
#include "tools/profile_report.h"
#include "tools/progress.h"
#include "tools/tactic_options.h"

namespace kiln::tools {
namespace {

struct BenchOptions {
  std::string model;
  std::vector<std::string> compare = {"unfused", "fused"};
  std::vector<std::string> inputs;
  std::vector<std::string> input_shapes;
  std::string arch = "native";
  int iterations = 100;
  int warmup = 20;
  int graph_copies = 1;  // --graph-copies: the steps a timed replay's graph holds, times over
  std::string json_path;
  bool progress = false;
  int profile = 0;  // slowest launches to print per variant; 0: no per-launch profile
  std::string devices;  // --devices: "all" or "0,1"; empty: the current device only
  bool steps_in_order = false;
  bool no_early_launch = false;
  bool concat_copies = false;
  PassOptions passes;
  TacticOptions tactics;
};

// Seeded inputs of the model's signature: floats from N(0, 1), integers and bools 0 or 1.
std::vector<Tensor> random_inputs(const Graph& graph) {
  std::mt19937 generator(1234);
  std::normal_distribution<float> normal;
  std::vector<Tensor> inputs;
  for (const Value* input : graph.inputs()) {
    Tensor tensor(input->type());
    for (int64_t i = 0; i < tensor.num_elements(); ++i) {
      if (is_float(tensor.dtype())) {
        tensor.set_float(i, normal(generator));
      } else {
        tensor.set_int(i, static_cast<int64_t>(generator() & 1));
      }
    }
    inputs.push_back(std::move(tensor));
  }
  return inputs;
}

// With --io-precision fp16|bf16 the program takes its float inputs in that dtype: the f32 inputs
// are rounded to it here and for the reference run alike (round_float_inputs), so both see the
// same values.
std::vector<Tensor> round_float_inputs(std::vector<Tensor> inputs,
                                       const PrecisionOptions& options) {
  const std::optional<DType> io_dtype = passes::parse_io_precision(options.io_precision);
  if (!io_dtype) return inputs;
  for (Tensor& input : inputs) {
    if (is_float(input.dtype())) input = input.converted(*io_dtype).converted(input.dtype());
  }
  return inputs;
}

std::vector<Tensor> in_program_dtypes(const Program& program, const std::vector<Tensor>& inputs) {
  std::vector<Tensor> converted;
  for (size_t i = 0; i < inputs.size(); ++i) {
    converted.push_back(as_float_dtype(inputs[i], program.buffers[program.inputs[i]].type.dtype));
  }
  return converted;
}

// Every launch of `session`'s program with its median time, slowest first.
// The bytes of a step's argument buffers, each counted once.
int64_t step_buffer_bytes(const Program& program, const ProgramStep& step) {
  std::vector<int> buffers = step.args;
  std::sort(buffers.begin(), buffers.end());
  buffers.erase(std::unique(buffers.begin(), buffers.end()), buffers.end());
  int64_t bytes = 0;
  for (const int buffer : buffers) {
    bytes += static_cast<int64_t>(program.buffers[static_cast<size_t>(buffer)].type.num_bytes());
  }
  return bytes;
}

nlohmann::json profile_launches(Session& session, const BenchOptions& options) {
  const std::vector<float> step_ms = session.profile_steps(options.iterations, options.warmup);
  const Program& program = session.program();
  const std::vector<std::string>& library_notes = session.library_notes();
  nlohmann::json launches = nlohmann::json::array();
  for (size_t i = 0; i < step_ms.size(); ++i) {
    const ProgramStep& step = program.steps[i];
    const ProgramKernel& kernel = program.kernels[step.kernel];
    // A library call's tactic says what ran: cuBLASLt's algorithm, or its kernel and why.
    std::string tactic = library_notes[i].empty() ? kernel_tactic(kernel) : library_notes[i];
    if (session.library_call_stands_in(i)) tactic = "its kernel, in place of cuBLASLt: " + tactic;
    launches.push_back({{"step", i},
                        {"kernel", kernel.name},
                        {"ms", step_ms[i]},
                        {"grid", step.grid},
                        {"block", step.block},
                        {"shared_bytes", step.shared_bytes},
                        {"tactic", tactic},
                        {"flops", kernel_flops(kernel)},
                        {"bytes", step_buffer_bytes(program, step)},
                        {"nodes", kernel.provenance}});
  }
  std::stable_sort(launches.begin(), launches.end(), [](const auto& a, const auto& b) {
    return a["ms"].template get<double>() > b["ms"].template get<double>();
  });
  return launches;
}

// The profile's yardstick for memory-bound launches: device 0's copy bandwidth, measured now
// (also into `report`), or why it was not.
std::string copy_bandwidth_line(nlohmann::json& report) {
  try {
    const CopyBandwidth copy = measure_copy_bandwidth(0);
    report["copy_bandwidth_gb_per_s"] = copy.gb_per_second;
    return fmt::format(
        "\ncopy bandwidth: {:.0f} GB/s (cudaMemcpyAsync device to device, {} MiB read and "
        "written, median of {})\n",
        copy.gb_per_second, copy.bytes >> 20, copy.copies);
  } catch (const std::exception& error) {
    return fmt::format("\ncopy bandwidth not measured: {}\n", error.what());
  }
}

// How the tactics were chosen: the summary, and each problem's candidates and times.
nlohmann::json tactics_json(const AutotuneReport& report) {
  nlohmann::json sites = nlohmann::json::array();
  for (const TunedSite& site : report.sites) {
    sites.push_back({{"label", site.label},
                     {"nodes", site.nodes},
                     {"tactics", site.tactics},
                     {"ms", site.ms},
                     {"chosen", site.tactics[static_cast<size_t>(site.chosen)]},
                     {"notes", site.notes},
                     {"from_cache", site.from_cache}});
  }
  return {{"summary", tactic_summary(report)}, {"seconds", report.seconds}, {"sites", sites}};
}

// The outputs against the CPU reference's: the worst figures over the outputs and what first
// does not match ("" when all do).
struct OutputCheck {
  double worst_cosine = 1.0;
  double max_abs = 0.0;
  double max_rel = 0.0;
  std::string mismatch;
};

// The CPU reference's outputs and the precision they are judged at (judged_precision).
struct Reference {
  std::vector<Tensor> outputs;
  std::string precision;
};

OutputCheck check_outputs(const std::vector<Tensor>& outputs, const Reference& reference) {
  OutputCheck check;
  for (size_t i = 0; i < outputs.size(); ++i) {
    const Tensor& want = reference.outputs[i];
    const Tolerance tolerance = tolerance_for_model(reference.precision, want.dtype());
    const Comparison comparison =
        compare_tensors(as_float_dtype(outputs[i], want.dtype()), want, tolerance);
    check.worst_cosine = std::min(check.worst_cosine, comparison.cosine);
    check.max_abs = std::max(check.max_abs, comparison.max_abs_error);
    check.max_rel = std::max(check.max_rel, comparison.max_rel_error);
    if (!comparison.ok && check.mismatch.empty()) {
      check.mismatch = fmt::format("output {}: {}", i, comparison.summary());
    }
  }
  return check;
}

// Compiles `variant` for this GPU, runs it on `inputs`, compares with `reference` and times it;
// returns its figures (kernel_launches, compile_seconds, max_abs_error, max_rel_error, cosine,
// median_ms, p90_ms); with `keep_program`, a copy of the compiled program there.
// Throws what compiling, loading or running throws.
nlohmann::json bench_variant(const std::string& variant, const BenchOptions& options,
                             const std::map<std::string, Shape>& input_shapes,
                             const std::vector<Tensor>& inputs, const Reference& reference,
                             Progress& progress, nlohmann::json& report, Program* keep_program) {
  CompileOptions compile_options;
  compile_options.archs = {options.arch};
  compile_options.pipeline = options.passes.pipeline();
  compile_options.pipeline.fusion = variant == "fused";
  compile_options.concat_views = !options.concat_copies;
  compile_options.autotune = options.tactics.setting();
  compile_options.forced_tactic = options.tactics.forced;
  compile_options.library_tactics = !options.tactics.no_library;
  compile_options.on_progress = [&](size_t done, size_t total) {
    progress.advance("kiln bench: compiling " + variant + " kernels (NVRTC)", done, total);
  };
  progress.stage("compiling " + variant);
  const auto start = std::chrono::steady_clock::now();
  CompiledModel compiled = compile(options.model, compile_options, input_shapes);
  options.passes.print_refusals(compiled.refusals);
  std::cerr << "kiln bench: " << variant << " " << tactic_summary(compiled.autotune) << "\n";
  if (options.tactics.explain) std::cerr << tactic_table(compiled.autotune);
  Program program = std::move(compiled.program);
  if (keep_program) *keep_program = program;
  const double compile_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const size_t steps = program.steps.size();
  progress.stage("loading " + variant + " onto the GPU");
  Session session = Session::load(std::move(program), {.steps_in_order = options.steps_in_order,
                                                       .early_launch = !options.no_early_launch});
  if (!report.contains("device")) report["device"] = session.device_description();
  std::cerr << library_fallback_note(session);
  progress.stage("running " + variant + " (" + std::to_string(steps) + " kernel launches)");
  const std::vector<Tensor> program_inputs = in_program_dtypes(session.program(), inputs);
  const std::vector<Tensor> outputs = session.run(program_inputs);

  nlohmann::json entry;
  entry["kernel_launches"] = steps;
  entry["compile_seconds"] = compile_seconds;
  entry["tactics"] = tactics_json(compiled.autotune);
  const OutputCheck check = check_outputs(outputs, reference);
  entry["max_abs_error"] = check.max_abs;
  entry["max_rel_error"] = check.max_rel;
  entry["cosine"] = check.worst_cosine;
  entry["matches_reference"] = check.mismatch.empty();
  if (!check.mismatch.empty()) entry["mismatch"] = check.mismatch;
  progress.stage("timing " + variant + " (" + std::to_string(options.warmup) + " + " +
                 std::to_string(options.iterations) + " CUDA-graph replays)");
  const std::vector<float> times =
      session.time(options.iterations, options.warmup, options.graph_copies);
  if (options.graph_copies > 1) entry["graph_copies"] = options.graph_copies;
  entry["median_ms"] = percentile(times, 0.5);
  entry["p90_ms"] = percentile(times, 0.9);
  // The first run launched the kernels one by one; the timed ones replayed the CUDA graph (its
  // concurrent branches, its early launches), so one more run through the graph is checked too:
  // the errors and the cosine reported are the worse of the two runs'.
  const OutputCheck replayed = check_outputs(session.run(program_inputs), reference);
  entry["max_abs_error"] = std::max(check.max_abs, replayed.max_abs);
  entry["max_rel_error"] = std::max(check.max_rel, replayed.max_rel);
  entry["cosine"] = std::min(check.worst_cosine, replayed.worst_cosine);
  if (check.mismatch.empty() && !replayed.mismatch.empty()) {
    entry["matches_reference"] = false;
    entry["mismatch"] = "in a run of the CUDA graph (the first run matched): " + replayed.mismatch;
  }
  if (options.profile > 0) {
    progress.stage("profiling " + variant + " launch by launch");
    entry["profile"] = profile_launches(session, options);
  }
  return entry;
}

int run_bench(const BenchOptions& options) {
  for (const std::string& variant : options.compare) {
    if (variant != "fused" && variant != "unfused") {
      throw InputError("--compare '" + variant + "': variants are unfused and fused");
    }
  }
  require_cuda_device();
  const std::vector<int> devices =
      options.devices.empty() ? std::vector<int>{} : bench_device_list(options.devices);
  Progress progress = Progress::on_stderr("kiln bench: ", options.progress);
  std::map<std::string, Shape> input_shapes = parse_input_shapes(options.input_shapes);
  const std::unique_ptr<Graph> reference_graph =
      load_model(options.model, input_shapes,
                 [](const std::string& note) { std::cerr << "kiln bench: note: " << note << "\n"; });
  // Every variant compiles for the shapes the reference graph got (symbolic dims defaulted to
  // 1 there, with the note once).
  if (options.model.ends_with(".onnx")) {
    for (const Value* input : reference_graph->inputs()) {
      input_shapes[input->name()] = input->type().shape;
    }
  }
  const std::vector<Tensor> inputs = round_float_inputs(
      options.inputs.empty()
          ? random_inputs(*reference_graph)
          : order_inputs(graph_signature(*reference_graph), read_input_files(options.inputs)),
      options.passes.precision);
  progress.stage("CPU reference run");
  bool reference_from_cache = false;
  const Reference reference = {
      cached_reference_outputs(options.model, *reference_graph, inputs, "", &reference_from_cache),
      judged_precision(options.passes.precision.precision, *reference_graph)};
  if (reference_from_cache) {
    std::cerr << "kiln bench: the CPU reference's outputs from the cache (same kiln binary, "
                 "model and inputs)\n";
  }

  nlohmann::json report;
  report["model"] = options.model;
  report["precision"] = options.passes.precision.precision;
  report["iterations"] = options.iterations;
  double baseline_ms = 0;
  bool any_failed = false;
  std::vector<std::string> rows;
  std::optional<Program> devices_program;  // the last variant's, for --devices
  for (const std::string& variant : options.compare) {
    // A variant that fails (an op the GPU backend does not generate, a kernel NVRTC rejects) is
    // reported in its row and the JSON; the other variants still run (the file comment says
    // what --profile adds).
    try {
      const bool for_devices = !devices.empty() && variant == options.compare.back();
      if (for_devices) devices_program.emplace();
      nlohmann::json entry =
          bench_variant(variant, options, input_shapes, inputs, reference, progress, report,
                        for_devices ? &*devices_program : nullptr);
      const double median = entry["median_ms"].get<double>();
      if (baseline_ms == 0) baseline_ms = median;
      entry["speedup"] = baseline_ms / median;
      rows.push_back(fmt::format(
          "{:<8} {:>8} {:>10.4f} {:>10.4f} {:>8.2f}x {:>11.3g} {:>11.3g} {:>10.6f}", variant,
          entry["kernel_launches"].get<size_t>(), median, entry["p90_ms"].get<double>(),
          baseline_ms / median, entry["max_abs_error"].get<double>(),
          entry["max_rel_error"].get<double>(), entry["cosine"].get<double>()));
      if (entry.contains("mismatch")) {
        any_failed = true;
        rows.push_back(fmt::format("{:<8} MISMATCH with the CPU reference: {}", "",
                                   entry["mismatch"].get<std::string>()));
      }
      report[variant] = std::move(entry);
    } catch (const std::exception& error) {
      any_failed = true;
      if (variant == options.compare.back()) devices_program.reset();
      report[variant] = {{"error", error.what()}};
      std::cerr << "kiln bench: " << variant << " failed: " << error.what() << "\n";
      rows.push_back(fmt::format("{:<8} failed: {}", variant, error.what()));
    }
  }
  const std::string device =
      report.contains("device") ? report["device"].get<std::string>() : std::string("the GPU");
  std::cout << fmt::format(
      "{} on {}, {}{}\n", options.model, device, options.passes.precision.precision,
      options.graph_copies > 1
          ? fmt::format("; times per copy of a graph of {} copies", options.graph_copies)
          : "");
  std::cout << fmt::format("{:<8} {:>8} {:>10} {:>10} {:>9} {:>11} {:>11} {:>10}\n", "variant",
                           "kernels", "median ms", "p90 ms", "speedup", "max abs", "max rel",
                           "cosine");
  for (const std::string& row : rows) std::cout << row << "\n";
  bool profiled = false;
  for (const std::string& variant : options.compare) {
    if (report[variant].contains("profile")) {
      std::cout << profile_table(variant, report[variant]["profile"], options.profile);
      profiled = true;
    }
  }
  if (profiled) std::cout << copy_bandwidth_line(report);
  if (devices_program) {
    const std::string variant = options.compare.back();
    progress.stage("running " + variant + " on " + options.devices);
    try {
      report["devices"] = bench_devices(
          *devices_program, devices, in_program_dtypes(*devices_program, inputs),
          [&](const std::vector<Tensor>& outputs) {
            return check_outputs(outputs, reference).mismatch;
          },
          options.iterations, options.warmup);
      std::cout << devices_table(variant, report["devices"]);
      for (const nlohmann::json& device : report["devices"]["per_device"]) {
        if (device.contains("mismatch")) any_failed = true;
      }
    } catch (const std::exception& error) {
      any_failed = true;
      report["devices"] = {{"error", error.what()}};
      std::cout << fmt::format("--devices {}: failed: {}\n", options.devices, error.what());
    }
  }
  if (!options.json_path.empty()) {
    std::ofstream file(options.json_path);
    if (!(file << report.dump(2) << "\n")) throw InputError(options.json_path + ": cannot write");
  }
  return any_failed ? 1 : 0;
}

}  // namespace

void add_bench_command(CLI::App& parent, int& exit_code) {
  auto options = std::make_shared<BenchOptions>();
  CLI::App* command = parent.add_subcommand(
      "bench", "Time a model on the GPU: unfused vs fused, checked against the CPU reference");
  command->add_option("model", options->model, "MODEL.onnx or FILE.kir")->required();
  command->add_option("--compare", options->compare, "Variants, in order: unfused,fused")
      ->delimiter(',');
  command->add_option("--input", options->inputs,
                      "NAME=FILE.npy|FILE.pb (default: seeded random inputs)");
  command->add_option("--input-shape", options->input_shapes,
                      "Bind symbolic input dims: NAME=1x3x224x224 (repeatable)");
  command->add_option("--arch", options->arch,
                      "Generate kernels for this arch rather than this GPU's own (native: "
                      "sm_90a on an H100/H200, its wgmma kernels); it must run on this GPU, "
                      "e.g. sm_90 for the mma.sync kernels on a Hopper GPU");
  command->add_option("--iters", options->iterations, "Timed CUDA-graph replays (default 100)")
      ->check(CLI::PositiveNumber);
  command->add_option("--warmup", options->warmup, "Untimed replays first (default 20)")
      ->check(CLI::NonNegativeNumber);
  command
      ->add_option("--graph-copies", options->graph_copies,
                   "Time replays of one CUDA graph holding the program's steps N times over, "
                   "each copy after the one before, and report the time per copy: a run "
                   "without a graph launch of its own, as a library call is timed in a graph of "
                   "N calls (default 1: the program's own graph, as `kiln run` launches it)")
      ->check(CLI::Range(1, 10000));
  command->add_option("--json", options->json_path, "Write the figures as JSON");
  command
      ->add_option("--profile", options->profile,
                   "Also time every kernel launch (events between the steps of a captured graph) "
                   "and print each variant's N slowest: TFLOP/s where the kernel states its flops, "
                   "GB/s of its buffers' bytes (each counted once), its ONNX nodes and tactic; "
                   "then the GPU's copy bandwidth (device-to-device copies, measured)")
      ->check(CLI::PositiveNumber);
  command->add_flag("--steps-in-order", options->steps_in_order,
                    "Chain each kernel after the one before in the CUDA graph instead of running "
                    "independent kernels at once (to measure what that gains)");
  command->add_flag("--no-early-launch", options->no_early_launch,
                    "Start each kernel of the CUDA graph only after the kernels it depends on "
                    "have finished, rather than while they finish (sm_90+; to measure what early "
                    "launch gains)");
  command->add_flag("--concat-copies", options->concat_copies,
                    "Copy each concat's operands into its buffer with a kernel, rather than have "
                    "their producers write their slices of it (to measure what that gains)");
  command->add_flag("--progress", options->progress,
                    "Show progress on stderr (stages, a bar of kernels compiled) even when "
                    "stderr is not a terminal (it is shown on a terminal anyway)");
  command->add_option("--devices", options->devices,
                      "Also run the last --compare variant on these GPUs at once, one Session "
                      "and host thread each: all, or indices such as 0,1; prints each device's "
                      "latency and the throughput (batch x replays / wall time) against one "
                      "device")
      ->check([](const std::string& spec) -> std::string {
        if (spec == "all") return "";
        try {
          parse_device_indices(spec);  // which devices exist is checked once a GPU is asked
          return "";
        } catch (const InputError& error) {
          return error.what();
        }
      });
  add_pass_options(*command, options->passes);
  add_tactic_options(*command, options->tactics);
  command->callback([options, &exit_code] { exit_code = run_bench(*options); });
}

}  // namespace kiln::tools
