// Tests of the `kiln inspect` report (tools/inspect_report.h) on the hand-written programs: their
// kernels, launch geometry, the steps each waits for, buffers with live ranges, the step graph's
// figures and the memory plan's three figures.
#include "tools/inspect_report.h"

#include <gtest/gtest.h>

#include "runtime/kernel_header.h"

#include "tests/runtime/bias_relu_program.h"

namespace kiln::tools {
namespace {

TEST(InspectReportTest, FormatsBytes) {
  EXPECT_EQ(format_bytes(0), "0 B");
  EXPECT_EQ(format_bytes(1023), "1023 B");
  EXPECT_EQ(format_bytes(65536), "64.0 KiB");
  EXPECT_EQ(format_bytes(3 * 512 * 1024), "1.5 MiB");
  EXPECT_EQ(format_bytes(int64_t{2} << 30), "2.0 GiB");
}

TEST(InspectReportTest, ShowsKernelsStepsBuffersAndTheMemoryPlan) {
  const std::string report = inspect_report(test::bias_relu_program(test::placeholder_kernels()));
  for (const std::string expected : {
           "program 'bias_relu' for sm_80, sm_90: 4 kernels, 4 steps, 6 buffers\n",
           "  0  add_bias  sm_80 5 B, sm_90 5 B  19 B  22 B    -      -       /onnx/Add\n",
           "  3  add       64x1x1  256x1x1  0 B     2      doubled, x, y\n",
           "  3  intermediate  rectified  f32[64,256]  64.0 KiB  arena +65536, live at steps 1-2\n",
           "  1  weight        bias       f32[256]     1.0 KiB   weights +0\n",
           "step graph\n"
           "  edges         3  read after write, write after read, write after write; none implied "
           "by others\n"
           "  levels        4  the longest chain of steps that wait for each other\n"
           "  widest level  1  steps that may run at once\n"
           "\nmemory plan\n"
           "  arena (peak)  128.0 KiB\n"
           "  naive sum     192.0 KiB  every intermediate in its own bytes; arena = 0.67x\n"
           "  lower bound   128.0 KiB  the largest set live at one step; arena = 1.00x\n",
           "weights: 1.0 KiB in 1 buffer\n",
       }) {
    EXPECT_NE(report.find(expected), std::string::npos) << expected << "\nin:\n" << report;
  }
}

// Steps 2 and 3 of the branches program run at once: each waits only for its own branch.
TEST(InspectReportTest, ShowsWhatEachStepWaitsForAndTheWidestLevel) {
  const std::string report = inspect_report(test::branches_program(test::placeholder_kernels()));
  for (const std::string expected : {
           "  #  kernel    grid    block    shared  after  arguments\n"
           "  0  add_bias  64x1x1  256x1x1  0 B     -      x, bias, sum\n"
           "  1  relu      64x1x1  256x1x1  0 B     -      x, rectified\n"
           "  2  twice     64x1x1  256x1x1  0 B     1      rectified, doubled\n"
           "  3  twice     64x1x1  256x1x1  0 B     0      sum, doubled_sum\n"
           "  4  add       64x1x1  256x1x1  0 B     2, 3   doubled_sum, doubled, y\n",
           "  edges         4  ",
           "  levels        3  ",
           "  widest level  2  ",
           "  arena (peak)  256.0 KiB\n",
       }) {
    EXPECT_NE(report.find(expected), std::string::npos) << expected << "\nin:\n" << report;
  }
}

// A kernel whose source header states a tactic and its flops shows both (runtime/kernel_header.h).
TEST(InspectReportTest, ShowsEachKernelsTacticAndGigaflops) {
  Program program = test::bias_relu_program(test::placeholder_kernels());
  program.kernels[0].source =
      "// kiln kernel add_bias: epilogue (gemm)\n// tactic: wgmma 128x192x64 tile, 4 stages\n"
      "// flops per launch: 4831838208\n// ONNX nodes: /onnx/Add\n\nextern \"C\" ...\n";
  const std::string report = inspect_report(program);
  EXPECT_NE(report.find("4.832  wgmma 128x192x64 tile, 4 stages  /onnx/Add\n"), std::string::npos)
      << report;
  EXPECT_EQ(kernel_tactic(program.kernels[1]), "");
  EXPECT_EQ(kernel_flops(program.kernels[1]), 0);
}

}  // namespace
}  // namespace kiln::tools
