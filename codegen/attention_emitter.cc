// The attention emitter (see the header).
#include "codegen/attention_emitter.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>

#include "codegen/attention_body.h"
#include "codegen/attention_tiled_emitter.h"
#include "codegen/cuda_expr.h"
#include "codegen/element_emitter.h"
#include "ir/error.h"
#include "ir/fusion.h"

namespace kiln::codegen {
namespace {

constexpr uint32_t kThreads = 128;
constexpr int64_t kWarps = kThreads / 32;
constexpr int64_t kMaxSharedBytes = 48 * 1024;

bool is_f64(const Node& node) { return node.result()->type().dtype == DType::kF64; }

}  // namespace

bool is_attention_body(const KernelBody& body) {
  return body.kind == fusion_kind_name(FusionKind::kAttention);
}

namespace {

// One thread block per query row (see the header).
KernelSpec emit_row_attention_kernel(const KernelBody& body, const AttentionShape& a) {
  const std::string acc =
      is_f64(*a.scores) || is_f64(*a.softmax) || is_f64(*a.output) ? "double" : "float";
  const DType acc_dtype = acc == "double" ? DType::kF64 : DType::kF32;
  const int64_t shared_bytes =
      (a.depth + a.keys + kWarps) * static_cast<int64_t>(dtype_size(acc_dtype));
  if (shared_bytes > kMaxSharedBytes) {
    throw UnsupportedError(fmt::format(
        "{}: attention over {} keys of head size {} needs {} bytes of shared memory (at most {})",
        a.softmax->describe(), a.keys, a.depth, shared_bytes, kMaxSharedBytes));
  }
  if (a.rows > std::numeric_limits<int32_t>::max()) {
    throw UnsupportedError(a.softmax->describe() + ": too many query rows for one launch");
  }

  KernelSpec spec;
  const std::vector<std::string> outputs =
      begin_spec(spec, body, kThreads, {static_cast<uint32_t>(a.rows), 1, 1});

  CodeWriter code(1);
  ElementEmitter e(code, spec.params, index_type_for(body, 0));
  const std::string& index = e.index_type();
  const int64_t n = a.keys, d = a.depth, cols = a.columns;
  code.line(fmt::format("__shared__ {} g_q[{}];", acc, d));
  code.line(fmt::format("__shared__ {} g_p[{}];", acc, n));
  code.line(fmt::format("__shared__ {} g_partials[{}];", acc, kWarps));
  code.line(fmt::format("const {} g_row = blockIdx.x;", index));
  code.line(fmt::format("const {} g_b = g_row / {};", index, a.queries));
  code.line(fmt::format("const {} g_m = g_row % {};", index, a.queries));

  // 1. The query row.
  e.open_block(fmt::format("for (int g_d = threadIdx.x; g_d < {}; g_d += {})", d, kThreads));
  code.line("g_q[g_d] = " +
            matmul_operand(e, *a.scores, 0, a.batch, "g_b", "g_m", "g_d", a.queries, d) + ";");
  e.close_block();
  code.line("__syncthreads();");

  // 2. The scores through the ops up to the softmax, and their maximum.
  code.line(fmt::format("{} g_max = {};", acc,
                        cuda_literal(-std::numeric_limits<double>::infinity(), acc_dtype)));
  e.open_block(fmt::format("for (int g_j = threadIdx.x; g_j < {}; g_j += {})", n, kThreads));
  code.line(fmt::format("{} g_s = 0;", acc));
  e.open_block(fmt::format("for (int g_d = 0; g_d < {}; ++g_d)", d));
  const std::string key = matmul_operand(e, *a.scores, 1, a.batch, "g_b", "g_d", "g_j", d, n);
  code.line(fmt::format("g_s += g_q[g_d] * {};", key));
  e.close_block();
  std::string score_index = e.index_temp(fmt::format("g_row * {} + g_j", n));
  e.bind(a.scores->result(), score_index, e.temp(acc, rounded(*a.scores, "g_s")));
  const std::string score = e.element(a.softmax->operand(0), score_index);
  code.line(fmt::format("g_p[g_j] = {};", score));
  code.line("g_max = kiln_max(g_max, g_p[g_j]);");
  e.close_block();
  code.line("g_max = kiln_block_reduce(g_max, kiln_max_op(), g_partials);");

  // 3. The softmax, and the ops from it to the second matmul's operand.
  code.line(fmt::format("{} g_sum = 0;", acc));
  e.open_block(fmt::format("for (int g_j = threadIdx.x; g_j < {}; g_j += {})", n, kThreads));
  code.line("g_p[g_j] = exp(g_p[g_j] - g_max);");
  code.line("g_sum += g_p[g_j];");
  e.close_block();
  code.line("g_sum = kiln_block_reduce(g_sum, kiln_sum_op(), g_partials);");
  e.open_block(fmt::format("for (int g_j = threadIdx.x; g_j < {}; g_j += {})", n, kThreads));
  score_index = e.index_temp(fmt::format("g_row * {} + g_j", n));
  e.bind(a.softmax->result(), score_index, e.temp(acc, rounded(*a.softmax, "g_p[g_j] / g_sum")));
  code.line(fmt::format("g_p[g_j] = {};", e.element(a.output->operand(0), score_index)));
  e.close_block();
  code.line("__syncthreads();");

  // 4. The output columns, through the epilogue.
  e.open_block(fmt::format("for (int g_e = threadIdx.x; g_e < {}; g_e += {})", cols, kThreads));
  code.line(fmt::format("{} g_o = 0;", acc));
  e.open_block(fmt::format("for (int g_j = 0; g_j < {}; ++g_j)", n));
  const std::string value = matmul_operand(e, *a.output, 1, a.batch, "g_b", "g_j", "g_e", n, cols);
  const std::string probability = is_tf32(*a.output) ? "kiln_round_to_tf32(g_p[g_j])" : "g_p[g_j]";
  code.line(fmt::format("g_o += {} * {};", probability, value));
  e.close_block();
  const std::string at = e.index_temp(fmt::format("g_row * {} + g_e", cols));
  e.bind(a.output->result(), at, e.temp(acc, rounded(*a.output, "g_o")));
  store_outputs(e, body, outputs, at);
  e.close_block();
  spec.body = code.text();
  return spec;
}

}  // namespace

std::vector<std::string> attention_tactics(const KernelBody& body, const Target& target) {
  const AttentionShape a = attention_shape(body);
  return fits_tiled_attention(a) ? tiled_attention_tactics(body, a, target)
                                 : std::vector<std::string>{};
}

KernelSpec emit_attention_kernel(const KernelBody& body, const Target& target, int tactic) {
  const AttentionShape a = attention_shape(body);
  if (fits_tiled_attention(a)) return emit_tiled_attention_kernel(body, a, target, tactic);
  if (tactic != 0) {
    throw InternalError("the row attention kernel has no tactic " + std::to_string(tactic));
  }
  return emit_row_attention_kernel(body, a);
}

}  // namespace kiln::codegen
