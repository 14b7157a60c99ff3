// Tests of the table kiln bench --profile prints (tools/profile_report.h): launches slowest
// first with their share, the TFLOP/s a launch achieved where its kernel states its flops, the
// GB/s of its buffers' bytes, and the kernel's ONNX nodes and tactic.
#include "tools/profile_report.h"

#include <gtest/gtest.h>

namespace kiln::tools {
namespace {

nlohmann::json launch(int step, const std::string& kernel, double ms, int64_t flops, int64_t bytes,
                      const std::string& tactic, std::vector<std::string> nodes) {
  return {{"step", step},       {"kernel", kernel},     {"ms", ms},
          {"grid", {4, 32, 1}}, {"block", {256, 1, 1}}, {"shared_bytes", 164864},
          {"tactic", tactic},   {"flops", flops},       {"bytes", bytes},
          {"nodes", nodes}};
}

TEST(ProfileReportTest, ShowsShareRateTacticAndNodes) {
  const nlohmann::json launches = {
      launch(3, "matmul_c9672103", 0.0170, 4831838208, 0, "wgmma 128x192x64 tile, 4 stages",
             {"/MatMul"}),
      launch(7, "loop_add_relu_0b3f6f0e", 0.0030, 0, 6291456, "", {"/a", "/b", "/c", "/d", "/e"}),
      launch(1, "reduction_sum_11111111", 0.0010, 0, 0, "", {"/Sum"}),
  };
  const std::string table = profile_table("fused", launches, 2);
  EXPECT_NE(table.find("\nfused: the 2 slowest of 3 launches (sum of launches 0.0210 ms)\n"),
            std::string::npos)
      << table;
  // 4.83 GFLOP in 17.0 µs: 284.2 TFLOP/s; 81.0% of the sum; no bytes given: no GB/s.
  EXPECT_NE(table.find("    3    0.0170  81.0%    284.2       -  matmul_c9672103"),
            std::string::npos)
      << table;
  EXPECT_NE(table.find("4x32x1   256x1x1 164864  /MatMul; wgmma 128x192x64 tile, 4 stages\n"),
            std::string::npos)
      << table;
  // No flops stated: no rate; 6 MiB of buffers in 3.0 µs: 2097 GB/s; more than three nodes:
  // the count of the rest.
  EXPECT_NE(table.find("    7    0.0030  14.3%        -    2097  loop_add_relu_0b3f6f0e"),
            std::string::npos)
      << table;
  EXPECT_NE(table.find("/a, /b, /c (+2)\n"), std::string::npos) << table;
  EXPECT_EQ(table.find("reduction_sum"), std::string::npos) << table;
}

}  // namespace
}  // namespace kiln::tools
