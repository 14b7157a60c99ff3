// The kiln command: subcommands dump-ir, run, test-onnx, opt. Exit codes: 0 success, 1 a check
// failed, 2 bad input or usage, 3 internal error.
#include <cstdio>

int main(int argc, char** argv) {
  std::fprintf(stderr, "kiln: the command line is being built\n");
  return 3;
}
