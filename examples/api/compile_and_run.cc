// Example: an application compiling and running a model through kiln's C++ API (kiln/kiln.h).
// Compiles MODEL.onnx for the given GPU archs (the fused stage, fp32 or another precision),
// saves the program, prints the fused IR's summary, runs the model on the CPU reference
// interpreter and, when a CUDA device is present, the compiled program on the GPU, comparing the
// two.
//
//   usage: compile_and_run MODEL.onnx OUT.kiln [--arch sm_80,sm_90|native] [--precision fp16]
//                          [--input-shape NAME=1x1x28x28]
//
// Build: link the kiln_driver library (examples/api/CMakeLists.txt). Exit codes as kiln's:
// 0 success, 1 the GPU's outputs differ from the reference, 2 bad input, 3 internal error.
#include <cmath>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "kiln/kiln.h"

namespace {

struct Arguments {
  std::string model, output;
  std::vector<std::string> archs = {"sm_80", "sm_90"};
  std::string precision = "fp32";
  std::map<std::string, kiln::Shape> input_shapes;
};

std::vector<std::string> split(const std::string& text, char separator) {
  std::vector<std::string> parts;
  size_t begin = 0;
  for (size_t end; (end = text.find(separator, begin)) != std::string::npos; begin = end + 1) {
    parts.push_back(text.substr(begin, end - begin));
  }
  parts.push_back(text.substr(begin));
  return parts;
}

Arguments parse_arguments(int argc, char** argv) {
  Arguments arguments;
  std::vector<std::string> positional;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    const bool has_value = i + 1 < argc;
    if (arg == "--arch" && has_value) {
      arguments.archs = split(argv[++i], ',');
    } else if (arg == "--precision" && has_value) {
      arguments.precision = argv[++i];
    } else if (arg == "--input-shape" && has_value) {
      const std::vector<std::string> spec = split(argv[++i], '=');
      if (spec.size() != 2) throw kiln::InputError("--input-shape expects NAME=1x1x28x28");
      kiln::Shape shape;
      for (const std::string& dim : split(spec[1], 'x')) shape.push_back(std::stoll(dim));
      arguments.input_shapes[spec[0]] = shape;
    } else if (arg.starts_with("-")) {
      throw kiln::InputError("unknown option '" + arg + "'");
    } else {
      positional.push_back(arg);
    }
  }
  if (positional.size() != 2) throw kiln::InputError("expected MODEL.onnx and OUT.kiln");
  arguments.model = positional[0];
  arguments.output = positional[1];
  return arguments;
}

// An input of `type` holding 0.0, 0.1, ..., 0.9, 0.0, ... (integers: 0).
kiln::Tensor patterned_input(const kiln::TensorType& type) {
  kiln::Tensor tensor(type);
  for (int64_t i = 0; i < tensor.num_elements(); ++i) tensor.set_double(i, 0.1 * (i % 10));
  return tensor;
}

// The largest |got - want| / (atol + rtol·|want|) over the elements: at most 1 when every
// element is within the tolerance.
double worst_error(const kiln::Tensor& got, const kiln::Tensor& want, double atol, double rtol) {
  double worst = 0;
  for (int64_t i = 0; i < want.num_elements(); ++i) {
    const double error = std::abs(got.get_double(i) - want.get_double(i));
    worst = std::max(worst, error / (atol + rtol * std::abs(want.get_double(i))));
  }
  return worst;
}

int run(const Arguments& arguments) {
  kiln::CompileOptions options;
  options.archs = arguments.archs;
  options.pipeline.precision = kiln::passes::parse_precision(arguments.precision);
  const kiln::CompiledModel compiled =
      kiln::compile(arguments.model, options, arguments.input_shapes);
  kiln::write_program(compiled.program, arguments.output);
  std::printf("compiled %zu kernels (%zu launches) for %s\nwrote %s\n",
              compiled.program.kernels.size(), compiled.program.steps.size(),
              compiled.target.describe().c_str(), arguments.output.c_str());

  // The same model at the fused stage, as the compiled program computes it, on the CPU.
  std::unique_ptr<kiln::Graph> graph = kiln::load_model(arguments.model, arguments.input_shapes);
  kiln::optimize(*graph, kiln::Stage::kFused, options.pipeline);
  std::printf("%s", kiln::dump_graph(*graph, kiln::DumpFormat::kSummary).c_str());
  std::vector<kiln::Tensor> inputs;
  for (const kiln::Value* input : graph->inputs()) inputs.push_back(patterned_input(input->type()));
  const std::vector<kiln::Tensor> want = kiln::run_reference(*graph, inputs);

  try {
    kiln::require_cuda_device();
  } catch (const kiln::UnsupportedError& error) {
    std::printf("CPU reference ran; GPU run skipped: %s\n", error.what());
    return 0;
  }
  kiln::Session session = kiln::Session::load(arguments.output);
  const std::vector<kiln::Tensor> got = session.run(inputs);
  // fp32: kiln's tolerance; 16 bits: the reference computes the same 16-bit graph, but sums in
  // another order.
  const bool fp32 = arguments.precision == "fp32";
  const double atol = fp32 ? 1e-4 : 1e-2, rtol = fp32 ? 1e-3 : 2e-2;
  bool close = true;
  for (size_t i = 0; i < got.size(); ++i) {
    const double worst = worst_error(got[i], want[i], atol, rtol);
    std::printf("output %zu on %s: worst error %.3g of the tolerance (atol %g, rtol %g)\n", i,
                session.device_description().c_str(), worst, atol, rtol);
    close = close && worst <= 1;
  }
  return close ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(parse_arguments(argc, argv));
  } catch (const kiln::InputError& error) {  // UnsupportedError derives from it
    std::fprintf(stderr, "compile_and_run: error: %s\n", error.what());
    return 2;
  } catch (const std::exception& error) {
    std::fprintf(stderr, "compile_and_run: internal error: %s\n", error.what());
    return 3;
  }
}
