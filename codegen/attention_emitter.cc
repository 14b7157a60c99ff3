// The attention emitter (see the header).
#include "codegen/attention_emitter.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>

#include "codegen/element_emitter.h"
#include "ir/cuda_expr.h"
#include "ir/error.h"
#include "ir/fusion.h"

namespace kiln::codegen {
namespace {

constexpr uint32_t kThreads = 128;
constexpr int64_t kWarps = kThreads / 32;
constexpr int64_t kMaxSharedBytes = 48 * 1024;

// The body's three anchors and the sizes of one row: M query rows per batch, N keys, head size D
// (the first matmul's depth), E output columns.
struct AttentionShape {
  const Node* scores = nullptr;   // S = matmul(Q', K')
  const Node* softmax = nullptr;  // P = softmax(ops(S))
  const Node* output = nullptr;   // O = matmul(ops(P), V')
  Shape batch;
  int64_t rows = 1;  // batch elements × M: one thread block each
  int64_t queries = 0, keys = 0, depth = 0, columns = 0;
};

AttentionShape attention_shape(const KernelBody& body) {
  AttentionShape a;
  std::vector<const Node*> matmuls;
  for (const Node* node : body.nodes) {
    if (node->op() == "matmul") matmuls.push_back(node);
    if (node->op() == "softmax") a.softmax = node;
  }
  if (matmuls.size() != 2 || !a.softmax) {
    throw UnsupportedError("an attention body of other than two matmuls and a softmax");
  }
  a.scores = matmuls[0];
  a.output = matmuls[1];
  for (const Node* matmul : matmuls) {
    if (matmul->operand(0)->type().rank() < 2 || matmul->operand(1)->type().rank() < 2) {
      throw UnsupportedError(matmul->describe() + ": matmul of a rank-1 operand on the GPU");
    }
  }
  const Shape& s = a.scores->result()->type().shape;
  const Shape& o = a.output->result()->type().shape;
  const int64_t rank = static_cast<int64_t>(s.size());
  const int64_t axis = a.softmax->int_attr("axis");
  if (axis != -1 && axis != rank - 1) {
    throw UnsupportedError(a.softmax->describe() +
                           ": attention with a softmax not over the last axis");
  }
  if (a.softmax->result()->type().shape != s || a.output->operand(0)->type().shape != s ||
      o.size() != s.size() || !std::equal(s.begin(), s.end() - 1, o.begin())) {
    throw UnsupportedError(
        a.softmax->describe() +
        ": attention whose scores, probabilities and output rows differ in shape");
  }
  a.batch.assign(s.begin(), s.end() - 2);
  for (int64_t dim : a.batch) a.rows *= dim;
  a.queries = s[s.size() - 2];
  a.rows *= a.queries;
  a.keys = s.back();
  a.depth = a.scores->operand(0)->type().shape.back();
  a.columns = o.back();
  return a;
}

bool is_tf32(const Node& matmul) { return matmul.has_attr("tf32") && matmul.int_attr("tf32") != 0; }

// TF32 operand rounding (codegen/device_functions.cc).
std::string tf32(const std::string& element) { return "kiln_round_to_tf32(" + element + ")"; }

// Operand `i` of `matmul` at (batch b, r, c), as a [batch..., r_size, c_size] matrix broadcast
// over the batch dims (as MatmulView in contraction_emitter.cc reads it).
std::string matmul_operand(ElementEmitter& e, const Node& matmul, size_t i, const Shape& batch,
                           const std::string& b, const std::string& r, const std::string& c,
                           int64_t r_size, int64_t c_size) {
  Shape full = batch;
  full.push_back(r_size);
  full.push_back(c_size);
  const std::string flat =
      e.index_temp(fmt::format("({} * {} + {}) * {} + {}", b, r_size, r, c_size, c));
  const Value* value = matmul.operand(i);
  const std::string element = e.element(value, e.broadcast_index(flat, full, value->type().shape));
  return is_tf32(matmul) ? tf32(element) : element;
}

// An anchor's element as the reference stores it: 16-bit results round to their format.
std::string rounded(const Node& anchor, const std::string& element) {
  const DType dtype = anchor.result()->type().dtype;
  if (dtype == DType::kF16) return "kiln_round_to_f16(" + element + ")";
  if (dtype == DType::kBF16) return "kiln_round_to_bf16(" + element + ")";
  return element;
}

bool is_f64(const Node& node) { return node.result()->type().dtype == DType::kF64; }

}  // namespace

bool is_attention_body(const KernelBody& body) {
  return body.kind == fusion_kind_name(FusionKind::kAttention);
}

KernelSpec emit_attention_kernel(const KernelBody& body) {
  const AttentionShape a = attention_shape(body);
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
  const int64_t out_count = a.output->result()->type().num_elements();
  for (const Value* output : body.outputs) {
    if (output->type().num_elements() != out_count) {
      throw UnsupportedError(fmt::format("{}: an attention output of {} elements, not {}",
                                         output->name(), output->type().num_elements(), out_count));
    }
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
  const std::string probability = is_tf32(*a.output) ? tf32("g_p[g_j]") : "g_p[g_j]";
  code.line(fmt::format("g_o += {} * {};", probability, value));
  e.close_block();
  const std::string at = e.index_temp(fmt::format("g_row * {} + g_e", cols));
  e.bind(a.output->result(), at, e.temp(acc, rounded(*a.output, "g_o")));
  for (size_t k = 0; k < body.outputs.size(); ++k) {
    const DType dtype = body.outputs[k]->type().dtype;
    code.line(fmt::format("{}[{}] = {};", outputs[k], at,
                          store_expression(dtype, e.element(body.outputs[k], at))));
  }
  e.close_block();
  spec.body = code.text();
  return spec;
}

}  // namespace kiln::codegen
