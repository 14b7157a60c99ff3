// Example: running a compiled kiln program from C++ through the public API (runtime/session.h).
// Loads PROGRAM.kiln onto the GPU, fills each input with a fixed pattern, runs it, prints the
// first values of each output, then times replays of its CUDA graph.
//
//   usage: run_kiln PROGRAM.kiln [ITERATIONS]
//
// Build: link the kiln_runtime library (examples/api/CMakeLists.txt). Exit codes as kiln's:
// 0 success, 2 bad input or no CUDA device, 3 internal error.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "ir/error.h"
#include "runtime/session.h"

namespace {

void print_usage() {
  std::printf(
      "usage: run_kiln PROGRAM.kiln [ITERATIONS]\n"
      "Runs a compiled kiln program on the GPU on patterned inputs, prints its outputs' first\n"
      "values and the median time of ITERATIONS (default 100) CUDA graph replays.\n");
}

// An input of the program's type holding 0.0, 0.1, ..., 0.9, 0.0, ... (integers: 0).
kiln::Tensor patterned_input(const kiln::TensorType& type) {
  kiln::Tensor tensor(type);
  for (int64_t i = 0; i < tensor.num_elements(); ++i) tensor.set_double(i, 0.1 * (i % 10));
  return tensor;
}

void print_output(const std::string& name, const kiln::Tensor& output) {
  std::printf("%s: %s [", name.c_str(), kiln::type_to_string(output.type()).c_str());
  const int64_t shown = std::min<int64_t>(output.num_elements(), 6);
  for (int64_t i = 0; i < shown; ++i) std::printf("%s%g", i ? ", " : "", output.get_double(i));
  std::printf("%s]\n", shown < output.num_elements() ? ", ..." : "");
}

int run(const std::string& path, int iterations) {
  kiln::Session session = kiln::Session::load(path);
  const kiln::Program& program = session.program();
  std::printf("loaded '%s' on %s\n", program.name.c_str(), session.device_description().c_str());

  std::vector<kiln::Tensor> inputs;
  for (const int input : program.inputs) {
    inputs.push_back(patterned_input(program.buffers[input].type));
  }
  const std::vector<kiln::Tensor> outputs = session.run(inputs);
  for (size_t i = 0; i < outputs.size(); ++i) {
    print_output(program.buffers[program.outputs[i]].name, outputs[i]);
  }

  std::vector<float> milliseconds = session.time(iterations, /*warmup=*/10);
  std::sort(milliseconds.begin(), milliseconds.end());
  std::printf("median %.4f ms over %d CUDA graph replays\n", milliseconds[milliseconds.size() / 2],
              iterations);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || argc > 3 || std::strcmp(argv[1], "--help") == 0) {
    print_usage();
    return argc == 2 ? 0 : 2;
  }
  const int iterations = argc == 3 ? std::atoi(argv[2]) : 100;
  try {
    return run(argv[1], iterations);
  } catch (const kiln::InputError& error) {
    std::fprintf(stderr, "run_kiln: %s\n", error.what());
    return 2;
  } catch (const std::exception& error) {
    std::fprintf(stderr, "run_kiln: internal error: %s\n", error.what());
    return 3;
  }
}
