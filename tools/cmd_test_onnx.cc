// kiln test-onnx: runs ONNX backend-test cases (DIR/model.onnx + DIR/test_data_set_N/
// input_K.pb, output_K.pb) on the reference interpreter and compares with the expected outputs.
//
// Each case ends as PASS, FAIL, UNSUPPORTED (the model uses an op kiln does not support), or
// XFAIL (listed in --expected-failures with the kind of failure, error or mismatch, and a
// reason; XFAIL prints both and what the case really hit). A listed case that passes is XPASS,
// and one that fails the other way (an error where a mismatch is listed, or the reverse) is a
// FAIL: both count as failed, so the list stays true. A case whose ops are all supported must pass or be
// listed: an unexplained UnsupportedError there is a FAIL. Last line: "N passed, N failed,
// N skipped"; exit 1 if anything failed, or fewer or more than --expect-passed passed.
//
// --precision tf32|fp16|bf16 takes each graph through the pass pipeline to the fused stage with
// that precision (the mixed-precision pass) before running it. Outputs are judged by the
// precision's rule (tools/compare.h): in fp32 and tf32 (looser) element-wise atol/rtol; in fp16
// and bf16 a float output's largest error against its largest expected magnitude, and its cosine
// similarity (--min-cosine); in every precision the norm within 1%, NaN and infinities where the
// expected output has them. The PASS line reports the worst of each figure.
//
// --device gpu runs each case on this machine's GPU instead of the reference interpreter: the
// pass pipeline to the fused stage (with --precision's mixed precision), then lowering, NVRTC
// (kiln::compile_fused for --arch native) and the runtime Session, judged by the same rules. A
// case with a kernel the GPU backend does not generate is UNSUPPORTED. Without a CUDA device it
// stops before any case with the error "no CUDA device" (exit 2).
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <set>

#include "frontend/onnx_importer.h"
#include "frontend/op_support.h"
#include "frontend/proto_io.h"
#include "frontend/tensor_proto.h"
#include "ir/error.h"
#include "kiln/compiler.h"
#include "onnx/onnx.pb.h"
#include "reference/reference_interpreter.h"
#include "runtime/session.h"
#include "tools/commands.h"
#include "tools/compare.h"
#include "tools/model_inputs.h"
#include "tools/pass_options.h"

namespace kiln::tools {
namespace {

namespace fs = std::filesystem;

struct TestOnnxOptions {
  std::vector<std::string> dirs;
  std::vector<std::string> expected_failures_files;
  std::optional<double> atol, rtol;  // unset: the precision's default
  PrecisionOptions precision;
  std::string device = "cpu";
  std::optional<double> min_cosine;  // unset: the precision's default
  std::optional<int> expect_passed;
  bool quiet = false;
};

// How outputs are judged: the precision's rule (tools/compare.h: tolerance_for_precision; TF32
// keeps 10 of f32's 23 mantissa bits, so tf32 gets ten times fp32's tolerances: measured on the
// node tests, 11 matmul and causal-conv cases fail at fp32's, 4 still at 2.5 times, none at 5),
// with --atol, --rtol and --min-cosine in its place where given.
struct Judge {
  std::string precision;
  std::optional<double> atol, rtol, min_cosine;

  Tolerance tolerance_for(const Tensor& want) const {
    Tolerance tolerance = tolerance_for_precision(precision, want.dtype());
    tolerance.atol = atol.value_or(tolerance.atol);
    tolerance.rtol = rtol.value_or(tolerance.rtol);
    if (tolerance.min_cosine > 0.0) tolerance.min_cosine = min_cosine.value_or(tolerance.min_cosine);
    return tolerance;
  }
};

// The worst figures over a case's outputs, for its PASS line.
struct CaseErrors {
  double max_abs = 0.0;
  double max_error_of_max = 0.0;
  double max_rel = 0.0;
  double worst_norm_ratio = 1.0;  // the farthest from 1
  double min_cosine = 1.0;
};

enum class Outcome { kPass, kFail, kUnsupported, kExpectedFailure };

// How a case fails: it stops with an error (an unsupported dtype or attribute, a bad model), or
// it runs and an output is judged wrong.
enum class FailureKind { kError, kMismatch };

std::string_view failure_kind_name(FailureKind kind) {
  return kind == FailureKind::kError ? "error" : "mismatch";
}

struct CaseResult {
  Outcome outcome;
  std::string detail;
  FailureKind kind = FailureKind::kError;  // of a kFail
};

// A listed expected failure: the kind of failure it must end in, and why.
struct ExpectedFailure {
  FailureKind kind;
  std::string reason;
};

// Case directories: each DIR holding model.onnx, or the sorted subdirectories of DIR that do.
std::vector<fs::path> find_cases(const std::vector<std::string>& dirs) {
  std::vector<fs::path> cases;
  // The error_code overloads: a path the OS rejects (too long, no permission) is bad input.
  const auto has_model = [](const fs::path& dir) {
    std::error_code ignored;
    return fs::exists(dir / "model.onnx", ignored);
  };
  std::error_code error;
  for (const std::string& dir : dirs) {
    if (has_model(dir)) {
      cases.push_back(dir);
      continue;
    }
    if (!fs::is_directory(dir, error)) {
      throw InputError(dir + (fs::exists(dir, error) ? ": not a directory (give a case directory "
                                                       "holding model.onnx, or a parent of them)"
                                                     : ": no such directory"));
    }
    std::vector<fs::path> found;
    for (fs::directory_iterator it(dir, error), end; !error && it != end; it.increment(error)) {
      if (has_model(it->path())) found.push_back(it->path());
    }
    if (error) throw InputError(dir + ": cannot list (" + error.message() + ")");
    if (found.empty()) throw InputError(dir + ": holds no model.onnx, nor subdirectories that do");
    std::sort(found.begin(), found.end());
    cases.insert(cases.end(), found.begin(), found.end());
  }
  return cases;
}

// "CASE_NAME KIND: REASON" lines, KIND error or mismatch; '#' starts a comment line. Adds to
// `listed`.
void read_expected_failures(const std::string& path,
                            std::map<std::string, ExpectedFailure>& listed) {
  std::ifstream file(path);
  if (!file) throw InputError(path + ": cannot open expected-failures file");
  std::string line;
  int line_number = 0;
  while (std::getline(file, line)) {
    ++line_number;
    if (line.empty() || line[0] == '#') continue;
    const size_t space = line.find_first_of(" \t");
    const size_t reason_start =
        space == std::string::npos ? std::string::npos : line.find_first_not_of(" \t", space);
    const std::string rest = reason_start == std::string::npos ? "" : line.substr(reason_start);
    std::optional<FailureKind> kind;
    for (const FailureKind candidate : {FailureKind::kError, FailureKind::kMismatch}) {
      const std::string label = std::string(failure_kind_name(candidate)) + ": ";
      if (rest.starts_with(label) && rest.size() > label.size()) kind = candidate;
    }
    if (!kind) {
      throw InputError(fmt::format(
          "{}:{}: '{}' needs the kind of failure and its reason (write: CASE_NAME error: REASON "
          "or CASE_NAME mismatch: REASON)",
          path, line_number, line));
    }
    const size_t colon = rest.find(':');
    listed[line.substr(0, space)] = {*kind, rest.substr(rest.find_first_not_of(" ", colon + 1))};
  }
}

struct ModelFacts {
  std::vector<std::string> input_names;  // graph inputs that are not initializers, in order
  bool all_ops_supported = true;
};

ModelFacts read_model_facts(const fs::path& model_path) {
  onnx::ModelProto model;
  if (!onnx_import::parse_large_message(onnx_import::read_whole_file(model_path.string()), model)) {
    throw InputError(model_path.string() + ": unreadable model");
  }
  ModelFacts facts;
  std::set<std::string> initializers;
  for (const onnx::TensorProto& tensor : model.graph().initializer())
    initializers.insert(tensor.name());
  for (const onnx::ValueInfoProto& input : model.graph().input()) {
    if (!initializers.count(input.name())) facts.input_names.push_back(input.name());
  }
  const onnx_import::OpsetVersions opsets = onnx_import::opset_versions(model);
  const auto& nodes = model.graph().node();
  facts.all_ops_supported = std::all_of(nodes.begin(), nodes.end(), [&](const auto& node) {
    return onnx_import::is_supported(node, opsets);
  });
  return facts;
}

std::map<std::string, Tensor> read_data_set_inputs(const fs::path& data_dir,
                                                   const std::vector<std::string>& names) {
  std::map<std::string, Tensor> inputs;
  for (size_t k = 0; k < names.size(); ++k) {
    const fs::path file = data_dir / fmt::format("input_{}.pb", k);
    if (!fs::exists(file)) throw InputError(file.string() + ": missing");
    inputs[names[k]] = onnx_import::read_tensor_pb_file(file.string());
  }
  return inputs;
}

// Imports the model, binding graph inputs the importer needs as compile-time constants from
// this data set's values.
std::unique_ptr<Graph> import_for_data_set(const fs::path& model_path,
                                           const std::map<std::string, Tensor>& inputs) {
  onnx_import::ImportOptions options;
  while (true) {
    try {
      return onnx_import::import_onnx_file(model_path.string(), options);
    } catch (const onnx_import::ConstantInputRequired& needed) {
      auto it = inputs.find(needed.input_name());
      if (it == inputs.end() || options.bound_inputs.count(needed.input_name())) throw;
      options.bound_inputs[it->first] = it->second;
    }
  }
}

// "" when `got` passes against `want`, else why not; adds its errors to `errors`.
std::string judge_output(const Tensor& got, const Tensor& want, const Judge& judge,
                         CaseErrors& errors) {
  const Comparison comparison = compare_tensors(got, want, judge.tolerance_for(want));
  errors.max_abs = std::max(errors.max_abs, comparison.max_abs_error);
  errors.max_error_of_max = std::max(errors.max_error_of_max, comparison.max_error_of_max());
  errors.max_rel = std::max(errors.max_rel, comparison.max_rel_error);
  if (std::abs(comparison.norm_ratio - 1) > std::abs(errors.worst_norm_ratio - 1)) {
    errors.worst_norm_ratio = comparison.norm_ratio;
  }
  errors.min_cosine = std::min(errors.min_cosine, comparison.cosine);
  return comparison.ok ? "" : comparison.summary();
}

// The GPU backend refusing a kernel of a case (lowering's UnsupportedError): the case is
// UNSUPPORTED on the GPU even when the importer supports all of its ops.
class GpuBackendRefusal : public UnsupportedError {
 public:
  using UnsupportedError::UnsupportedError;
};

std::vector<Tensor> run_graph_on_gpu(const Graph& fused_graph, const std::vector<Tensor>& inputs) {
  CompileOptions options;
  options.archs = {"native"};
  // The heuristics' tactics: the same kernels every run, and no timing rounds per case (the
  // tuner checks its candidates against them on models: gpu_autotune).
  options.autotune = false;
  Program program;
  try {
    program = compile_fused(fused_graph, options).program;
  } catch (const UnsupportedError& error) {
    throw GpuBackendRefusal(error.what());
  }
  return Session::load(std::move(program)).run(inputs);
}

// Runs every data set of one case on `device`; returns "" when all outputs pass, else what
// differed.
std::string run_case(const fs::path& case_dir, const ModelFacts& facts,
                     const PrecisionOptions& precision, const std::string& device,
                     const Judge& judge, CaseErrors& errors) {
  const bool on_gpu = device == "gpu";
  std::vector<fs::path> data_sets;
  for (const fs::directory_entry& entry : fs::directory_iterator(case_dir)) {
    if (entry.path().filename().string().starts_with("test_data_set_")) data_sets.push_back(entry);
  }
  std::sort(data_sets.begin(), data_sets.end());
  if (data_sets.empty()) throw InputError(case_dir.string() + ": no test_data_set_* directory");

  for (const fs::path& data_dir : data_sets) {
    const std::map<std::string, Tensor> inputs = read_data_set_inputs(data_dir, facts.input_names);
    const std::unique_ptr<Graph> graph = import_for_data_set(case_dir / "model.onnx", inputs);
    if (precision.requested() || on_gpu) {
      PipelineOptions pipeline;
      precision.apply(pipeline);
      optimize(*graph, Stage::kFused, pipeline);
    }
    const bool retyped_io = precision.io_precision != "declared";
    std::vector<Tensor> graph_inputs;
    // With --io-precision the graph takes and gives float values in the 16-bit dtype: the data
    // set's f32 inputs are rounded to it, and the outputs are widened back (exactly) to be judged.
    for (const Value* input : graph->inputs()) {
      const Tensor& given = inputs.at(input->name());
      graph_inputs.push_back(retyped_io ? as_float_dtype(given, input->type().dtype) : given);
    }
    const std::vector<Tensor> outputs =
        on_gpu ? run_graph_on_gpu(*graph, graph_inputs) : run_reference(*graph, graph_inputs);
    for (size_t k = 0; k < outputs.size(); ++k) {
      const fs::path expected_file = data_dir / fmt::format("output_{}.pb", k);
      if (!fs::exists(expected_file)) continue;  // an optional output the test does not check
      const Tensor expected = onnx_import::read_tensor_pb_file(expected_file.string());
      const std::string problem =
          judge_output(retyped_io ? as_float_dtype(outputs[k], expected.dtype()) : outputs[k],
                       expected, judge, errors);
      if (!problem.empty()) {
        return fmt::format("{} output {} ('{}'): {}", data_dir.filename().string(), k,
                           graph->outputs()[k]->name(), problem);
      }
    }
  }
  return "";
}

CaseResult test_case(const fs::path& case_dir, const TestOnnxOptions& options, const Judge& judge,
                     const std::map<std::string, ExpectedFailure>& expected_failures) {
  const std::string name = case_dir.filename().string();
  auto listed = expected_failures.find(name);
  CaseResult result;
  bool supported_ops = true;
  try {
    const ModelFacts facts = read_model_facts(case_dir / "model.onnx");
    supported_ops = facts.all_ops_supported;
    CaseErrors errors;
    const std::string mismatch =
        run_case(case_dir, facts, options.precision, options.device, judge, errors);
    result = mismatch.empty()
                 ? CaseResult{Outcome::kPass,
                              fmt::format("max abs {:.3g} ({:.3g} of max |want|), max rel {:.3g}, "
                                          "norm ratio {:.6f}, cosine {:.6f}",
                                          errors.max_abs, errors.max_error_of_max, errors.max_rel,
                                          errors.worst_norm_ratio, errors.min_cosine)}
                 : CaseResult{Outcome::kFail, mismatch, FailureKind::kMismatch};
  } catch (const GpuBackendRefusal& error) {
    result = {Outcome::kUnsupported, std::string("GPU backend: ") + error.what()};
  } catch (const UnsupportedError& error) {
    result = {supported_ops ? Outcome::kFail : Outcome::kUnsupported, error.what()};
  } catch (const InputError& error) {
    result = {Outcome::kFail, std::string("error: ") + error.what()};
  } catch (const std::exception& error) {
    result = {Outcome::kFail, std::string("internal error: ") + error.what()};
  }
  if (listed != expected_failures.end()) {
    const ExpectedFailure& expected = listed->second;
    const std::string_view kind = failure_kind_name(expected.kind);
    if (result.outcome == Outcome::kPass) {
      return {Outcome::kFail, fmt::format("XPASS: listed as an expected {} ({}) but passes; remove "
                                          "it from the list",
                                          kind, expected.reason)};
    }
    if (result.outcome == Outcome::kFail && result.kind != expected.kind) {
      const char* what = result.kind == FailureKind::kError
                             ? "it stopped with an error"
                             : "it ran and an output was judged wrong";
      return {Outcome::kFail, fmt::format("listed as an expected {} ({}) but {}: {}", kind,
                                          expected.reason, what, result.detail)};
    }
    if (result.outcome == Outcome::kFail) {
      return {Outcome::kExpectedFailure,
              fmt::format("{} ({}: {})", expected.reason, kind, result.detail)};
    }
  }
  return result;
}

int run_test_onnx(const TestOnnxOptions& options) {
  if (options.device == "gpu") require_cuda_device();
  const std::vector<fs::path> cases = find_cases(options.dirs);
  std::map<std::string, ExpectedFailure> expected_failures;
  for (const std::string& path : options.expected_failures_files) {
    read_expected_failures(path, expected_failures);
  }
  PipelineOptions checked;
  options.precision.apply(checked);  // bad precision options fail before any case runs
  if (options.min_cosine && !passes::half_dtype(checked.precision)) {
    throw InputError("--min-cosine judges fp16 and bf16 outputs; give --precision fp16 or bf16");
  }
  const Judge judge{options.precision.precision, options.atol, options.rtol, options.min_cosine};
  int passed = 0, failed = 0, skipped = 0;
  const auto start = std::chrono::steady_clock::now();
  for (const fs::path& case_dir : cases) {
    const CaseResult result = test_case(case_dir, options, judge, expected_failures);
    const std::string name = case_dir.filename().string();
    switch (result.outcome) {
      case Outcome::kPass:
        ++passed;
        if (!options.quiet) std::cout << "PASS " << name << " (" << result.detail << ")\n";
        break;
      case Outcome::kFail:
        ++failed;
        std::cout << "FAIL " << name << ": " << result.detail << "\n";
        break;
      case Outcome::kUnsupported:
        ++skipped;
        if (!options.quiet) std::cout << "UNSUPPORTED " << name << ": " << result.detail << "\n";
        break;
      case Outcome::kExpectedFailure:
        ++skipped;
        if (!options.quiet) std::cout << "XFAIL " << name << ": " << result.detail << "\n";
        break;
    }
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::cout << fmt::format("ran {} cases in {:.1f} s\n", cases.size(), seconds);
  std::cout << fmt::format("{} passed, {} failed, {} skipped\n", passed, failed, skipped);
  if (options.expect_passed && passed != *options.expect_passed) {
    std::cout << fmt::format("FAIL: {} cases passed where {} are expected (--expect-passed)\n",
                             passed, *options.expect_passed);
    return 1;
  }
  return failed ? 1 : 0;
}

}  // namespace

void add_test_onnx_command(CLI::App& parent, int& exit_code) {
  auto options = std::make_shared<TestOnnxOptions>();
  CLI::App* command = parent.add_subcommand(
      "test-onnx", "Run ONNX backend-test cases (model.onnx + test_data_set_*) and compare");
  command->add_option("dirs", options->dirs, "Case directories, or directories of them")
      ->required();
  command->add_option("--expected-failures", options->expected_failures_files,
                      "File of 'CASE_NAME error: REASON' or 'CASE_NAME mismatch: REASON' lines: "
                      "known failures, reported as XFAIL when they fail that way (repeatable: "
                      "the lists add up)");
  command->add_option("--atol", options->atol,
                      "Absolute tolerance (default 1e-4; 1e-3 with --precision tf32; float outputs "
                      "in fp16 1e-3, bf16 1e-2)");
  command->add_option("--rtol", options->rtol,
                      "Relative tolerance (default 1e-3; 1e-2 with --precision tf32); in fp16 and "
                      "bf16 relative to a float output's largest expected magnitude (default "
                      "8 units of the format's precision: 2^-8 fp16, 2^-5 bf16)");
  add_precision_options(*command, options->precision);
  command
      ->add_option("--device", options->device,
                   "cpu (the reference interpreter, the default) or gpu (compiled for this "
                   "machine's GPU and run there)")
      ->check(CLI::IsMember({"cpu", "gpu"}));
  command->add_option("--min-cosine", options->min_cosine,
                      "With --precision fp16 or bf16: the least cosine similarity of a float "
                      "output to the expected one (default 0.999); the error and the norm (within "
                      "1%) are bounded too");
  command->add_option("--expect-passed", options->expect_passed,
                      "Fail unless exactly N cases pass (on the GPU a refused kernel makes a case "
                      "UNSUPPORTED: the count shows a regression that refuses more)")
      ->check(CLI::NonNegativeNumber);
  command->add_flag("-q,--quiet", options->quiet, "Print only failures and the totals");
  command->callback([options, &exit_code] { exit_code = run_test_onnx(*options); });
}

}  // namespace kiln::tools
