// Tests of the compiler driver (kiln/compiler.h, kiln/ir_dump.h): compiling a Graph for named
// archs (the kernels generated for the newest), the stages of optimize, option checks, and the
// dump formats. NVRTC runs here; no GPU is needed.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "ir/error.h"
#include "ir/fusion.h"
#include "ir/parser.h"
#include "kiln/kiln.h"
#include "test_temp_dir.h"

namespace kiln {
namespace {

using ::testing::HasSubstr;

constexpr const char* kBiasRelu = R"(
graph @bias_relu(%x: f32[4,8]) -> (f32[4,8]) {
  %b = const f32[8] [0.5, -1, 2, 0, 1, -2, 3, -3]
  %s = add(%x, %b) : f32[4,8]
  %r = relu(%s) : f32[4,8]
  return %r
}
)";

TEST(DriverTest, CompilesAGraphForTheNewestArch) {
  const std::unique_ptr<Graph> graph = parse_graph(kBiasRelu);
  CompileOptions options;
  options.cache_dir = testing_support::test_temp_dir() / "driver_cache";
  options.archs = {"sm_90", "sm_80"};
  int lowered = 0;
  options.on_lowered = [&](const Program& program) { lowered = program.kernels.size(); };
  const CompiledModel compiled = compile(*graph, options);
  EXPECT_EQ(compiled.target.arch, "sm_90");
  EXPECT_EQ(compiled.target.sm_count, 132);
  EXPECT_EQ(compiled.program.archs, (std::vector<std::string>{"sm_90", "sm_80"}));
  ASSERT_EQ(compiled.program.kernels.size(), 1u);  // add and relu fused
  EXPECT_EQ(lowered, 1);
  EXPECT_EQ(compiled.program.kernels[0].binaries.size(), 2u);
  EXPECT_EQ(count_kernels(*graph).fusions, 1);  // compile optimizes the graph in place
}

TEST(DriverTest, WithoutFusionEachOpIsAKernel) {
  const std::unique_ptr<Graph> graph = parse_graph(kBiasRelu);
  CompileOptions options;
  options.cache_dir = testing_support::test_temp_dir() / "driver_cache";
  options.archs = {"sm_80"};
  options.pipeline.fusion = false;
  EXPECT_EQ(compile(*graph, options).program.kernels.size(), 2u);
}

TEST(DriverTest, RejectsBadArchsAndOptionsClearly) {
  const std::unique_ptr<Graph> graph = parse_graph(kBiasRelu);
  CompileOptions options;
  options.archs = {"native", "sm_80"};
  EXPECT_THAT([&] { compile(*graph, options); },
              ::testing::ThrowsMessage<InputError>(HasSubstr("cannot be combined")));
  options.archs = {"sm80"};
  EXPECT_THAT([&] { compile(*graph, options); },
              ::testing::ThrowsMessage<InputError>(HasSubstr("not of the form sm_80")));
  PipelineOptions pipeline;
  pipeline.keep_fp32 = {"Softmax"};
  EXPECT_THAT([&] { check_pipeline_options(pipeline); },
              ::testing::ThrowsMessage<InputError>(HasSubstr("no kiln op has that name")));
  EXPECT_THAT([&] { load_model("model.pt"); },
              ::testing::ThrowsMessage<InputError>(HasSubstr("unknown model type")));
}

TEST(DriverTest, OptimizeStopsAtTheStageAndDumpsEachFormat) {
  const std::unique_ptr<Graph> graph = parse_graph(kBiasRelu);
  optimize(*graph, Stage::kOptimized, {});
  EXPECT_EQ(count_kernels(*graph).fusions, 0);
  optimize(*graph, Stage::kFused, {});
  EXPECT_EQ(count_kernels(*graph).fusions, 1);
  EXPECT_THAT(dump_graph(*graph, DumpFormat::kText), HasSubstr("fusion.loop"));
  EXPECT_THAT(dump_graph(*graph, DumpFormat::kDot), HasSubstr("digraph"));
  EXPECT_THAT(dump_graph(*graph, DumpFormat::kJson), HasSubstr("\"kernels\""));
  EXPECT_THAT(dump_graph(*graph, DumpFormat::kSummary), HasSubstr("kernels: 1 (1 fusions"));
  EXPECT_THROW(parse_dump_format("yaml"), InputError);
}

TEST(DriverTest, NamedTargetsCarryTheirArchitecturesFeatures) {
  EXPECT_EQ(target_for_arch("sm_90a").tensor_cores(), TensorCores::kWarpgroupMma);
  EXPECT_EQ(target_for_arch("sm_90").tensor_cores(), TensorCores::kMmaSync);
  EXPECT_TRUE(target_for_arch("sm_90").has_tma());
  EXPECT_FALSE(target_for_arch("sm_89").has_tma());
  EXPECT_EQ(target_for_arch("sm_80").sm_count, 108);
  EXPECT_EQ(target_for_arch("sm_120").device, "H100 SXM5");  // the newest known figures
  EXPECT_THROW(target_for_arch("gfx90a"), InputError);
}

}  // namespace
}  // namespace kiln
