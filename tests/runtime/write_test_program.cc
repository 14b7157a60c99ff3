// Writes the hand-written test programs (bias_relu_program.h) for the command-line tests:
// DIR/bias_relu.kiln (nvcc's code from KERNELS_DIR), DIR/inputs/x.npy and DIR/expected/y.npy;
// DIR/too_large.kiln, the program with an arena larger than any GPU (too_large_program); and
// DIR/branches.kiln with DIR/expected_branches/y.npy (branches_program).
//
//   usage: write_test_program KERNELS_DIR DIR
#include <cstdio>
#include <filesystem>

#include "runtime/program_io.h"
#include "tests/runtime/bias_relu_program.h"
#include "tools/tensor_files.h"

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: write_test_program KERNELS_DIR DIR\n");
    return 2;
  }
  const std::filesystem::path dir = argv[2];
  std::filesystem::create_directories(dir / "inputs");
  std::filesystem::create_directories(dir / "expected");
  std::filesystem::create_directories(dir / "expected_branches");
  const kiln::test::CompiledKernels code = kiln::test::nvcc_kernels(argv[1]);
  kiln::write_program(kiln::test::bias_relu_program(code), (dir / "bias_relu.kiln").string());
  kiln::write_program(kiln::test::too_large_program(code), (dir / "too_large.kiln").string());
  kiln::write_program(kiln::test::branches_program(code), (dir / "branches.kiln").string());
  const kiln::Tensor x = kiln::test::bias_relu_input(/*seed=*/1);
  kiln::tools::write_npy((dir / "inputs" / "x.npy").string(), x);
  kiln::tools::write_npy((dir / "expected" / "y.npy").string(), kiln::test::bias_relu_expected(x));
  kiln::tools::write_npy((dir / "expected_branches" / "y.npy").string(),
                         kiln::test::branches_expected(x));
  return 0;
}
