// The tensor-core attention kernel (see the header).
#include "codegen/attention_mma_emitter.h"

#include <fmt/format.h>

#include <limits>

#include "ir/cuda_expr.h"
#include "ir/error.h"

namespace kiln::codegen {
namespace {

constexpr int64_t kKeyTile = 64;
constexpr int64_t kWarpRows = 16;
constexpr int64_t kMaxHeadSize = 128;
constexpr int64_t kPadding = 8;         // 16-bit values after each shared-memory row
constexpr int64_t kTargetBlocks = 128;  // fewer warps a block below this many blocks

bool is_16_bit(DType dtype) { return dtype == DType::kF16 || dtype == DType::kBF16; }

// The 16-bit type both operands of `matmul` have, or kF32 when they are not 16-bit and equal.
DType operand_type(const Node& matmul) {
  const DType a = matmul.operand(0)->type().dtype, b = matmul.operand(1)->type().dtype;
  return a == b && is_16_bit(a) ? a : DType::kF32;
}

std::string pack_function(DType dtype) {
  return dtype == DType::kF16 ? "kiln_pack_f16x2" : "kiln_pack_bf16x2";
}

std::string mma_function(DType dtype) {
  return dtype == DType::kF16 ? "kiln_mma_f16_16816" : "kiln_mma_bf16_16816";
}

// Whether only casts (to a wider float or to P''s type) lead from the softmax to P'.
bool casts_only_to_probabilities(const AttentionShape& a) {
  const DType target = a.output->operand(0)->type().dtype;
  for (const Value* value = a.output->operand(0); value != a.softmax->result();) {
    const Node* producer = value->producer();
    if (!producer || producer->op() != "cast") return false;
    const DType dtype = value->type().dtype;
    if (dtype != target && dtype != DType::kF32 && dtype != DType::kF64) return false;
    value = producer->operand(0);
  }
  return true;
}

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Warps a block: 4, unless the grid would have fewer than kTargetBlocks blocks.
int64_t warps_for(const AttentionShape& a) {
  for (int64_t warps : {4, 2}) {
    if (a.batch_count * ceil_div(a.queries, warps * kWarpRows) >= kTargetBlocks) return warps;
  }
  return 1;
}

// A 32-bit word of 16-bit shared memory at element offset `at`.
std::string word(const std::string& array, const std::string& at) {
  return fmt::format("*reinterpret_cast<unsigned*>(&{}[{}])", array, at);
}

}  // namespace

bool fits_mma_attention(const AttentionShape& a) {
  return is_16_bit(operand_type(*a.scores)) && is_16_bit(operand_type(*a.output)) &&
         a.depth % 16 == 0 && a.depth <= kMaxHeadSize && a.columns % 8 == 0 &&
         a.columns <= kMaxHeadSize && a.softmax->result()->type().dtype != DType::kF64 &&
         casts_only_to_probabilities(a);
}

KernelSpec emit_mma_attention_kernel(const KernelBody& body, const AttentionShape& a) {
  const int64_t warps = warps_for(a);
  const int64_t threads = warps * 32, query_tile = warps * kWarpRows;
  const int64_t tiles = ceil_div(a.queries, query_tile);
  if (a.batch_count * tiles > std::numeric_limits<int32_t>::max()) {
    throw UnsupportedError(a.softmax->describe() + ": too many query tiles for one launch");
  }
  const int64_t m = a.queries, n = a.keys, d = a.depth, cols = a.columns;
  const int64_t k_stride = d + kPadding, v_stride = kKeyTile + kPadding;
  const DType qk_type = operand_type(*a.scores), pv_type = operand_type(*a.output);
  const std::string qk_pack = pack_function(qk_type), pv_pack = pack_function(pv_type);
  const std::string minus_inf = cuda_literal(-std::numeric_limits<double>::infinity(), DType::kF32);

  KernelSpec spec;
  const std::vector<std::string> outputs =
      begin_spec(spec, body, static_cast<uint32_t>(threads),
                 {static_cast<uint32_t>(a.batch_count * tiles), 1, 1});
  CodeWriter code(1);
  ElementEmitter e(code, spec.params, index_type_for(body, 0));
  const std::string& index = e.index_type();
  code.line(fmt::format("__shared__ __align__(16) unsigned short g_k[{}];", kKeyTile * k_stride));
  code.line(fmt::format("__shared__ __align__(16) unsigned short g_v[{}];", cols * v_stride));
  code.line(fmt::format("const {} g_b = blockIdx.x / {};", index, tiles));
  code.line(fmt::format("const int g_m0 = blockIdx.x % {} * {};", tiles, query_tile));
  code.line(
      "const int g_warp = threadIdx.x / 32, g_g = threadIdx.x % 32 / 4, g_t = threadIdx.x % 4;");
  code.line(fmt::format("const int g_row0 = g_m0 + g_warp * {};", kWarpRows));

  // The Q' tile, staged in g_k, into A fragments.
  e.open_block(
      fmt::format("for (int g_i = threadIdx.x; g_i < {}; g_i += {})", query_tile * d / 2, threads));
  code.line(fmt::format("const int g_r = g_i / {}, g_c = g_i % {} * 2;", d / 2, d / 2));
  code.line(fmt::format("const int g_q = min(g_m0 + g_r, {});", m - 1));
  const std::string q_lo = matmul_operand(e, *a.scores, 0, a.batch, "g_b", "g_q", "g_c", m, d);
  const std::string q_hi = matmul_operand(e, *a.scores, 0, a.batch, "g_b", "g_q", "g_c + 1", m, d);
  code.line(fmt::format("{} = {}({}, {});", word("g_k", fmt::format("g_r * {} + g_c", k_stride)),
                        qk_pack, q_lo, q_hi));
  e.close_block();
  code.line("__syncthreads();");
  code.line(fmt::format("unsigned g_qf[{}][4];", d / 16));
  code.line("#pragma unroll");
  e.open_block(fmt::format("for (int g_kk = 0; g_kk < {}; ++g_kk)", d / 16));
  code.line(fmt::format("const int g_at = (g_warp * {} + g_g) * {} + g_kk * 16 + 2 * g_t;",
                        kWarpRows, k_stride));
  for (int r = 0; r < 4; ++r) {
    const std::string offset = fmt::format("g_at + {}", (r % 2) * 8 * k_stride + (r / 2) * 8);
    code.line(fmt::format("g_qf[g_kk][{}] = {};", r, word("g_k", offset)));
  }
  e.close_block();
  code.line(fmt::format("float g_o[{}][4] = {{}};", cols / 8));
  code.line(
      fmt::format("float g_max[2] = {{{}, {}}}, g_sum[2] = {{0.0f, 0.0f}};", minus_inf, minus_inf));

  e.open_block(fmt::format("for (int g_key0 = 0; g_key0 < {}; g_key0 += {})", n, kKeyTile));
  code.line("__syncthreads();");
  // K' as [key][d], keys past N zero.
  e.open_block(
      fmt::format("for (int g_i = threadIdx.x; g_i < {}; g_i += {})", kKeyTile * d / 2, threads));
  code.line(fmt::format("const int g_r = g_i / {}, g_c = g_i % {} * 2;", d / 2, d / 2));
  code.line(fmt::format("const int g_key = min(g_key0 + g_r, {});", n - 1));
  const std::string k_lo = matmul_operand(e, *a.scores, 1, a.batch, "g_b", "g_c", "g_key", d, n);
  const std::string k_hi =
      matmul_operand(e, *a.scores, 1, a.batch, "g_b", "g_c + 1", "g_key", d, n);
  code.line(fmt::format("{} = g_key0 + g_r < {} ? {}({}, {}) : 0u;",
                        word("g_k", fmt::format("g_r * {} + g_c", k_stride)), n, qk_pack, k_lo,
                        k_hi));
  e.close_block();
  // V' transposed, as [e][key], keys past N zero.
  e.open_block(fmt::format("for (int g_i = threadIdx.x; g_i < {}; g_i += {})", kKeyTile / 2 * cols,
                           threads));
  code.line(fmt::format("const int g_c = g_i % {}, g_r = g_i / {} * 2;", cols, cols));
  code.line(fmt::format(
      "const int g_key_lo = min(g_key0 + g_r, {}), g_key_hi = min(g_key0 + g_r + 1, {});", n - 1,
      n - 1));
  const std::string v_lo =
      matmul_operand(e, *a.output, 1, a.batch, "g_b", "g_key_lo", "g_c", n, cols);
  const std::string v_hi =
      matmul_operand(e, *a.output, 1, a.batch, "g_b", "g_key_hi", "g_c", n, cols);
  code.line(
      fmt::format("{} = {}(g_key0 + g_r < {} ? {} : 0.0f, g_key0 + g_r + 1 < {} ? {} : 0.0f);",
                  word("g_v", fmt::format("g_c * {} + g_r", v_stride)), pv_pack, n, v_lo, n, v_hi));
  e.close_block();
  code.line("__syncthreads();");

  // S = Q'·K' for the warp's 16 rows and the tile's 64 keys.
  code.line(fmt::format("float g_s[{}][4] = {{}};", kKeyTile / 8));
  code.line("#pragma unroll");
  e.open_block(fmt::format("for (int g_kk = 0; g_kk < {}; ++g_kk)", d / 16));
  code.line("#pragma unroll");
  e.open_block(fmt::format("for (int g_n = 0; g_n < {}; ++g_n)", kKeyTile / 8));
  code.line(fmt::format("const int g_at = (g_n * 8 + g_g) * {} + g_kk * 16 + 2 * g_t;", k_stride));
  code.line(fmt::format("const unsigned g_kf[2] = {{{}, {}}};", word("g_k", "g_at"),
                        word("g_k", "g_at + 8")));
  code.line(fmt::format("{}(g_s[g_n], g_qf[g_kk], g_kf);", mma_function(qk_type)));
  e.close_block();
  e.close_block();

  // The score ops per element; keys past N score -inf.
  code.line("#pragma unroll");
  e.open_block(fmt::format("for (int g_n = 0; g_n < {}; ++g_n)", kKeyTile / 8));
  code.line("#pragma unroll");
  e.open_block("for (int g_h = 0; g_h < 4; ++g_h)");
  code.line(fmt::format("const int g_q = min(g_row0 + g_g + g_h / 2 * 8, {});", m - 1));
  code.line("const int g_key = g_key0 + g_n * 8 + 2 * g_t + g_h % 2;");
  const std::string score_at =
      e.index_temp(fmt::format("(g_b * {} + g_q) * {} + min(g_key, {})", m, n, n - 1));
  e.bind(a.scores->result(), score_at, e.temp("float", rounded(*a.scores, "g_s[g_n][g_h]")));
  code.line(fmt::format("g_s[g_n][g_h] = g_key < {} ? {} : {};", n,
                        e.element(a.softmax->operand(0), score_at), minus_inf));
  e.close_block();
  e.close_block();

  // Online softmax: row g (r = 0) and row g + 8 (r = 1) of the warp's 16.
  code.line("#pragma unroll");
  e.open_block("for (int g_r = 0; g_r < 2; ++g_r)");
  code.line(fmt::format("float g_tile_max = {};", minus_inf));
  code.line("#pragma unroll");
  e.open_block(fmt::format("for (int g_n = 0; g_n < {}; ++g_n)", kKeyTile / 8));
  code.line(
      "g_tile_max = kiln_max(g_tile_max, kiln_max(g_s[g_n][2 * g_r], g_s[g_n][2 * g_r + 1]));");
  e.close_block();
  code.line("g_tile_max = kiln_max(g_tile_max, __shfl_xor_sync(0xffffffffu, g_tile_max, 1));");
  code.line("g_tile_max = kiln_max(g_tile_max, __shfl_xor_sync(0xffffffffu, g_tile_max, 2));");
  code.line("const float g_new_max = kiln_max(g_max[g_r], g_tile_max);");
  code.line(fmt::format("const float g_base = g_new_max == {} ? 0.0f : g_new_max;", minus_inf));
  code.line("const float g_scale = exp(g_max[g_r] - g_base);");
  code.line("g_max[g_r] = g_new_max;");
  code.line("g_sum[g_r] *= g_scale;");
  code.line("#pragma unroll");
  e.open_block(fmt::format("for (int g_c = 0; g_c < {}; ++g_c)", cols / 8));
  code.line("g_o[g_c][2 * g_r] *= g_scale;");
  code.line("g_o[g_c][2 * g_r + 1] *= g_scale;");
  e.close_block();
  code.line("#pragma unroll");
  e.open_block(fmt::format("for (int g_n = 0; g_n < {}; ++g_n)", kKeyTile / 8));
  code.line("g_s[g_n][2 * g_r] = exp(g_s[g_n][2 * g_r] - g_base);");
  code.line("g_s[g_n][2 * g_r + 1] = exp(g_s[g_n][2 * g_r + 1] - g_base);");
  code.line("g_sum[g_r] += g_s[g_n][2 * g_r] + g_s[g_n][2 * g_r + 1];");
  e.close_block();
  e.close_block();

  // O += P·V': the score fragments of key columns 16k..16k+15 are P's A fragment.
  code.line("#pragma unroll");
  e.open_block(fmt::format("for (int g_kk = 0; g_kk < {}; ++g_kk)", kKeyTile / 16));
  code.line(fmt::format(
      "const unsigned g_pf[4] = {{{0}(g_s[2 * g_kk][0], g_s[2 * g_kk][1]), {0}(g_s[2 * g_kk][2], "
      "g_s[2 * g_kk][3]), {0}(g_s[2 * g_kk + 1][0], g_s[2 * g_kk + 1][1]), {0}(g_s[2 * g_kk + "
      "1][2], g_s[2 * g_kk + 1][3])}};",
      pv_pack));
  code.line("#pragma unroll");
  e.open_block(fmt::format("for (int g_c = 0; g_c < {}; ++g_c)", cols / 8));
  code.line(fmt::format("const int g_at = (g_c * 8 + g_g) * {} + g_kk * 16 + 2 * g_t;", v_stride));
  code.line(fmt::format("const unsigned g_vf[2] = {{{}, {}}};", word("g_v", "g_at"),
                        word("g_v", "g_at + 8")));
  code.line(fmt::format("{}(g_o[g_c], g_pf, g_vf);", mma_function(pv_type)));
  e.close_block();
  e.close_block();
  e.close_block();

  // O / sum through the epilogue, rows past M not stored.
  code.line("#pragma unroll");
  e.open_block("for (int g_r = 0; g_r < 2; ++g_r)");
  code.line("g_sum[g_r] += __shfl_xor_sync(0xffffffffu, g_sum[g_r], 1);");
  code.line("g_sum[g_r] += __shfl_xor_sync(0xffffffffu, g_sum[g_r], 2);");
  e.close_block();
  code.line("#pragma unroll");
  e.open_block(fmt::format("for (int g_c = 0; g_c < {}; ++g_c)", cols / 8));
  code.line("#pragma unroll");
  e.open_block("for (int g_h = 0; g_h < 4; ++g_h)");
  code.line("const int g_q = g_row0 + g_g + g_h / 2 * 8;");
  e.open_block(fmt::format("if (g_q < {})", m));
  const std::string at =
      e.index_temp(fmt::format("(g_b * {} + g_q) * {} + g_c * 8 + 2 * g_t + g_h % 2", m, cols));
  e.bind(a.output->result(), at,
         e.temp("float", rounded(*a.output, "g_o[g_c][g_h] / g_sum[g_h / 2]")));
  store_outputs(e, body, outputs, at);
  e.close_block();
  e.close_block();
  e.close_block();
  spec.body = code.text();
  return spec;
}

}  // namespace kiln::codegen
