// Tests of the pooling and attention emitters through lowering (codegen/pool_emitter.h,
// codegen/attention_emitter.h): launch geometry, kernels that compile with NVRTC for sm_80 and
// sm_90, max_pool_with_indices writing both results from one kernel, and the refusal of an
// attention row that does not fit in shared memory. The emitted text is checked by
// tests/codegen/pool_attention_kernels.kir; results on a GPU by gpu_node_tests.
#include <gtest/gtest.h>

#include <filesystem>

#include "codegen/compile_program.h"
#include "codegen/lower.h"
#include "ir/error.h"
#include "ir/parser.h"

namespace kiln::codegen {
namespace {

Program lower_text(const std::string& text) { return lower_graph(*parse_graph(text), {}); }

// Compiles every kernel with NVRTC (an empty cache directory: no kernel comes from a cache).
void compile_for_sm80_and_sm90(Program& program) {
  const std::filesystem::path cache =
      std::filesystem::temp_directory_path() / "kiln_codegen_pool_attention_test";
  std::filesystem::remove_all(cache);
  CodegenOptions options;
  options.archs = {"sm_80", "sm_90"};
  options.cache_dir = cache.string();
  const CompileStats stats = compile_program(program, options);
  EXPECT_EQ(stats.compilations, 2 * static_cast<int>(program.kernels.size()));
  for (const ProgramKernel& kernel : program.kernels) {
    ASSERT_EQ(kernel.binaries.size(), 2u) << kernel.name;
  }
}

// Attention over `keys` keys of head size 64: [1, 2, 16, 64] queries.
std::string attention_graph(int keys) {
  const std::string k = std::to_string(keys);
  return "graph @g(%q: f32[1,2,16,64], %k: f32[1,2,64," + k + "], %v: f32[1,2," + k +
         ",64]) -> (f32[1,2,16,64]) {\n"
         "  %0 = fusion.attention(%q, %k, %v) {\n"
         "    ^(%a: f32[1,2,16,64], %b: f32[1,2,64," +
         k + "], %c: f32[1,2," + k +
         ",64]):\n"
         "    %scale = const f32[] 0.125\n"
         "    %s = matmul(%a, %b) : f32[1,2,16," +
         k +
         "]\n"
         "    %t = mul(%s, %scale) : f32[1,2,16," +
         k +
         "]\n"
         "    %p = softmax(%t) {axis=-1} : f32[1,2,16," +
         k +
         "]\n"
         "    %o = matmul(%p, %c) : f32[1,2,16,64]\n"
         "    yield %o\n"
         "  } : f32[1,2,16,64] loc(\"/Attention\")\n"
         "  return %0\n"
         "}\n";
}

TEST(CodegenPoolAttention, MaxPoolWithIndicesIsOneKernelOfOneThreadPerOutput) {
  Program program = lower_text(R"(
graph @g(%x: f32[2,3,9,9]) -> (f32[2,3,4,4], i64[2,3,4,4]) {
  %y, %i = max_pool_with_indices(%x) {kernel_shape=[3, 3], strides=[2, 2]} : (f32[2,3,4,4], i64[2,3,4,4]) loc("/MaxPool")
  return %y, %i
})");
  ASSERT_EQ(program.steps.size(), 1u);
  EXPECT_EQ(program.steps[0].args, (std::vector<int>{0, 1, 2}));          // x, values, indices
  EXPECT_EQ(program.steps[0].block[0] * program.steps[0].grid[0], 256u);  // 96 outputs
  compile_for_sm80_and_sm90(program);
}

TEST(CodegenPoolAttention, AttentionIsABlockPerQueryRow) {
  Program program = lower_text(attention_graph(197));
  ASSERT_EQ(program.steps.size(), 1u);
  EXPECT_EQ(program.steps[0].grid, (std::array<uint32_t, 3>{32, 1, 1}));  // 2 heads × 16 rows
  EXPECT_EQ(program.steps[0].block, (std::array<uint32_t, 3>{128, 1, 1}));
  EXPECT_NE(program.kernels[0].source.find("__shared__ float g_p[197];"), std::string::npos)
      << program.kernels[0].source;
  compile_for_sm80_and_sm90(program);
}

TEST(CodegenPoolAttention, AttentionBeyond48KBOfSharedMemoryIsRefused) {
  // (64 + 12288 + 4) floats: 49424 bytes.
  try {
    lower_text(attention_graph(12288));
    FAIL() << "expected UnsupportedError";
  } catch (const UnsupportedError& error) {
    EXPECT_NE(std::string(error.what()).find("needs 49424 bytes of shared memory (at most 49152)"),
              std::string::npos)
        << error.what();
  }
}

}  // namespace
}  // namespace kiln::codegen
