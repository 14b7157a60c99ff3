// kiln_compile_all_kernels: lowers every ONNX node test (and any models given) to CUDA kernels and
// compiles each distinct kernel with NVRTC for the target archs, in one parallel batch, with a
// fresh kernel cache so that every kernel really compiles. The ctest of label codegen.
//
//   kiln_compile_all_kernels [--arch sm_80,sm_90] [--precisions fp32,fp16,...]
//                            [--node-tests DIR] [MODEL.onnx...]
//
// Node tests lower strictly: a case that kiln cannot import, or whose graph has a kernel the
// GPU backend does not generate (UnsupportedError), is counted and left out. Models lower with
// CodegenOptions::skip_unsupported, so their supported kernels compile even where another is
// refused; the skipped kernel nodes are counted per op. Each model lowers once per precision of
// --precisions (the mixed-precision pass; default fp32), so 16-bit kernels compile too.
// Prints the figures; exits 1 when anything fails that is not a known refusal (a kernel NVRTC
// rejects, an internal error).
#include <fmt/format.h>
#include <stdlib.h>

#include <filesystem>
#include <iostream>
#include <map>
#include <string>
#include <vector>

#include "codegen/compile_program.h"
#include "codegen/lower.h"
#include "frontend/onnx_importer.h"
#include "ir/error.h"
#include "passes/pipeline.h"
#include "tests/codegen/node_test_cases.h"

namespace kiln::testing {
namespace {

namespace fs = std::filesystem;

struct Batch {
  Program kernels;                                          // every distinct kernel
  std::map<std::string, std::vector<std::string>> used_by;  // kernel name -> cases and models
  int failures = 0;
};

void take_kernels(Batch& batch, const Program& program, const std::string& owner) {
  for (const ProgramKernel& kernel : program.kernels) {
    std::vector<std::string>& owners = batch.used_by[kernel.name];
    if (owners.empty()) batch.kernels.kernels.push_back(kernel);
    owners.push_back(owner);
  }
}

void to_fused_stage(Graph& graph, passes::Precision precision = passes::Precision::kFP32) {
  passes::PassContext context;
  context.verify_each = true;
  context.precision = precision;
  passes::run_passes(graph, passes::default_pipeline(passes::Stage::kFused), context);
}

// The op of an UnsupportedError from lowering: the first refused kernel's op.
std::string refused_op(const std::string& message) {
  const std::string marker = "yet: ";
  const size_t start = message.find(marker);
  if (start == std::string::npos) return "other";
  const size_t end = message.find_first_of(" :;", start + marker.size());
  return message.substr(start + marker.size(), end - start - marker.size());
}

void lower_node_tests(const fs::path& dir, const codegen::CodegenOptions& options, Batch& batch) {
  int cases = 0, not_imported = 0, lowered = 0;
  std::map<std::string, int> refused;
  for (const fs::path& case_dir : find_node_test_cases(dir)) {
    ++cases;
    const std::string name = case_dir.filename().string();
    NodeTestCase test_case;
    try {
      test_case = load_node_test_case(case_dir);
      to_fused_stage(*test_case.graph);
    } catch (const InputError&) {
      ++not_imported;  // what test-onnx reports as UNSUPPORTED or an expected failure
      continue;
    }
    try {
      take_kernels(batch, codegen::lower_graph(*test_case.graph, options), name);
      ++lowered;
    } catch (const UnsupportedError& error) {
      ++refused[refused_op(error.what())];
    } catch (const std::exception& error) {
      std::cout << "FAIL " << name << ": " << error.what() << "\n";
      ++batch.failures;
    }
  }
  int refused_total = 0;
  std::string reasons;
  for (const auto& [op, count] : refused) {
    refused_total += count;
    reasons += fmt::format("{}{} {}", reasons.empty() ? "" : ", ", op, count);
  }
  std::cout << fmt::format(
      "node tests: {} cases, {} not imported by kiln; {} lowered to CUDA, {} refused by the GPU "
      "backend ({})\n",
      cases, not_imported, lowered, refused_total, reasons);
}

void lower_model(const std::string& path, const std::string& precision,
                 codegen::CodegenOptions options, Batch& batch) {
  options.skip_unsupported = true;
  const std::string name = fmt::format("{} ({})", path, precision);
  try {
    const std::unique_ptr<Graph> graph = onnx_import::import_onnx_file(path);
    to_fused_stage(*graph, passes::parse_precision(precision));
    codegen::LoweringReport report;
    const Program program = codegen::lower_graph(*graph, options, &report);
    take_kernels(batch, program, fs::path(name).filename().string());
    std::map<std::string, int> skipped;
    for (const std::string& entry : report.skipped) ++skipped[entry.substr(0, entry.find(' '))];
    std::string list;
    for (const auto& [op, count] : skipped) list += fmt::format(" {} {}", op, count);
    std::cout << fmt::format("{}: {} steps, {} distinct kernels; {} kernel nodes skipped:{}\n",
                             name, program.steps.size(), program.kernels.size(),
                             report.skipped.size(), list);
  } catch (const std::exception& error) {
    std::cout << "FAIL " << name << ": " << error.what() << "\n";
    ++batch.failures;
  }
}

void compile_batch(Batch& batch, const codegen::CodegenOptions& options) {
  try {
    const codegen::CompileStats stats = codegen::compile_program(batch.kernels, options);
    std::cout << fmt::format(
        "compiled {} distinct kernels for {}: {} NVRTC compilations in {:.1f} s\n",
        batch.kernels.kernels.size(), fmt::join(options.archs, ", "), stats.compilations,
        stats.seconds);
  } catch (const std::exception& error) {
    std::string message = error.what();
    for (const auto& [name, owners] : batch.used_by) {
      if (message.find(name) != std::string::npos) {
        message += "\n(kernel " + name + " comes from " + owners.front() + ")";
      }
    }
    std::cout << "FAIL compiling: " << message << "\n";
    ++batch.failures;
  }
}

int run(int argc, char** argv) {
  codegen::CodegenOptions options;
  std::string node_tests;
  std::vector<std::string> models, precisions = {"fp32"};
  const auto split = [](std::string list) {
    std::vector<std::string> items;
    while (!list.empty()) {
      const size_t comma = list.find(',');
      items.push_back(list.substr(0, comma));
      list = comma == std::string::npos ? "" : list.substr(comma + 1);
    }
    return items;
  };
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--arch" && i + 1 < argc) {
      options = codegen::CodegenOptions::for_archs(split(argv[++i]));
    } else if (arg == "--precisions" && i + 1 < argc) {
      precisions = split(argv[++i]);
    } else if (arg == "--node-tests" && i + 1 < argc) {
      node_tests = argv[++i];
    } else {
      models.push_back(arg);
    }
  }
  // A fresh cache: every kernel compiles (kernels shared by several cases compile once).
  std::string cache_template = (fs::temp_directory_path() / "kiln-compile-all-XXXXXX").string();
  if (!mkdtemp(cache_template.data())) throw InputError("cannot create a temporary directory");
  options.cache_dir = cache_template;

  Batch batch;
  if (!node_tests.empty()) lower_node_tests(node_tests, options, batch);
  for (const std::string& model : models) {
    for (const std::string& precision : precisions) lower_model(model, precision, options, batch);
  }
  compile_batch(batch, options);
  fs::remove_all(options.cache_dir);
  std::cout << (batch.failures ? fmt::format("{} failures\n", batch.failures) : "ok\n");
  return batch.failures ? 1 : 0;
}

}  // namespace
}  // namespace kiln::testing

int main(int argc, char** argv) {
  try {
    return kiln::testing::run(argc, argv);
  } catch (const std::exception& error) {
    std::cerr << "kiln_compile_all_kernels: " << error.what() << "\n";
    return 2;
  }
}
