// kiln_gpu_node_tests: runs every ONNX node test that the GPU backend lowers on this machine's
// GPU: import, the pass pipeline to the fused stage, then lowering, NVRTC for this GPU's arch,
// the memory planner (kiln::compile_fused for --arch native) and the runtime Session, as kiln
// test-onnx --device gpu runs them; each output is compared with the expected one as
// kiln test-onnx does (|got - want| <= atol + rtol * |want|, atol 1e-4, rtol 1e-3, at least two
// units in the last place for f16 and bf16 outputs). The ctest of label gpu.
//
//   kiln_gpu_node_tests --node-tests DIR [--precision fp16|bf16|tf32] [--filter TEXT] [-q]
//
// With --precision the pipeline includes mixed precision (graph inputs and outputs keep their
// dtypes) and float outputs are judged as test-onnx judges them then: cosine similarity at
// least 0.999, with NaN and infinities where the expected output has them.
//
// Prints PASS / FAIL per case (-q: only failures), then "N passed, N failed, N skipped" (skipped:
// kiln cannot import the case, or the GPU backend does not generate one of its kernels yet).
// Exit status: 0 all passed, 1 a failure, 77 (ctest's SKIP_RETURN_CODE) when there is no CUDA
// device: it prints "no CUDA device: skipped" and never passes without running.
#include <fmt/format.h>

#include <filesystem>
#include <iostream>
#include <limits>
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

constexpr double kMinCosine = 0.999;

struct Options {
  std::string node_tests;
  std::string precision = "fp32";
  std::string filter;
  bool quiet = false;
};

// "" when `got` matches `want`: by the tolerance, or (16-bit precision, float outputs) by cosine
// similarity with NaN and infinities in place.
std::string judge(const Tensor& got, const Tensor& want, bool by_cosine) {
  by_cosine = by_cosine && is_float(want.dtype());
  const tools::Tolerance tolerance =
      by_cosine ? tools::Tolerance{std::numeric_limits<double>::infinity(), 0.0}
                : tools::tolerance_for_dtype(want.dtype(), tools::Tolerance{});
  const tools::Comparison comparison = tools::compare_tensors(got, want, tolerance);
  if (!comparison.problem.empty()) return comparison.problem;
  if (!comparison.ok) return comparison.summary();
  if (by_cosine && comparison.cosine < kMinCosine) return "cosine " + comparison.summary();
  return "";
}

// Compiles and runs one case; returns "" when every output matches, else what went wrong.
std::string run_case(NodeTestCase& test_case, bool by_cosine) {
  CompileOptions options;
  options.archs = {"native"};
  Program program = compile_fused(*test_case.graph, options).program;
  std::vector<Tensor> inputs;
  for (const Value* input : test_case.graph->inputs()) {
    inputs.push_back(test_case.inputs.at(input->name()));
  }
  const std::vector<Tensor> outputs = Session::load(std::move(program)).run(inputs);
  std::string problems;
  for (size_t k = 0; k < outputs.size() && k < test_case.expected.size(); ++k) {
    const std::string problem = judge(outputs[k], test_case.expected[k], by_cosine);
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
    NodeTestCase test_case;
    try {
      test_case = load_node_test_case(case_dir);
    } catch (const InputError&) {
      ++skipped;  // test-onnx's UNSUPPORTED and expected failures
      continue;
    }
    std::string problem;
    try {
      PipelineOptions pipeline;
      pipeline.precision = passes::parse_precision(options.precision);
      optimize(*test_case.graph, Stage::kFused, pipeline);
      problem = run_case(test_case, options.precision != "fp32");
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
    } else if (arg == "-q") {
      options.quiet = true;
    } else {
      std::cerr << "usage: kiln_gpu_node_tests --node-tests DIR [--precision fp16|bf16|tf32] "
                   "[--filter TEXT] [-q]\n";
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
