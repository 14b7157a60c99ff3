// Tests of the pooling and attention emitters through lowering (codegen/pool_emitter.h,
// codegen/attention_emitter.h): launch geometry, kernels that compile with NVRTC for sm_80 and
// sm_90, max_pool_with_indices writing both results from one kernel, tiled attention on tensor
// cores (16-bit) and CUDA cores (f32): grid, warps, one or two passes; the f64 row kernel and
// its refusal of a row that does not fit in shared memory. The emitted text is checked by
// tests/codegen/pool_attention_kernels.kir; results on a GPU by gpu_node_tests.
#include <gtest/gtest.h>

#include <filesystem>

#include "codegen/compile_program.h"
#include "codegen/lower.h"
#include "ir/error.h"
#include "ir/parser.h"
#include "test_temp_dir.h"

namespace kiln::codegen {
namespace {

Program lower_text(const std::string& text) { return lower_graph(*parse_graph(text), {}); }

// Compiles every kernel with NVRTC (an empty cache directory: no kernel comes from a cache).
void compile_for_sm80_and_sm90(Program& program) {
  const std::filesystem::path cache = testing_support::fresh_temp_path("pool_attention_cache");
  CodegenOptions options;
  options.archs = {"sm_80", "sm_90"};
  options.cache_dir = cache.string();
  const CompileStats stats = compile_program(program, options);
  EXPECT_EQ(stats.compilations, 2 * static_cast<int>(program.kernels.size()));
  for (const ProgramKernel& kernel : program.kernels) {
    ASSERT_EQ(kernel.binaries.size(), 2u) << kernel.name;
  }
}

// Attention of `dtype` over [batch, heads, queries, head] queries and `keys` keys of head size
// `head`,
// scores scaled before the softmax; 16-bit scores are cast to f32 around it (as the mixed
// precision pass writes it). With `after_softmax` kNanGuard, NaN probabilities become 0 before
// the cast down (as PyTorch's scaled_dot_product_attention exports); with kScale they are scaled
// by 0.75.
enum class AfterSoftmax { kCastOnly, kNanGuard, kScale };
std::string attention_graph(int keys, const std::string& dtype = "f32", int batch = 1,
                            int heads = 2, int queries = 16,
                            AfterSoftmax after_softmax = AfterSoftmax::kCastOnly, int head = 64) {
  const bool nan_guard = after_softmax == AfterSoftmax::kNanGuard;
  const bool scale = after_softmax == AfterSoftmax::kScale;
  const std::string prefix =
      dtype + "[" + std::to_string(batch) + "," + std::to_string(heads) + ",";
  const std::string q = prefix + std::to_string(queries) + "," + std::to_string(head) + "]";
  const std::string k = prefix + std::to_string(head) + "," + std::to_string(keys) + "]";
  const std::string v = prefix + std::to_string(keys) + "," + std::to_string(head) + "]";
  const std::string s = prefix + std::to_string(queries) + "," + std::to_string(keys) + "]";
  const std::string f = "f32" + s.substr(dtype.size());
  const bool is_16_bit = dtype == "f16" || dtype == "bf16";
  return "graph @g(%q: " + q + ", %k: " + k + ", %v: " + v + ") -> (" + q + ") {\n" +
         "  %0 = fusion.attention(%q, %k, %v) {\n" + "    ^(%a: " + q + ", %b: " + k +
         ", %c: " + v + "):\n" + "    %scale = const " + dtype + "[] 0.125\n" +
         "    %s = matmul(%a, %b) : " + s + "\n" + "    %t = mul(%s, %scale) : " + s + "\n" +
         (!is_16_bit
              ? "    %p = softmax(%t) {axis=-1} : " + s + "\n"
              : "    %u = cast(%t) {to=f32} : " + f + "\n" +
                    "    %w = softmax(%u) {axis=-1} : " + f + "\n" +
                    (nan_guard ? "    %n = is_nan(%w) : bool" + s.substr(dtype.size()) +
                                     "\n    %z = const f32[] 0.0\n    %x = where(%n, %z, %w) : " +
                                     f + "\n"
                               : "") +
                    (scale ? "    %h = const f32[] 0.75\n    %x = mul(%w, %h) : " + f + "\n" : "") +
                    "    %p = cast(" + (nan_guard || scale ? "%x" : "%w") + ") {to=" + dtype +
                    "} : " + s + "\n") +
         "    %o = matmul(%p, %c) : " + q + "\n" + "    yield %o\n" + "  } : " + q +
         " loc(\"/Attention\")\n" + "  return %0\n" + "}\n";
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

TEST(CodegenPoolAttention, F64AttentionIsABlockPerQueryRow) {
  Program program = lower_text(attention_graph(197, "f64"));
  ASSERT_EQ(program.steps.size(), 1u);
  EXPECT_EQ(program.steps[0].grid, (std::array<uint32_t, 3>{32, 1, 1}));  // 2 heads × 16 rows
  EXPECT_EQ(program.steps[0].block, (std::array<uint32_t, 3>{128, 1, 1}));
  EXPECT_NE(program.kernels[0].source.find("__shared__ double g_p[197];"), std::string::npos)
      << program.kernels[0].source;
  compile_for_sm80_and_sm90(program);
}

TEST(CodegenPoolAttention, F32AttentionIsTiledOnTheCudaCores) {
  // 2 heads × 16 rows: a block a head, its 4 warps on 8 keys each of every 32-key tile.
  Program program = lower_text(attention_graph(197));
  ASSERT_EQ(program.steps.size(), 1u);
  EXPECT_EQ(program.steps[0].grid, (std::array<uint32_t, 3>{2, 1, 1}));
  EXPECT_EQ(program.steps[0].block, (std::array<uint32_t, 3>{128, 1, 1}));
  const std::string& source = program.kernels[0].source;
  EXPECT_NE(source.find("for (int g_key0 = 0; g_key0 < 197; g_key0 += 32)"), std::string::npos)
      << source;
  EXPECT_NE(source.find("const int g_split = g_warp / 1 * 8;"), std::string::npos) << source;
  EXPECT_EQ(source.find("mma"), std::string::npos) << source;
  compile_for_sm80_and_sm90(program);
}

TEST(CodegenPoolAttention, HalfAttentionIsTiledOnTensorCores) {
  // 2 heads × 16 rows: a block a head, its 4 warps on 16 keys each of every 64-key tile.
  Program program = lower_text(attention_graph(197, "f16"));
  ASSERT_EQ(program.steps.size(), 1u);
  EXPECT_EQ(program.steps[0].grid, (std::array<uint32_t, 3>{2, 1, 1}));
  EXPECT_EQ(program.steps[0].block, (std::array<uint32_t, 3>{128, 1, 1}));
  EXPECT_NE(program.kernels[0].source.find("const int g_split = g_warp / 1 * 16;"),
            std::string::npos);
  EXPECT_NE(program.kernels[0].source.find("kiln_mma_f16_16816(g_s[g_n], g_qf[g_kk], g_kf);"),
            std::string::npos)
      << program.kernels[0].source;
  compile_for_sm80_and_sm90(program);
}

TEST(CodegenPoolAttention, TensorCoreAttentionGivesEachWarpItsOwnRowsWhenTheGridIsLarge) {
  // BERT-base's shape: 8 × 12 heads × 2 tiles of 64 rows = 192 blocks of 4 warps, each warp 16
  // rows and all 64 keys of a tile.
  Program program = lower_text(attention_graph(128, "bf16", 8, 12, 128));
  ASSERT_EQ(program.steps.size(), 1u);
  EXPECT_EQ(program.steps[0].grid, (std::array<uint32_t, 3>{192, 1, 1}));
  EXPECT_EQ(program.steps[0].block, (std::array<uint32_t, 3>{128, 1, 1}));
  EXPECT_NE(program.kernels[0].source.find("kiln_mma_bf16_16816(g_o[g_c], g_pf, g_vf);"),
            std::string::npos)
      << program.kernels[0].source;
  EXPECT_NE(program.kernels[0].source.find("const int g_split = g_warp / 4 * 64;"),
            std::string::npos);
  compile_for_sm80_and_sm90(program);
}

TEST(CodegenPoolAttention, DeepHeadsOfASmallGridStayOneAttentionKernel) {
  // Q·Kᵀ of head size 256 over one 16 × 16 tile would be split along K were it a lone f16
  // matmul (8 K-steps, one block); inside an attention body it is the attention kernel's.
  Program program = lower_text(attention_graph(16, "f16", 1, 1, 16, AfterSoftmax::kCastOnly, 256));
  ASSERT_EQ(program.steps.size(), 1u);
  EXPECT_EQ(program.kernels[0].name.rfind("attention_", 0), 0u) << program.kernels[0].name;
  EXPECT_EQ(program.kernels[0].source.find("workspace"), std::string::npos)
      << program.kernels[0].source;
}

TEST(CodegenPoolAttention, OpsAfterTheSoftmaxBesidesCastsAndTheNanGuardTakeTwoPasses) {
  // Only casts between the softmax and P': one pass, online softmax.
  Program online = lower_text(attention_graph(100, "f16", 1, 2, 16));
  const std::string& one_pass = online.kernels[0].source;
  EXPECT_EQ(one_pass.find("g_key0 += 64"), one_pass.rfind("g_key0 += 64")) << one_pass;
  EXPECT_EQ(one_pass.find("/ g_sum[g_h / 2]"), std::string::npos) << one_pass;
  // where(is_nan(P), 0, P) too: one pass, guarded rows written undivided.
  Program guarded = lower_text(attention_graph(100, "f16", 1, 2, 16, AfterSoftmax::kNanGuard));
  const std::string& guarded_pass = guarded.kernels[0].source;
  EXPECT_EQ(guarded_pass.find("g_key0 += 64"), guarded_pass.rfind("g_key0 += 64")) << guarded_pass;
  // exp(s − max) as 2^((s − max)·log2(e)) by ex2.approx; the row is flagged by its max alone.
  EXPECT_NE(guarded_pass.find(
                "g_nan[g_r] ? 0.0f : kiln_exp2_approx((g_s[g_n][g_h] - g_base) * 1.44269504f)"),
            std::string::npos)
      << guarded_pass;
  EXPECT_NE(guarded_pass.find("g_nan[g_r] = g_nan[g_r] || !(g_new_max < "), std::string::npos)
      << guarded_pass;
  EXPECT_NE(guarded_pass.find("g_guarded || g_den == 0.0f ? g_num : g_num / g_den"),
            std::string::npos)
      << guarded_pass;
  compile_for_sm80_and_sm90(guarded);
  // P scaled: the row max and sum first, then P normalized at each index.
  Program exact = lower_text(attention_graph(100, "f16", 1, 2, 16, AfterSoftmax::kScale));
  const std::string& two_passes = exact.kernels[0].source;
  EXPECT_NE(two_passes.find("g_key0 += 64"), two_passes.rfind("g_key0 += 64")) << two_passes;
  EXPECT_NE(two_passes.find("exp(g_s[g_n][g_h] - g_base) / g_sum[g_h / 2];"), std::string::npos)
      << two_passes;
  EXPECT_NE(two_passes.find("* 0.75f"), std::string::npos) << two_passes;
  compile_for_sm80_and_sm90(exact);
}

TEST(CodegenPoolAttention, RowAttentionBeyond48KBOfSharedMemoryIsRefused) {
  // f64 (the row kernel): (64 + 6144 + 4) doubles, 49696 bytes.
  try {
    lower_text(attention_graph(6144, "f64"));
    FAIL() << "expected UnsupportedError";
  } catch (const UnsupportedError& error) {
    EXPECT_NE(std::string(error.what()).find("needs 49696 bytes of shared memory (at most 49152)"),
              std::string::npos)
        << error.what();
  }
}

// BERT-style attention on a packed f16 QKV projection [batch, seq, 3 · heads · 64]: Q', K', V'
// are slices of it, reshaped and transposed (K' transposed again), Q' and K' scaled as
// scaled_dot_product_attention exports them; `query_view` replaces Q''s view (a reshape that is
// no strided view keeps every operand on the element path).
std::string packed_attention_graph(int batch, int heads, int seq, bool strided_query = true) {
  const std::string b = std::to_string(batch), h = std::to_string(heads),
                    n = std::to_string(seq), hidden = std::to_string(heads * 64),
                    packed = std::to_string(3 * heads * 64);
  const std::string bhsd = "f16[" + b + "," + h + "," + n + ",64]";
  const std::string bhds = "f16[" + b + "," + h + ",64," + n + "]";
  const std::string scores = "[" + b + "," + h + "," + n + "," + n + "]";
  std::string views;
  for (int i = 0; i < 3; ++i) {
    const std::string part(1, "qkv"[i]);
    views += "  %" + part + "0 = slice(%x) {axes=[2], ends=[" + std::to_string((i + 1) * heads * 64) +
             "], starts=[" + std::to_string(i * heads * 64) + "], steps=[1]} : f16[" + b + "," + n +
             "," + hidden + "]\n";
    if (i == 0 && !strided_query) {
      // [b, n, h·64] → [n, b, h·64] → [b, h, n, 64] by a reshape that mixes n and b.
      views += "  %qt = transpose(%q0) {perm=[1, 0, 2]} : f16[" + n + "," + b + "," + hidden +
               "]\n  %q = reshape(%qt) {shape=[" + b + ", " + h + ", " + n + ", 64]} : " + bhsd +
               "\n";
      continue;
    }
    views += "  %" + part + "1 = reshape(%" + part + "0) {shape=[" + b + ", " + n + ", " + h +
             ", 64]} : f16[" + b + "," + n + "," + h + ",64]\n  %" + part + " = transpose(%" +
             part + "1) {perm=[0, 2, 1, 3]} : " + bhsd + "\n";
  }
  const std::string x = "f16[" + b + "," + n + "," + packed + "]";
  const std::string mask = "f16[" + b + ",1,1," + n + "]";
  return "graph @g(%x: " + x + ", %mask: " + mask + ") -> (" + bhsd +
         ") {\n  %0 = fusion.attention(%x, %mask) {\n  ^(%x: " + x + ", %mask: " + mask +
         "):\n" + views + "  %kt = transpose(%k) {perm=[0, 1, 3, 2]} : " +
         bhds + "\n  %root = const f16[] 0.35355339\n  %qs = mul(%q, %root) : " + bhsd +
         "\n  %ks = mul(%kt, %root) : " + bhds + "\n  %s = matmul(%qs, %ks) : f16" + scores +
         "\n  %am = add(%s, %mask) : f16" + scores + "\n  %af = cast(%am) {to=f32} : f32" +
         scores + "\n  %p = softmax(%af) {axis=-1} : f32" + scores +
         "\n  %nan = is_nan(%p) : bool" + scores + "\n  %zero = const f32[] 0.0\n" +
         "  %g = where(%nan, %zero, %p) : f32" + scores + "\n  %gh = cast(%g) {to=f16} : f16" +
         scores + "\n  %o = matmul(%gh, %v) : " + bhsd + "\n  yield %o\n  } : " + bhsd +
         " loc(\"/Attention\")\n  return %0\n}\n";
}

TEST(CodegenPoolAttention, PackedQkvViewsComeByCpAsyncDoubleBuffered) {
  // BERT-base at batch 4: 4 · 12 · 2 = 96 blocks of 64 query rows (a block per SM of the default
  // target or more: 4 row warps), 128 keys in two 64-key tiles.
  Program program = lower_graph(*parse_graph(packed_attention_graph(4, 12, 128)), {});
  ASSERT_EQ(program.kernels.size(), 1u);
  const std::string& source = program.kernels[0].source;
  // The three operands' rows by 16-byte cp.async from the packed input at their slice offsets
  // (Q' at 0, K' at 768, V' at 1536; a batch step of 128 · 2304 and a head step of 64), two
  // buffers, the next tile issued before the current one's math, fragments by ldmatrix.
  EXPECT_NE(source.find("const auto g_ksrc = in0 + (768LL"), std::string::npos) << source;
  EXPECT_NE(source.find("const auto g_vsrc = in0 + (1536LL"), std::string::npos) << source;
  EXPECT_NE(source.find("* 294912"), std::string::npos) << source;
  EXPECT_NE(source.find("kiln_cp_async_16(g_k + (g_buf ^ 1) * "), std::string::npos) << source;
  EXPECT_NE(source.find("g_row < 128 ? g_ksrc + (long long)g_row * 2304 + g_cc : g_ksrc"),
            std::string::npos)
      << source;
  EXPECT_NE(source.find("kiln_ldmatrix_x4_trans(g_vf, g_vt"), std::string::npos) << source;
  // The scales of Q' and K' (each an f16 product by sqrt(1/8), 0x35a8 in f16: 0.35351562) fold
  // into one f32 factor of the scores, 0.35351562² = 0.12497330; the copied tiles are not
  // touched in shared memory.
  EXPECT_NE(source.find("Q/K scales folded into the scores"), std::string::npos) << source;
  EXPECT_NE(source.find("g_s[g_n][g_h] * 0.124973"), std::string::npos) << source;
  EXPECT_EQ(source.find("kiln_mul_f16x2(g_w"), std::string::npos) << source;
  // 128 keys are two whole tiles: no key is clamped or scored -inf.
  EXPECT_EQ(source.find("min(g_key"), std::string::npos) << source;
  // The mask is read at its (batch, key) coordinates, not by dividing the score's flat index.
  EXPECT_EQ(source.find("% 128;"), std::string::npos) << source;
  compile_for_sm80_and_sm90(program);
}

TEST(CodegenPoolAttention, OperandsThatAreNoStridedViewTakeTheElementPath) {
  // Q' through a reshape that mixes the sequence and batch axes: no strided view, so the kernel
  // reads all three operands through the element machinery, as before.
  Program program =
      lower_graph(*parse_graph(packed_attention_graph(2, 2, 80, /*strided_query=*/false)), {});
  ASSERT_EQ(program.kernels.size(), 1u);
  const std::string& source = program.kernels[0].source;
  EXPECT_EQ(source.find("kiln_cp_async"), std::string::npos) << source;
  EXPECT_EQ(source.find("ldmatrix"), std::string::npos) << source;
  // And separate Q, K, V inputs with K' stored [d][key] (keys contiguous, not the head size).
  Program separate = lower_text(attention_graph(100, "f16", 1, 2, 16));
  EXPECT_EQ(separate.kernels[0].source.find("kiln_cp_async"), std::string::npos);
  compile_for_sm80_and_sm90(program);
}

}  // namespace
}  // namespace kiln::codegen
