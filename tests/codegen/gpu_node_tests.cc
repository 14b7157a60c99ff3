// kiln_gpu_node_tests: runs every ONNX node test that the GPU backend lowers on this machine's
// GPU: import, the pass pipeline to the fused stage, then lowering, NVRTC for this GPU's arch,
// the memory planner (kiln::compile_fused for --arch native) and the runtime Session, as kiln
// test-onnx --device gpu runs them; each output is judged as kiln test-onnx judges it
// (tools/compare.h, tolerance_for_precision). The ctest of label gpu.
//
//   kiln_gpu_node_tests --node-tests DIR [--precision fp16|bf16|tf32] [--filter TEXT]
//                       [--expect-passed N] [-q]
//
// With --precision the pipeline includes mixed precision (graph inputs and outputs keep their
// dtypes) and outputs are judged by that precision's rule: tf32 element-wise with ten times
// fp32's tolerance; fp16 and bf16 float outputs by their largest error against the largest
// expected magnitude, the norm and cosine similarity at least 0.999.
//
// Every data set of a case runs (test_data_set_*). Prints PASS / FAIL per case (-q: only
// failures), then "N passed, N failed, N skipped" (skipped: kiln cannot import the case, or the
// GPU backend does not generate one of its kernels yet). A refusal is a skip, so --expect-passed
// N fails the run unless exactly N cases pass: the ctests give the count, and a regression that
// refuses more (or a change that lowers more) shows. Exit status: 0 all passed, 1 a failure or
// another count, 77 (ctest's SKIP_RETURN_CODE) when there is no CUDA
// device: it prints "no CUDA device: skipped" and never passes without running.
#include <fmt/format.h>

#include <filesystem>
#include <iostream>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "ir/error.h"
#include "kiln/compiler.h"
#include "runtime/session.h"
#include "tests/codegen/node_test_cases.h"
#include "tools/compare.h"

namespace kiln::testing {
namespace {

namespace fs = std::filesystem;

constexpr int kSkipExitCode = 77;

struct Options {
  std::string node_tests;
  std::string precision = "fp32";
  std::string filter;
  std::optional<int> expect_passed;
  bool quiet = false;
};

// "" when `got` matches `want` by the precision's rule (tools/compare.h: the error bounded
// element-wise, or for 16-bit float outputs against the largest expected magnitude with cosine at
// least 0.999; the norm within 1%), as kiln test-onnx judges.
std::string judge(const Tensor& got, const Tensor& want, const std::string& precision) {
  const tools::Comparison comparison =
      tools::compare_tensors(got, want, tools::tolerance_for_precision(precision, want.dtype()));
  return comparison.ok ? "" : comparison.summary();
}

// Compiles and runs one case; returns "" when every output matches, else what went wrong.
std::string run_case(NodeTestCase& test_case, const std::string& precision) {
  CompileOptions options;
  options.archs = {"native"};
  options.autotune = false;  // the heuristics' kernels, as kiln test-onnx --device gpu runs them
  Program program = compile_fused(*test_case.graph, options).program;
  std::vector<Tensor> inputs;
  for (const Value* input : test_case.graph->inputs()) {
    inputs.push_back(test_case.inputs.at(input->name()));
  }
  const std::vector<Tensor> outputs = Session::load(std::move(program)).run(inputs);
  std::string problems;
  for (size_t k = 0; k < outputs.size() && k < test_case.expected.size(); ++k) {
    const std::string problem = judge(outputs[k], test_case.expected[k], precision);
    if (!problem.empty()) {
      problems += fmt::format("{}output {}: {}", problems.empty() ? "" : "; ", k, problem);
    }
  }
  return problems;
}

int run(const Options& options) {
  try {
    require_cuda_device();
  } catch (const UnsupportedError& error) {
    std::cout << "no CUDA device: skipped (" << error.what() << ")\n";
    return kSkipExitCode;
  }
  int passed = 0, failed = 0, skipped = 0;
  for (const fs::path& case_dir : find_node_test_cases(options.node_tests)) {
    const std::string name = case_dir.filename().string();
    if (name.find(options.filter) == std::string::npos) continue;
    std::vector<NodeTestCase> data_sets;
    try {
      data_sets = load_node_test_data_sets(case_dir);
    } catch (const InputError&) {
      ++skipped;  // test-onnx's UNSUPPORTED and expected failures
      continue;
    }
    std::string problem;
    try {
      for (size_t k = 0; k < data_sets.size() && problem.empty(); ++k) {
        PipelineOptions pipeline;
        pipeline.precision = passes::parse_precision(options.precision);
        optimize(*data_sets[k].graph, Stage::kFused, pipeline);
        problem = run_case(data_sets[k], options.precision);
        if (!problem.empty()) {
          problem = fmt::format("data set {} of {}: {}", k + 1, data_sets.size(), problem);
        }
      }
    } catch (const UnsupportedError&) {
      ++skipped;
      continue;
    } catch (const std::exception& error) {
      problem = error.what();
    }
    if (!problem.empty()) {
      ++failed;
      std::cout << "FAIL " << name << ": " << problem << "\n";
    } else {
      ++passed;
      if (!options.quiet) std::cout << "PASS " << name << "\n";
    }
  }
  std::cout << fmt::format("{} passed, {} failed, {} skipped\n", passed, failed, skipped);
  if (options.expect_passed && passed != *options.expect_passed) {
    std::cout << fmt::format(
        "FAIL: {} cases passed where {} are expected (--expect-passed): a case the GPU backend "
        "now refuses, or one it newly runs (then raise the count in tests/codegen/CMakeLists.txt)\n",
        passed, *options.expect_passed);
    return 1;
  }
  return failed ? 1 : 0;
}

}  // namespace
}  // namespace kiln::testing

int main(int argc, char** argv) {
  kiln::testing::Options options;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--node-tests" && i + 1 < argc) {
      options.node_tests = argv[++i];
    } else if (arg == "--precision" && i + 1 < argc) {
      options.precision = argv[++i];
    } else if (arg == "--filter" && i + 1 < argc) {
      options.filter = argv[++i];
    } else if (arg == "--expect-passed" && i + 1 < argc) {
      options.expect_passed = std::stoi(argv[++i]);
    } else if (arg == "-q") {
      options.quiet = true;
    } else {
      std::cerr << "usage: kiln_gpu_node_tests --node-tests DIR [--precision fp16|bf16|tf32] "
                   "[--filter TEXT] [--expect-passed N] [-q]\n";
      return 2;
    }
  }
  try {
    return kiln::testing::run(options);
  } catch (const std::exception& error) {
    std::cerr << "kiln_gpu_node_tests: " << error.what() << "\n";
    return 2;
  }
}
