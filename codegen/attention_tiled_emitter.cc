// The tiled attention kernel (see the header).
#include "codegen/attention_tiled_emitter.h"

#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <limits>
#include <optional>
#include <set>

#include "codegen/cuda_expr.h"
#include "codegen/strided_view.h"
#include "ir/error.h"
#include "ir/half.h"
#include "ir/integer_math.h"
#include "ir/op_registry.h"

namespace kiln::codegen {
namespace {

constexpr int64_t kThreads = 128;
constexpr int64_t kWarps = kThreads / 32;
constexpr int64_t kWarpRows = 16;
// Tensor cores: 64-key tiles of 16-bit values, rows padded by 8 values; head sizes up to 128.
constexpr int64_t kMmaKeyTile = 64;
constexpr int64_t kMmaPadding = 8;
constexpr int64_t kMmaMaxHeadSize = 128;
// Two row groups a warp (pairs_row_groups): head sizes up to 64.
constexpr int64_t kPairedMaxHeadSize = 64;
// f32 on the CUDA cores: 32-key tiles of floats, rows padded by 4; head sizes up to 64 (Q' stays
// in shared memory).
constexpr int64_t kSimtKeyTile = 32;
constexpr int64_t kSimtPadding = 4;
constexpr int64_t kSimtMaxHeadSize = 64;
// Strided operands come by 16-byte cp.async: 8 16-bit values a copy.
constexpr int64_t kCopyElements = 8;
constexpr int64_t kStaticSharedBytes = 48 * 1024;
constexpr double kLog2e = 1.4426950408889634;

// The 16-bit type both operands of `matmul` have, or kF32 when they are not 16-bit and equal.
DType operand_type(const Node& matmul) {
  const DType a = matmul.operand(0)->type().dtype, b = matmul.operand(1)->type().dtype;
  return a == b && is_16_bit_float(a) ? a : DType::kF32;
}

std::string pack_function(DType dtype) {
  return dtype == DType::kF16 ? "kiln_pack_f16x2" : "kiln_pack_bf16x2";
}

std::string mma_function(DType dtype) {
  return dtype == DType::kF16 ? "kiln_mma_f16_16816" : "kiln_mma_bf16_16816";
}

// What leads from the softmax to P': only casts (to a wider float or to P''s type), or casts
// and PyTorch's NaN guard where(is_nan(P), 0, P) once; then the probabilities may be rounded
// before they are normalized (one pass, online softmax). Anything else: two exact passes.
enum class ProbabilityPath { kCasts, kNanGuard, kExact };

bool is_zero_scalar(const Value* value) {
  return value->is_constant() && value->has_data() && value->type().num_elements() == 1 &&
         value->data().to_doubles()[0] == 0.0;
}

// Whether `node` is where(is_nan(x), 0, x).
bool is_nan_guard(const Node& node) {
  if (node.op() != "where" || !is_zero_scalar(node.operand(1))) return false;
  const Node* test = node.operand(0)->producer();
  return test && test->op() == "is_nan" && test->operand(0) == node.operand(2);
}

ProbabilityPath probability_path(const AttentionShape& a) {
  const DType target = a.output->operand(0)->type().dtype;
  bool guarded = false;
  for (const Value* value = a.output->operand(0); value != a.softmax->result();) {
    const Node* producer = value->producer();
    const DType dtype = value->type().dtype;
    if (!producer || (dtype != target && dtype != DType::kF32 && dtype != DType::kF64)) {
      return ProbabilityPath::kExact;
    }
    if (producer->op() == "cast") {
      value = producer->operand(0);
    } else if (!guarded && is_nan_guard(*producer)) {
      guarded = true;
      value = producer->operand(2);
    } else {
      return ProbabilityPath::kExact;
    }
  }
  return guarded ? ProbabilityPath::kNanGuard : ProbabilityPath::kCasts;
}

bool is_f32(const Value* value) { return value->type().dtype == DType::kF32; }

// Whether the f32 kernel on the CUDA cores fits: every matmul operand, the scores, the softmax
// and O in f32.
bool fits_simt(const AttentionShape& a) {
  return is_f32(a.scores->operand(0)) && is_f32(a.scores->operand(1)) &&
         is_f32(a.scores->result()) && is_f32(a.softmax->result()) &&
         is_f32(a.output->operand(0)) && is_f32(a.output->operand(1)) &&
         is_f32(a.output->result()) && a.depth % 4 == 0 && a.depth <= kSimtMaxHeadSize &&
         a.columns % 8 == 0 && a.columns <= kSimtMaxHeadSize;
}

// A 32-bit word of 16-bit shared memory at element offset `at`.
std::string word(const std::string& array, const std::string& at) {
  return fmt::format("*reinterpret_cast<unsigned*>(&{}[{}])", array, at);
}

// A vector of shared floats at element offset `at` (type g_float4 or g_float2).
std::string vector_at(const std::string& type, const std::string& array, const std::string& at) {
  return fmt::format("*reinterpret_cast<const {}*>(&{}[{}])", type, array, at);
}

// a.x * b.x + a.y * b.y + ... over `fields`.
std::string dot(const std::string& a, const std::string& b, const std::string& fields) {
  std::string sum;
  for (char field : fields) {
    sum += fmt::format("{}{}.{} * {}.{}", sum.empty() ? "" : " + ", a, field, b, field);
  }
  return sum;
}

// A matmul operand that is a strided view of a kernel input (codegen/strided_view.h), perhaps
// followed by elementwise ops whose other operands are one-element constants (a scale): its
// tiles come by cp.async, rows of the head dimension (contiguous, 16-byte aligned) at a time,
// and the ops run on each copied element in shared memory.
struct StridedOperand {
  const Value* operand = nullptr;  // the matmul's operand
  const Value* view = nullptr;     // the strided view the ops (if any) start from
  const Value* source = nullptr;   // the kernel input it reads
  int64_t offset = 0;
  std::vector<int64_t> batch_strides;  // per batch dim of the attention (0: broadcast)
  int64_t row_stride = 0;              // per query (Q') or key (K', V')
  bool transformed() const { return view != operand; }
};

// The f16 bits of c when `operand` is the one op mul(view, c) (or mul(c, view)) on f16 values, c
// a one-element constant: the kernel multiplies pairs by mul.rn.f16x2.
std::optional<uint16_t> f16_scale(const StridedOperand& operand) {
  const Node* node = operand.operand->producer();
  if (!operand.transformed() || !node || node->op() != "mul" ||
      operand.operand->type().dtype != DType::kF16) {
    return std::nullopt;
  }
  for (size_t k = 0; k < 2; ++k) {
    const Value* c = node->operand(k);
    if (node->operand(1 - k) == operand.view && c->is_constant() && c->has_data() &&
        c->type().num_elements() == 1 && c->type().dtype == DType::kF16) {
      return double_to_half_bits(c->data().get_double(0));
    }
  }
  return std::nullopt;
}

bool is_one_element_constant(const Value* value) {
  return value->is_constant() && value->type().num_elements() == 1;
}

// Operand `i` of `matmul` as a StridedOperand whose head dimension is axis -1 (`head_last`) or
// -2, or nullopt: then its elements come through the element machinery.
std::optional<StridedOperand> strided_operand(const KernelBody& body, const AttentionShape& a,
                                              const Node& matmul, size_t i, bool head_last) {
  const auto is_input = [&](const Value* value) {
    return std::find(body.inputs.begin(), body.inputs.end(), value) != body.inputs.end();
  };
  StridedOperand result;
  result.operand = matmul.operand(i);
  const Shape& shape = result.operand->type().shape;
  const DType dtype = result.operand->type().dtype;
  // Step back over elementwise ops of one-element constants.
  const Value* value = result.operand;
  while (!is_input(value)) {
    const Node* node = value->producer();
    if (!node || node->body() || node->results().size() != 1) break;
    const OpCategory category = node->info().category;
    if (category != OpCategory::kElementwise && category != OpCategory::kBroadcast) break;
    const Value* main = nullptr;
    bool single = true;
    for (const Value* operand : node->operands()) {
      if (is_one_element_constant(operand)) continue;
      single = single && !main;
      main = operand;
    }
    if (!main || !single || main->type().shape != shape) break;
    value = main;
  }
  const std::optional<StridedView> view = strided_view(value, is_input);
  if (!view || view->source->type().dtype != dtype || shape.size() < 2) return std::nullopt;
  result.view = value;
  result.source = view->source;
  result.offset = view->offset;
  const size_t rank = shape.size();
  const size_t head_axis = head_last ? rank - 1 : rank - 2;
  const size_t row_axis = head_last ? rank - 2 : rank - 1;
  if (view->strides[head_axis] != 1) return std::nullopt;
  result.row_stride = view->strides[row_axis];
  const size_t batch_dims = rank - 2;
  if (batch_dims > a.batch.size()) return std::nullopt;
  const size_t lead = a.batch.size() - batch_dims;
  for (size_t d = 0; d < a.batch.size(); ++d) {
    result.batch_strides.push_back(d < lead || shape[d - lead] == 1 ? 0
                                                                    : view->strides[d - lead]);
  }
  // Every row starts 16-byte aligned (kernel buffers are).
  bool aligned = result.offset % kCopyElements == 0 && result.row_stride % kCopyElements == 0;
  for (const int64_t stride : result.batch_strides) aligned = aligned && stride % kCopyElements == 0;
  if (!aligned) return std::nullopt;
  return result;
}

// Writes the kernel. The block's 4 warps are row_warps groups of 16 · row_groups query rows ×
// key_splits slices of each key tile. The tile math is mma.sync on 16-bit operands (tensor_cores_)
// or f32 FMAs on the CUDA cores; either way a thread holds the scores and the output in the mma
// accumulator's layout (rows g and g + 8, columns 2t and 2t + 1 of each 8 columns).
class TiledAttentionWriter {
 public:
  // `row_warps`: 4, 2 or 1; `row_groups`: 1, or 2 where pairs_row_groups() (a tactic's).
  TiledAttentionWriter(const KernelBody& body, const AttentionShape& a, int64_t row_warps,
                       int64_t row_groups, KernelSpec& spec)
      : body_(body), a_(a), spec_(spec), row_warps_(row_warps), groups_(row_groups) {
    tensor_cores_ = !fits_simt(a);
    key_tile_ = tensor_cores_ ? kMmaKeyTile : kSimtKeyTile;
    const int64_t padding = tensor_cores_ ? kMmaPadding : kSimtPadding;
    key_splits_ = kWarps / row_warps_;
    query_tile_ = row_warps_ * kWarpRows * groups_;
    split_keys_ = key_tile_ / key_splits_;
    tiles_ = ceil_div(a.queries, query_tile_);
    // Row strides of the shared tiles. Tensor cores: Q' and K' [row][d], V' [e][key], 16-bit;
    // CUDA cores: Q' and K' [row][d], V' [key][e], P [row][key] per warp, f32.
    q_stride_ = k_stride_ = a.depth + padding;
    v_stride_ = tensor_cores_ ? key_tile_ + padding : a.columns + padding;
    // Strided copies: 16-byte chunks, a row's chunks dividing the block's threads.
    const auto divides_threads = [](int64_t size) { return kThreads % (size / kCopyElements) == 0; };
    if (tensor_cores_ && a.columns % 16 == 0 && divides_threads(a.depth) &&
        divides_threads(a.columns)) {
      auto q = strided_operand(body, a, *a.scores, 0, /*head_last=*/true);
      auto k = strided_operand(body, a, *a.scores, 1, /*head_last=*/false);
      auto v = strided_operand(body, a, *a.output, 1, /*head_last=*/true);
      if (q && k && v) {
        strided_ = true;
        q_ = *q;
        k_ = *k;
        v_ = *v;
        v_stride_ = a.columns + padding;  // V' as [key][e], read by ldmatrix.trans
        fold_scales();
      }
    }
    p_stride_ = split_keys_ + padding;
    qk_type_ = operand_type(*a.scores);
    pv_type_ = operand_type(*a.output);
    const ProbabilityPath path = probability_path(a);
    online_ = path != ProbabilityPath::kExact;
    nan_guard_ = path == ProbabilityPath::kNanGuard;
    // A folded scale of f16 Q'K' with nothing between the scores and the online softmax joins
    // log2(e) in the exponent: p = 2^(s·k − max·k) by one FFMA a score, k = scale·log2(e) (as
    // flash attention does; f16 scores are at most 65504²·D, so s·k cannot overflow).
    scale_in_exponent_ = folded_factor_ && *folded_factor_ > 0 && online_ &&
                         tensor_cores_ && qk_type_ == DType::kF16 && plain_scores();
    minus_inf_ = cuda_literal(-std::numeric_limits<double>::infinity(), DType::kF32);
    plus_inf_ = cuda_literal(std::numeric_limits<double>::infinity(), DType::kF32);
    find_hoisted();
    if (groups_ != 1 && (groups_ != 2 || !pairs_row_groups() || key_splits_ != 1)) {
      throw InternalError(fmt::format("tiled attention: {} row groups a warp", groups_));
    }
  }

  // Whether a warp may take two groups of 16 query rows (32 rows, 128 a block): on tensor cores,
  // Q', K', V' strided, online softmax, head sizes D and E at most 64. Each K' and V' fragment
  // loaded by ldmatrix then feeds two mmas instead of one, halving the shared-memory reads per
  // mma (FlashAttention-2's 128-row tiles do the same). At D = E = 128 the doubled fragments
  // spill (255 registers, 1.2 KB of spill stores under ptxas for sm_80) and the 102 KB of shared
  // memory exceed sm_86's and sm_89's 99 KB a block; at 64 the kernel takes 54 KB.
  bool pairs_row_groups() const {
    return tensor_cores_ && strided_ && online_ && a_.depth <= kPairedMaxHeadSize &&
           a_.columns <= kPairedMaxHeadSize;
  }

  void write() {
    if (a_.batch_count * tiles_ > std::numeric_limits<int32_t>::max()) {
      throw UnsupportedError(a_.softmax->describe() + ": too many query tiles for one launch");
    }
    outputs_ =
        begin_spec(spec_, body_, kThreads, {static_cast<uint32_t>(a_.batch_count * tiles_), 1, 1});
    const bool half8 =
        (strided_ && (transforms_queries() || transforms_keys() || v_.transformed())) ||
        (normalizes_in_registers() && stores_vectors());
    if (half8) {
      spec_.definitions +=
          "union __align__(16) g_half8 {\n  unsigned short h[8];\n  unsigned w[4];\n};\n";
    }
    if (!tensor_cores_) {
      spec_.definitions += "struct __align__(16) g_float4 {\n  float x, y, z, w;\n};\n";
    }
    if (!tensor_cores_ || normalizes_in_registers()) {
      spec_.definitions += "struct __align__(8) g_float2 {\n  float x, y;\n};\n";
    }
    CodeWriter code(1);
    ElementEmitter e(code, spec_.params, index_type_for(body_, 0));
    declarations(e);
    load_queries(e);
    code.line(fmt::format("float g_o{}[{}][4] = {{}};", groups_dim(), a_.columns / 8));
    const int64_t rows = 2 * groups_;  // a thread's rows: g, g + 8 (, g + 16, g + 24)
    const auto repeated = [&](const std::string& value) {
      std::string list;
      for (int64_t r = 0; r < rows; ++r) list += (r ? ", " : "") + value;
      return list;
    };
    code.line(fmt::format("float g_max[{0}] = {{{1}}}, g_sum[{0}] = {{{2}}};", rows,
                          repeated(minus_inf_), repeated("0.0f")));
    if (nan_guard_) code.line(fmt::format("bool g_nan[{}] = {{{}}};", rows, repeated("false")));
    fill_row_values(e);
    if (online_) {
      key_loop(e, /*statistics_only=*/false);
      sum_over_quad(e);
    } else {
      key_loop(e, /*statistics_only=*/true);
      sum_over_quad(e);
      if (key_splits_ > 1) combine_statistics(e);
      key_loop(e, /*statistics_only=*/false);
    }
    epilogue(e);
    spec_.body = code.text();
    spec_.tactic = fmt::format(
        "tiled attention, {} on {}, {} query rows x {} keys a step, {} warp(s) a key tile, {}{}",
        tensor_cores_ ? "mma.sync" : "f32 FMA", tensor_cores_ ? "tensor cores" : "CUDA cores",
        query_tile_, key_tile_, key_splits_,
        strided_ ? "Q/K/V by cp.async from strided views" : "Q/K/V through the element machinery",
        online_ ? ", online softmax (one pass)" : ", exact softmax (two passes)");
    if (groups_ > 1) spec_.tactic += fmt::format(", {} query rows a warp", groups_ * kWarpRows);
    if (folded_factor_) {
      spec_.tactic += scale_in_exponent_ ? ", Q/K scales folded into the exponent"
                                         : ", Q/K scales folded into the scores";
    }
    if (!hoisted_.empty()) {
      int64_t per_key = 0;
      for (const Hoisted& h : hoisted_) per_key += h.per_key ? 1 : 0;
      spec_.tactic += fmt::format(", score operands hoisted ({} per key tile, {} per row)",
                                  per_key, static_cast<int64_t>(hoisted_.size()) - per_key);
    }
    // S = Q'K'^T and O = P V': 2·M·N·(D + E) a batch element.
    spec_.flops = 2 * a_.batch_count * a_.queries * a_.keys * (a_.depth + a_.columns);
  }

 private:
  // Q' and K' that are each a strided view times one f16 constant (d^-1/4 each, as PyTorch's
  // ONNX export of scaled_dot_product_attention writes it): the scores are multiplied by the
  // constants' product in f32 instead of each K' tile being scaled in shared memory (a pass over
  // the tile and a barrier per key tile), as flash attention scales; more precise than the
  // graph's two f16 multiplies.
  void fold_scales() {
    double factor = 1.0;
    for (const StridedOperand* operand : {&q_, &k_}) {
      if (!operand->transformed()) continue;
      const std::optional<uint16_t> bits = f16_scale(*operand);
      if (!bits) return;
      factor *= static_cast<double>(half_bits_to_float(*bits));
    }
    if (!q_.transformed() && !k_.transformed()) return;
    folded_factor_ = factor;
  }

  // Whether the scores reach the softmax through widening casts only (no mask, no further op).
  bool plain_scores() const {
    for (const Value* value = a_.softmax->operand(0); value != a_.scores->result();) {
      const Node* producer = value->producer();
      const DType dtype = value->type().dtype;
      if (!producer || producer->op() != "cast" || (dtype != DType::kF32 && dtype != DType::kF64)) {
        return false;
      }
      value = producer->operand(0);
    }
    return true;
  }

  // With two row groups a warp, a thread's fragment arrays (g_s, g_o, g_qf, g_pf) gain a leading
  // dimension indexed by g_rg, the group, and its row statistics (g_max, g_sum, g_nan, g_inv) run
  // over rows g, g + 8, g + 16 and g + 24: index 2 · g_rg + g_r. With one group the code is as it
  // was before groups.
  std::string groups_dim() const { return groups_ == 1 ? "" : fmt::format("[{}]", groups_); }
  std::string group(const std::string& array) const {
    return groups_ == 1 ? array : array + "[g_rg]";
  }
  std::string row() const { return groups_ == 1 ? "g_r" : "2 * g_rg + g_r"; }
  void open_groups(ElementEmitter& e) {
    if (groups_ == 1) return;
    e.code().line("#pragma unroll");
    e.open_block(fmt::format("for (int g_rg = 0; g_rg < {}; ++g_rg)", groups_));
  }
  void close_groups(ElementEmitter& e) {
    if (groups_ != 1) e.close_block();
  }
  // The two mmas of an ldmatrix.x4's B fragments `b` (two n8 blocks) for each row group:
  // accumulators `accumulator`[`n`] and [`n` + 1] += `a` · b, b + 2.
  void mma_pair(ElementEmitter& e, DType dtype, const std::string& accumulator,
                const std::string& n, const std::string& a, const std::string& b) {
    open_groups(e);
    for (const char* next : {"", " + 1"}) {
      e.code().line(fmt::format("{}({}[{}{}], {}, {}{});", mma_function(dtype), group(accumulator),
                                n, next, a, b, *next ? " + 2" : ""));
    }
    close_groups(e);
  }

  // Whether Q' (K') is copied and then transformed in shared memory.
  bool transforms_queries() const { return q_.transformed() && !folded_factor_; }
  bool transforms_keys() const { return k_.transformed() && !folded_factor_; }

  void declarations(ElementEmitter& e) {
    CodeWriter& code = e.code();
    const int64_t partial_bytes = 4 * kWarps * kWarpRows * groups_ * part_stride();
    if (strided_) {
      // Two buffers of K' [key][d] then two of V' [key][e]; Q' staged in K''s second, or (a
      // query tile of 128 rows) after V''s.
      const int64_t own_q = groups_ == 1 ? 0 : query_tile_ * q_stride_;
      const int64_t bytes = std::max(
          2 * (2 * (key_tile_ * k_stride_ + key_tile_ * v_stride_) + own_q), partial_bytes);
      if (bytes <= kStaticSharedBytes) {
        code.line(fmt::format("__shared__ __align__(16) unsigned char g_shared[{}];", bytes));
      } else {
        code.line("extern __shared__ __align__(16) unsigned char g_shared[];");
        spec_.shared_bytes = static_cast<uint32_t>(bytes);
      }
      code.line("unsigned short* const g_k = reinterpret_cast<unsigned short*>(g_shared);");
      code.line(fmt::format(
          "unsigned short* const g_qtile = g_k + {};",
          groups_ == 1 ? key_tile_ * k_stride_ : 2 * key_tile_ * (k_stride_ + v_stride_)));
      code.line(fmt::format("unsigned short* const g_v = g_k + {};", 2 * key_tile_ * k_stride_));
    } else if (tensor_cores_) {
      const int64_t tile_bytes = 2 * (key_tile_ * k_stride_ + a_.columns * v_stride_);
      code.line(fmt::format("__shared__ __align__(16) unsigned char g_shared[{}];",
                            std::max(tile_bytes, partial_bytes)));
      code.line("unsigned short* const g_k = reinterpret_cast<unsigned short*>(g_shared);");
      code.line("unsigned short* const g_qtile = g_k;");
      code.line(fmt::format("unsigned short* const g_v = g_k + {};", key_tile_ * k_stride_));
    } else {
      const int64_t tile_bytes =
          4 * (key_tile_ * (k_stride_ + v_stride_) + kWarps * kWarpRows * p_stride_);
      code.line(fmt::format("__shared__ __align__(16) unsigned char g_shared[{}];",
                            std::max(tile_bytes, partial_bytes)));
      code.line(
          fmt::format("__shared__ __align__(16) float g_qtile[{}];", query_tile_ * q_stride_));
      code.line("float* const g_k = reinterpret_cast<float*>(g_shared);");
      code.line(fmt::format("float* const g_v = g_k + {};", key_tile_ * k_stride_));
      code.line(fmt::format("float* const g_prob = g_v + {};", key_tile_ * v_stride_));
    }
    code.line("float* const g_part = reinterpret_cast<float*>(g_shared);");
    if (!normalizes_in_registers()) {
      code.line(
          fmt::format("__shared__ float g_row_max[{0}], g_row_sum[{0}];", kWarps * kWarpRows));
      if (nan_guard_) code.line(fmt::format("__shared__ bool g_row_nan[{}];", kWarps * kWarpRows));
    }
    for (const Hoisted& h : hoisted_) {
      if (h.per_key) {
        code.line(fmt::format("__shared__ {} {}[2][{}];", h.type, h.array, key_tile_));
      }
    }
    code.line(fmt::format("const {} g_b = blockIdx.x / {};", e.index_type(), tiles_));
    code.line(fmt::format("const int g_m0 = blockIdx.x % {} * {};", tiles_, query_tile_));
    code.line(
        "const int g_warp = threadIdx.x / 32, g_g = threadIdx.x % 32 / 4, g_t = threadIdx.x % 4;");
    code.line(fmt::format("const int g_rows = g_warp % {} * {};", row_warps_, kWarpRows * groups_));
    code.line(fmt::format("const int g_split = g_warp / {} * {};", row_warps_, split_keys_));
    // The batch index's coordinates (the score ops' indices use them).
    for (size_t d = 0; d < a_.batch.size(); ++d) {
      int64_t inner = 1;
      for (size_t k = d + 1; k < a_.batch.size(); ++k) inner *= a_.batch[k];
      batch_coordinates_.push_back(
          a_.batch[d] == 1 ? "0" : e.index_temp(fmt::format("g_b / {} % {}", inner, a_.batch[d])));
    }
    if (!strided_) return;
    code.line("const int g_lane = threadIdx.x % 32;");
    for (auto [operand, name] : {std::pair{&q_, "g_qsrc"}, {&k_, "g_ksrc"}, {&v_, "g_vsrc"}}) {
      std::string offset = fmt::format("{}LL", operand->offset);
      for (size_t d = 0; d < a_.batch.size(); ++d) {
        if (operand->batch_strides[d] == 0 || batch_coordinates_[d] == "0") continue;
        offset += fmt::format(" + (long long){} * {}", batch_coordinates_[d],
                              operand->batch_strides[d]);
      }
      code.line(fmt::format("const auto {} = {} + ({});", name,
                            spec_.params.read(operand->source), offset));
    }
  }

  // A loop over `count` elements (g_i) spread over the block, fully unrolled so that its loads
  // are in flight together; returns whether it opened a bounds check (count not a multiple of
  // kThreads), to pass to close_spread_loop.
  bool open_spread_loop(ElementEmitter& e, int64_t count) {
    e.code().line("#pragma unroll");
    e.open_block(fmt::format("for (int g_l = 0; g_l < {}; ++g_l)", ceil_div(count, kThreads)));
    e.code().line(fmt::format("const int g_i = threadIdx.x + g_l * {};", kThreads));
    if (count % kThreads == 0) return false;
    e.open_block(fmt::format("if (g_i < {})", count));
    return true;
  }

  void close_spread_loop(ElementEmitter& e, bool checked) {
    if (checked) e.close_block();
    e.close_block();
  }

  std::string operand(ElementEmitter& e, const Node& matmul, size_t i, const std::string& r,
                      const std::string& c, int64_t r_size, int64_t c_size) {
    return matmul_operand(e, matmul, i, a_.batch, "g_b", r, c, r_size, c_size);
  }

  // Elements (r, c) of a [rows × cols] tile into `array` (row stride `stride`): 16-bit pairs
  // along c packed into one word, or single floats; 0 where `valid` (if any) is false. `row_setup`
  // declares what `element(column)` (the operand at column `column` of row g_r) needs.
  void store_tile(ElementEmitter& e, const std::string& array, int64_t rows, int64_t cols,
                  int64_t stride, DType dtype, const std::string& row_setup,
                  const std::function<std::string(const std::string&)>& element,
                  const std::string& valid) {
    CodeWriter& code = e.code();
    const int64_t per_word = tensor_cores_ ? 2 : 1;
    const bool checked = open_spread_loop(e, rows * cols / per_word);
    if (tensor_cores_) {
      code.line(fmt::format("const int g_r = g_i / {0}, g_c = g_i % {0} * 2;", cols / 2));
      code.line(row_setup);
      const std::string packed =
          fmt::format("{}({}, {})", pack_function(dtype), element("g_c"), element("g_c + 1"));
      code.line(fmt::format("{} = {};", word(array, fmt::format("g_r * {} + g_c", stride)),
                            valid.empty() ? packed : valid + " ? " + packed + " : 0u"));
    } else {
      code.line(fmt::format("const int g_r = g_i / {0}, g_c = g_i % {0};", cols));
      code.line(row_setup);
      const std::string value = element("g_c");
      code.line(fmt::format("{}[g_r * {} + g_c] = {};", array, stride,
                            valid.empty() ? value : valid + " ? " + value + " : 0.0f"));
    }
    close_spread_loop(e, checked);
  }

  // Copies (or, with `transform`, runs the operand's elementwise ops on what was copied) `rows`
  // rows of `operand` into `array` (row stride `stride`), 8 values a thread at a time: row r is
  // the operand's row `first + r` (a key, or a query), zero where that is `limit` or more. Thread
  // i takes column chunk i % chunks of rows i / chunks + l · (threads / chunks), so each address is
  // one per-thread base plus constants.
  void copy_rows(ElementEmitter& e, const StridedOperand& operand, const std::string& source,
                 const std::string& array, int64_t rows, int64_t cols, int64_t stride,
                 const std::string& first, int64_t limit, bool transform) {
    CodeWriter& code = e.code();
    const int64_t chunks = cols / kCopyElements;
    const int64_t rows_per_pass = kThreads / chunks;  // chunks divides kThreads (see fits)
    e.open_block("");
    code.line(fmt::format("const int g_cr = threadIdx.x / {}, g_cc = threadIdx.x % {} * {};",
                          chunks, chunks, kCopyElements));
    code.line("#pragma unroll");
    e.open_block(fmt::format("for (int g_l = 0; g_l < {}; ++g_l)", ceil_div(rows, rows_per_pass)));
    code.line(fmt::format("const int g_r = g_cr + g_l * {};", rows_per_pass));
    if (rows % rows_per_pass != 0) e.open_block(fmt::format("if (g_r < {})", rows));
    code.line(fmt::format("const int g_row = {} + g_r;", first));
    const std::string valid = fmt::format("g_row < {}", limit);
    const std::string at = fmt::format("{} + g_r * {} + g_cc", array, stride);
    if (!transform) {
      // Rows past the limit are zero-filled: nothing is read at the (valid) address given.
      code.line(fmt::format(
          "kiln_cp_async_16({0}, {1} ? {2} + (long long)g_row * {3} + g_cc : {2}, {1});", at, valid,
          source, operand.row_stride));
    } else {
      // Rows past the limit stay zero (P' is 0 there; ops on a zero could give NaN).
      e.open_block(fmt::format("if ({})", valid));
      const DType dtype = operand.operand->type().dtype;
      const std::string widen = dtype == DType::kF16 ? "kiln_f16_to_f32" : "kiln_bf16_to_f32";
      code.line(fmt::format("g_half8* const g_chunk = reinterpret_cast<g_half8*>({});", at));
      code.line("g_half8 g_w = *g_chunk;");
      code.line("#pragma unroll");
      if (const std::optional<uint16_t> scale = f16_scale(operand)) {
        // One f16 multiply by a constant: pairs by mul.rn.f16x2 (rounded as the reference does).
        const uint32_t pair = uint32_t{*scale} | (uint32_t{*scale} << 16);
        e.open_block(fmt::format("for (int g_u = 0; g_u < {}; ++g_u)", kCopyElements / 2));
        code.line(fmt::format("g_w.w[g_u] = kiln_mul_f16x2(g_w.w[g_u], 0x{:08x}u);", pair));
      } else {
        e.open_block(fmt::format("for (int g_u = 0; g_u < {}; ++g_u)", kCopyElements));
        e.bind(operand.view, "g_u", e.temp("float", widen + "(g_w.h[g_u])"));
        code.line(fmt::format("g_w.h[g_u] = {};",
                              store_expression(dtype, e.element(operand.operand, "g_u"))));
      }
      e.close_block();
      code.line("*g_chunk = g_w;");
      e.close_block();
    }
    if (rows % rows_per_pass != 0) e.close_block();
    e.close_block();
    e.close_block();
  }

  // Tile `key0` of K' (and V', with `values`) into buffer `buffer` by cp.async, one group.
  void issue_tile(ElementEmitter& e, const std::string& key0, const std::string& buffer,
                  bool values) {
    CodeWriter& code = e.code();
    const std::string k_at = fmt::format("g_k + ({}) * {}", buffer, key_tile_ * k_stride_);
    const std::string v_at = fmt::format("g_v + ({}) * {}", buffer, key_tile_ * v_stride_);
    copy_rows(e, k_, "g_ksrc", k_at, key_tile_, a_.depth, k_stride_, key0, a_.keys, false);
    if (values) {
      copy_rows(e, v_, "g_vsrc", v_at, key_tile_, a_.columns, v_stride_, key0, a_.keys, false);
    }
    code.line("kiln_cp_async_commit();");
  }

  // The elementwise ops of K' and V' on the rows this thread copied into buffer `buffer`.
  void transform_tile(ElementEmitter& e, const std::string& key0, const std::string& buffer,
                      bool values) {
    const std::string k_at = fmt::format("g_k + ({}) * {}", buffer, key_tile_ * k_stride_);
    const std::string v_at = fmt::format("g_v + ({}) * {}", buffer, key_tile_ * v_stride_);
    if (transforms_keys()) {
      copy_rows(e, k_, "g_ksrc", k_at, key_tile_, a_.depth, k_stride_, key0, a_.keys, true);
    }
    if (values && v_.transformed()) {
      copy_rows(e, v_, "g_vsrc", v_at, key_tile_, a_.columns, v_stride_, key0, a_.keys, true);
    }
  }

  // Strided operands: the Q' tile by cp.async into g_qtile (K''s second buffer) while the first
  // K' (and V') tile comes into the first; Q' kept as A fragments (ldmatrix).
  void load_queries_strided(ElementEmitter& e) {
    CodeWriter& code = e.code();
    const int64_t d = a_.depth;
    copy_rows(e, q_, "g_qsrc", "g_qtile", query_tile_, d, q_stride_, "g_m0", a_.queries, false);
    code.line("kiln_cp_async_commit();");
    issue_tile(e, "0", "0", online_);
    code.line("kiln_cp_async_wait<1>();");
    if (transforms_queries()) {
      copy_rows(e, q_, "g_qsrc", "g_qtile", query_tile_, d, q_stride_, "g_m0", a_.queries, true);
    }
    code.line("__syncthreads();");
    code.line(fmt::format("unsigned g_qf{}[{}][4];", groups_dim(), d / 16));
    open_groups(e);
    code.line("#pragma unroll");
    e.open_block(fmt::format("for (int g_kk = 0; g_kk < {}; ++g_kk)", d / 16));
    code.line(fmt::format(
        "kiln_ldmatrix_x4({}[g_kk], g_qtile + (g_rows + {}g_lane % 16) * {} + g_kk * 16 + "
        "g_lane / 16 * 8);",
        group("g_qf"), groups_ == 1 ? "" : "g_rg * 16 + ", q_stride_));
    e.close_block();
    close_groups(e);
  }

  // The Q' tile (rows past M read row M - 1); on tensor cores staged in g_k and kept as A
  // fragments.
  void load_queries(ElementEmitter& e) {
    if (strided_) {
      load_queries_strided(e);
      return;
    }
    CodeWriter& code = e.code();
    const int64_t d = a_.depth;
    store_tile(
        e, "g_qtile", query_tile_, d, q_stride_, qk_type_,
        fmt::format("const int g_q_row = min(g_m0 + g_r, {});", a_.queries - 1),
        [&](const std::string& c) {
          return operand(e, *a_.scores, 0, "g_q_row", c, a_.queries, d);
        },
        "");
    code.line("__syncthreads();");
    if (!tensor_cores_) return;
    code.line(fmt::format("unsigned g_qf[{}][4];", d / 16));
    code.line("#pragma unroll");
    e.open_block(fmt::format("for (int g_kk = 0; g_kk < {}; ++g_kk)", d / 16));
    code.line(
        fmt::format("const int g_at = (g_rows + g_g) * {} + g_kk * 16 + 2 * g_t;", q_stride_));
    for (int r = 0; r < 4; ++r) {
      const std::string offset = fmt::format("g_at + {}", (r % 2) * 8 * q_stride_ + (r / 2) * 8);
      code.line(fmt::format("g_qf[g_kk][{}] = {};", r, word("g_qtile", offset)));
    }
    e.close_block();
  }

  // One pass over the key tiles: the scores and the row statistics; unless statistics_only, the
  // probabilities and O += P'·V' too.
  void key_loop(ElementEmitter& e, bool statistics_only) {
    CodeWriter& code = e.code();
    if (strided_) {
      key_loop_strided(e, statistics_only);
      return;
    }
    e.open_block(
        fmt::format("for (int g_key0 = 0; g_key0 < {}; g_key0 += {})", a_.keys, key_tile_));
    code.line("__syncthreads();");
    load_keys(e);
    if (!statistics_only) load_values(e);
    fill_key_values(e, "0");
    code.line("__syncthreads();");
    tile_math(e, statistics_only);
    e.close_block();
  }

  // One key tile's scores and statistics; unless statistics_only, P and O += P'·V'. Where the
  // last key tile is partial, whole tiles and the last take separate code (a tile-uniform
  // branch): only the last tests which of its keys lie past N. ncu on ViT's attention (197 keys)
  // with the tests in every tile: each skippable ldmatrix and its mmas in a branch of their own,
  // the compiler recomputed the ldmatrix address in each (about 12 instructions for 2 mmas; half
  // the kernel's instructions).
  void tile_math(ElementEmitter& e, bool statistics_only) {
    if (a_.keys % key_tile_ == 0) {
      keys_math(e, statistics_only);
      return;
    }
    if (a_.keys < key_tile_) {  // one key tile, partial
      partial_keys_ = true;
      keys_math(e, statistics_only);
      partial_keys_ = false;
      return;
    }
    e.open_block(fmt::format("if (g_key0 + {} <= {})", key_tile_, a_.keys));
    keys_math(e, statistics_only);
    e.reopen_block("else");
    partial_keys_ = true;
    keys_math(e, statistics_only);
    partial_keys_ = false;
    e.close_block();
  }

  // tile_math for whole key tiles, or (partial_keys_) the last, partial one.
  void keys_math(ElementEmitter& e, bool statistics_only) {
    scores(e);
    if (statistics_only || online_) statistics(e, !statistics_only);
    if (!statistics_only) {
      if (!online_) normalized_probabilities(e);
      accumulate_output(e);
    }
  }

  // Strided operands, double-buffered: tile j + 1's copies are in flight while tile j is
  // computed. Tile 0 was issued with Q' (first pass) or is issued here (second pass).
  void key_loop_strided(ElementEmitter& e, bool statistics_only) {
    CodeWriter& code = e.code();
    const bool values = !statistics_only;
    if (!first_pass_) {
      code.line("__syncthreads();");  // every warp is done with the last pass's buffers
      issue_tile(e, "0", "0", values);
    }
    first_pass_ = false;
    e.open_block(fmt::format("for (int g_key0 = 0, g_buf = 0; g_key0 < {}; g_key0 += {}, g_buf ^= 1)",
                             a_.keys, key_tile_));
    code.line("kiln_cp_async_wait<0>();");
    transform_tile(e, "g_key0", "g_buf", values);
    fill_key_values(e, "g_buf");
    code.line("__syncthreads();");
    e.open_block(fmt::format("if (g_key0 + {} < {})", key_tile_, a_.keys));
    issue_tile(e, fmt::format("g_key0 + {}", key_tile_), "g_buf ^ 1", values);
    e.close_block();
    code.line(fmt::format("const unsigned short* const g_kt = g_k + g_buf * {};",
                          key_tile_ * k_stride_));
    if (values) {
      code.line(fmt::format("const unsigned short* const g_vt = g_v + g_buf * {};",
                            key_tile_ * v_stride_));
    }
    // A warp whose rows all lie past M (the last query tile) skips the math.
    const bool partial_tile = a_.queries % query_tile_ != 0;
    if (partial_tile) e.open_block(fmt::format("if (g_m0 + g_rows < {})", a_.queries));
    tile_math(e, statistics_only);
    if (partial_tile) e.close_block();
    e.close_block();
  }

  // K' as [key][d], keys past N zero.
  void load_keys(ElementEmitter& e) {
    const int64_t d = a_.depth, n = a_.keys;
    store_tile(
        e, "g_k", key_tile_, d, k_stride_, qk_type_,
        fmt::format("const int g_key = min(g_key0 + g_r, {});", n - 1),
        [&](const std::string& c) { return operand(e, *a_.scores, 1, c, "g_key", d, n); },
        fmt::format("g_key0 + g_r < {}", n));
  }

  // V': on tensor cores transposed, as [e][key] (pairs of keys in a word); else [key][e]. Keys
  // past N zero.
  void load_values(ElementEmitter& e) {
    CodeWriter& code = e.code();
    const int64_t n = a_.keys, cols = a_.columns;
    if (!tensor_cores_) {
      store_tile(
          e, "g_v", key_tile_, cols, v_stride_, pv_type_,
          fmt::format("const int g_key = min(g_key0 + g_r, {});", n - 1),
          [&](const std::string& c) { return operand(e, *a_.output, 1, "g_key", c, n, cols); },
          fmt::format("g_key0 + g_r < {}", n));
      return;
    }
    const bool checked = open_spread_loop(e, key_tile_ / 2 * cols);
    code.line(fmt::format("const int g_c = g_i % {}, g_r = g_i / {} * 2;", cols, cols));
    code.line(fmt::format(
        "const int g_key_lo = min(g_key0 + g_r, {0}), g_key_hi = min(g_key0 + g_r + 1, {0});",
        n - 1));
    const std::string lo = operand(e, *a_.output, 1, "g_key_lo", "g_c", n, cols);
    const std::string hi = operand(e, *a_.output, 1, "g_key_hi", "g_c", n, cols);
    code.line(
        fmt::format("{} = {}(g_key0 + g_r < {} ? {} : 0.0f, g_key0 + g_r + 1 < {} ? {} : 0.0f);",
                    word("g_v", fmt::format("g_c * {} + g_r", v_stride_)), pack_function(pv_type_),
                    n, lo, n, hi));
    close_spread_loop(e, checked);
  }

  // In a last, partial key tile, the mmas of the warp's keys from `offset` on are skipped where
  // they all lie past N (their scores are −inf and P' 0 whatever they sum): ViT's 197 keys leave
  // 5 in the fourth 64-key tile. A warp-uniform branch; close with close_skip.
  void skip_keys_past_end(ElementEmitter& e, const std::string& offset) {
    if (!partial_keys_) return;
    e.open_block(fmt::format("if (g_key0 + g_split + {} < {})", offset, a_.keys));
  }

  void close_skip(ElementEmitter& e) {
    if (partial_keys_) e.close_block();
  }

  // The flat index of score (g_q, g_key) and the statements binding g_q and g_key for fragment
  // element (g_n, g_h).
  std::string score_index(ElementEmitter& e) {
    CodeWriter& code = e.code();
    code.line(fmt::format("const int g_q = min(g_m0 + g_rows + {}g_g + g_h / 2 * 8, {});",
                          groups_ == 1 ? "" : "g_rg * 16 + ", a_.queries - 1));
    code.line("const int g_key = g_key0 + g_split + g_n * 8 + 2 * g_t + g_h % 2;");
    // Keys past N (only in a last, partial key tile) are clamped for the score ops' reads.
    const std::string key =
        !partial_keys_ ? "g_key" : e.index_temp(fmt::format("min(g_key, {})", a_.keys - 1));
    const std::string at =
        e.index_temp(fmt::format("(g_b * {} + g_q) * {} + {}", a_.queries, a_.keys, key));
    // The score ops (a mask broadcast over heads and rows) index by coordinates known here.
    std::vector<std::string> coordinates = batch_coordinates_;
    coordinates.push_back("g_q");
    coordinates.push_back(key);
    e.set_coordinates(at, a_.scores->result()->type().shape, coordinates);
    return at;
  }

  void open_fragment_loops(ElementEmitter& e) {
    e.code().line("#pragma unroll");
    e.open_block(fmt::format("for (int g_n = 0; g_n < {}; ++g_n)", split_keys_ / 8));
    e.code().line("#pragma unroll");
    e.open_block("for (int g_h = 0; g_h < 4; ++g_h)");
  }

  // S = Q'·K' for the warp's 16 rows and its keys of the tile, then the score ops per element;
  // keys past N score -inf.
  void scores(ElementEmitter& e) {
    CodeWriter& code = e.code();
    code.line(fmt::format("float g_s{}[{}][4] = {{}};", groups_dim(), split_keys_ / 8));
    if (strided_) {
      // ldmatrix: keys g_n·8.. and (g_n + 1)·8.. at d 16·g_kk and + 8: B fragments of two mmas.
      code.line("#pragma unroll");
      e.open_block(fmt::format("for (int g_kk = 0; g_kk < {}; ++g_kk)", a_.depth / 16));
      code.line("#pragma unroll");
      e.open_block(fmt::format("for (int g_n = 0; g_n < {}; g_n += 2)", split_keys_ / 8));
      skip_keys_past_end(e, "g_n * 8");
      code.line("unsigned g_kf[4];");
      code.line(fmt::format(
          "kiln_ldmatrix_x4(g_kf, g_kt + (g_split + g_n * 8 + g_lane / 16 * 8 + g_lane % 8) * {} "
          "+ g_kk * 16 + g_lane / 8 % 2 * 8);",
          k_stride_));
      mma_pair(e, qk_type_, "g_s", "g_n", group("g_qf") + "[g_kk]", "g_kf");
      close_skip(e);
    } else if (tensor_cores_) {
      code.line("#pragma unroll");
      e.open_block(fmt::format("for (int g_kk = 0; g_kk < {}; ++g_kk)", a_.depth / 16));
      code.line("#pragma unroll");
      e.open_block(fmt::format("for (int g_n = 0; g_n < {}; ++g_n)", split_keys_ / 8));
      skip_keys_past_end(e, "g_n * 8");
      code.line(fmt::format(
          "const int g_at = (g_split + g_n * 8 + g_g) * {} + g_kk * 16 + 2 * g_t;", k_stride_));
      code.line(fmt::format("const unsigned g_kf[2] = {{{}, {}}};", word("g_k", "g_at"),
                            word("g_k", "g_at + 8")));
      code.line(fmt::format("{}(g_s[g_n], g_qf[g_kk], g_kf);", mma_function(qk_type_)));
      close_skip(e);
    } else {
      code.line("#pragma unroll 4");
      e.open_block(fmt::format("for (int g_d = 0; g_d < {}; g_d += 4)", a_.depth));
      code.line(fmt::format(
          "const g_float4 g_qa = {};",
          vector_at("g_float4", "g_qtile", fmt::format("(g_rows + g_g) * {} + g_d", q_stride_))));
      code.line(fmt::format("const g_float4 g_qb = {};",
                            vector_at("g_float4", "g_qtile",
                                      fmt::format("(g_rows + g_g + 8) * {} + g_d", q_stride_))));
      code.line("#pragma unroll");
      e.open_block(fmt::format("for (int g_n = 0; g_n < {}; ++g_n)", split_keys_ / 8));
      code.line(
          fmt::format("const int g_at = (g_split + g_n * 8 + 2 * g_t) * {} + g_d;", k_stride_));
      code.line(fmt::format("const g_float4 g_ka = {};", vector_at("g_float4", "g_k", "g_at")));
      code.line(fmt::format("const g_float4 g_kb = {};",
                            vector_at("g_float4", "g_k", fmt::format("g_at + {}", k_stride_))));
      code.line(fmt::format("g_s[g_n][0] += {};", dot("g_qa", "g_ka", "xyzw")));
      code.line(fmt::format("g_s[g_n][1] += {};", dot("g_qa", "g_kb", "xyzw")));
      code.line(fmt::format("g_s[g_n][2] += {};", dot("g_qb", "g_ka", "xyzw")));
      code.line(fmt::format("g_s[g_n][3] += {};", dot("g_qb", "g_kb", "xyzw")));
    }
    e.close_block();
    e.close_block();
    // Hoisted score operands: each score reads its key's value (shared memory, filled once a
    // key tile) or its row's (registers, filled before the key loop).
    const std::string buffer = strided_ ? "g_buf" : "0";
    for (const Hoisted& h : hoisted_) {
      const std::string read =
          h.per_key ? fmt::format("{}[{}][g_split + g_n * 8 + 2 * g_t + g_h % 2]", h.array, buffer)
                    : fmt::format("{}[{}g_h / 2]", h.array, groups_ == 1 ? "" : "2 * g_rg + ");
      e.set_override(h.value, [read](const std::string&) { return read; });
    }
    const std::string score = group("g_s") + "[g_n][g_h]";
    open_groups(e);
    open_fragment_loops(e);
    const std::string at = score_index(e);
    // The scores stay f32 (not rounded to Q'K''s 16-bit type), as flash attention keeps them:
    // two conversions a score fewer, and closer to the exact result.
    e.bind(a_.scores->result(), at,
           e.temp("float", !folded_factor_ || scale_in_exponent_
                               ? score
                               : score + " * " + cuda_literal(*folded_factor_, DType::kF32)));
    code.line(fmt::format("{} = {};", score, e.element(a_.softmax->operand(0), at)));
    e.close_block();
    e.close_block();
    close_groups(e);
    for (const Hoisted& h : hoisted_) e.clear_override(h.value);
    if (!partial_keys_) return;
    // Keys past N (in the last, partial tile only) score −inf.
    open_groups(e);
    open_fragment_loops(e);
    code.line(
        fmt::format("if (g_key0 + g_split + g_n * 8 + 2 * g_t + g_h % 2 >= {}) "
                    "{} = {};",
                    a_.keys, score, minus_inf_));
    e.close_block();
    e.close_block();
    close_groups(e);
  }

  // Score operands worth computing once per key or per row instead of once per score (a mask
  // built from an attention mask input by gathers, casts and logic, broadcast over heads and
  // query rows): walking from the softmax's operand back to the scores through elementwise,
  // broadcast and expand ops, each operand that does not depend on the scores, is not a
  // one-element constant, and broadcasts into the scores' shape (numpy rules) with size 1 along
  // the query axis (it depends on the batch and the key only: per key) or along the key axis
  // (per row). An operand that varies along both is split into its own operands the same way
  // when its producer is elementwise, broadcast or expand. Any other op between the scores and
  // the softmax: nothing is hoisted (its operands might be read at other indices).
  void find_hoisted() {
    const Shape& s = a_.scores->result()->type().shape;
    const size_t rank = s.size();
    std::set<const Value*> on_scores{a_.scores->result()};
    for (const Node* node : body_.nodes) {
      for (const Value* operand : node->operands()) {
        if (on_scores.count(operand)) {
          for (const Value* result : node->results()) on_scores.insert(result);
          break;
        }
      }
    }
    const auto pointwise = [](const Node* node) {
      if (!node || node->body() || node->results().size() != 1) return false;
      const OpCategory category = node->info().category;
      return category == OpCategory::kElementwise || category == OpCategory::kBroadcast ||
             node->op() == "expand";
    };
    std::set<const Value*> seen;
    bool ok = true;
    std::function<void(const Value*)> visit = [&](const Value* value) {
      if (!ok || !seen.insert(value).second) return;
      const Node* node = value->producer();
      if (on_scores.count(value)) {
        if (value == a_.scores->result()) return;
        if (!pointwise(node)) {
          ok = false;
          return;
        }
        for (const Value* operand : node->operands()) visit(operand);
        return;
      }
      if (value->is_constant() && value->type().num_elements() == 1) return;
      const Shape& shape = value->type().shape;
      if (shape.size() > rank) return;
      const size_t lead = rank - shape.size();
      for (size_t d = 0; d < shape.size(); ++d) {
        if (shape[d] != 1 && shape[d] != s[lead + d]) return;
      }
      const auto size_at = [&](size_t axis) { return axis < lead ? 1 : shape[axis - lead]; };
      const bool varies_by_query = size_at(rank - 2) != 1, varies_by_key = size_at(rank - 1) != 1;
      if (!varies_by_query || !varies_by_key) {
        Hoisted h;
        h.value = value;
        h.per_key = varies_by_key;
        h.type = std::string(cuda_compute_type(value->type().dtype));
        h.array = fmt::format("{}{}", h.per_key ? "g_by_key" : "g_by_row", hoisted_.size());
        hoisted_.push_back(h);
        return;
      }
      if (!pointwise(node)) return;
      for (const Value* operand : node->operands()) visit(operand);
    };
    visit(a_.softmax->operand(0));
    if (!ok) hoisted_.clear();
  }

  // The flat index of hoisted `value` at the block's batch index, query row `query` and key `key`.
  std::string hoisted_index(ElementEmitter& e, const Value* value, const std::string& query,
                            const std::string& key) {
    const Shape& shape = value->type().shape;
    const size_t rank = a_.batch.size() + 2, lead = rank - shape.size();
    std::vector<std::string> coordinates;
    for (size_t d = 0; d < shape.size(); ++d) {
      const size_t axis = lead + d;
      coordinates.push_back(shape[d] == 1         ? "0"
                            : axis == rank - 1    ? key
                            : axis == rank - 2    ? query
                                                  : batch_coordinates_[axis]);
    }
    return e.flat_index(coordinates, shape);
  }

  // The per-key hoisted operands of key tile g_key0 into buffer `buffer`: one key a thread
  // (keys past N, in a last partial tile, read key N − 1; their scores are −inf).
  void fill_key_values(ElementEmitter& e, const std::string& buffer) {
    if (std::none_of(hoisted_.begin(), hoisted_.end(), [](const Hoisted& h) { return h.per_key; })) {
      return;
    }
    CodeWriter& code = e.code();
    e.open_block(fmt::format("if (threadIdx.x < {})", key_tile_));
    code.line(a_.keys % key_tile_ == 0
                  ? std::string("const int g_hk = g_key0 + (int)threadIdx.x;")
                  : fmt::format("const int g_hk = min(g_key0 + (int)threadIdx.x, {});",
                                a_.keys - 1));
    for (const Hoisted& h : hoisted_) {
      if (!h.per_key) continue;
      code.line(fmt::format("{}[{}][threadIdx.x] = {};", h.array, buffer,
                            e.element(h.value, hoisted_index(e, h.value, "0", "g_hk"))));
    }
    e.close_block();
  }

  // The per-row hoisted operands of the thread's rows g and g + 8, once (rows past M read row
  // M − 1).
  void fill_row_values(ElementEmitter& e) {
    CodeWriter& code = e.code();
    bool any = false;
    for (const Hoisted& h : hoisted_) {
      if (h.per_key) continue;
      code.line(fmt::format("{} {}[{}];", h.type, h.array, 2 * groups_));
      any = true;
    }
    if (!any) return;
    code.line("#pragma unroll");
    e.open_block(fmt::format("for (int g_r = 0; g_r < {}; ++g_r)", 2 * groups_));
    code.line(fmt::format("const int g_hq = min(g_m0 + g_rows + g_g + 8 * g_r, {});",
                          a_.queries - 1));
    for (const Hoisted& h : hoisted_) {
      if (h.per_key) continue;
      code.line(fmt::format("{}[g_r] = {};", h.array,
                            e.element(h.value, hoisted_index(e, h.value, "g_hq", "0"))));
    }
    e.close_block();
  }

  // The running max and sum of rows g (r = 0) and g + 8 (r = 1) over the warp's keys; the
  // four lanes of a row agree on its max. With `probabilities`, the scores become
  // exp(s - max) and the accumulator is rescaled.
  void statistics(ElementEmitter& e, bool probabilities) {
    CodeWriter& code = e.code();
    const std::string r = row(), s = group("g_s"), o = group("g_o");
    open_groups(e);
    code.line("#pragma unroll");
    e.open_block("for (int g_r = 0; g_r < 2; ++g_r)");
    // Tensor cores (sm_80+): max.NaN in one instruction; both keep a NaN (see nan_flags).
    const std::string max = tensor_cores_ ? "kiln_max_nan" : "kiln_max";
    code.line(fmt::format("float g_tile_max = {};", minus_inf_));
    code.line("#pragma unroll");
    e.open_block(fmt::format("for (int g_n = 0; g_n < {}; ++g_n)", split_keys_ / 8));
    code.line(fmt::format(
        "g_tile_max = {0}(g_tile_max, {0}({1}[g_n][2 * g_r], {1}[g_n][2 * g_r + 1]));", max, s));
    e.close_block();
    code.line(fmt::format(
        "g_tile_max = {0}(g_tile_max, __shfl_xor_sync(0xffffffffu, g_tile_max, 1));", max));
    code.line(fmt::format(
        "g_tile_max = {0}(g_tile_max, __shfl_xor_sync(0xffffffffu, g_tile_max, 2));", max));
    code.line(fmt::format("const float g_new_max = {}(g_max[{}], g_tile_max);", max, r));
    // Online: exp(s − max) as 2^((s − max)·log2(e)) (s − max first, as exp takes it: scores near
    // ±3.4e38, or rows masked with f32's lowest value, do not overflow as max·log2(e) would). On
    // tensor cores by ex2.approx.ftz alone (MUFU.EX2; 16-bit P' has no use for exp2f's subnormal
    // fix-up), else exp2f.
    const std::string log2e = scale_in_exponent_
                                  ? cuda_literal(*folded_factor_ * kLog2e, DType::kF32)
                                  : fmt::format("{:.9g}f", kLog2e);
    const std::string exp2 = tensor_cores_ ? "kiln_exp2_approx" : "exp2f";
    const auto exp_minus_base = [&](const std::string& x) {
      return online_ ? fmt::format("{}(({} - g_base) * {})", exp2, x, log2e)
                     : fmt::format("exp({} - g_base)", x);
    };
    code.line(fmt::format("const float g_base = g_new_max == {} ? 0.0f : g_new_max;", minus_inf_));
    const auto exp_of_score = [&](const std::string& x) {
      return scale_in_exponent_ ? fmt::format("{}(fmaf({}, {}, -g_base_k))", exp2, x, log2e)
                                : exp_minus_base(x);
    };
    if (scale_in_exponent_ && probabilities) {
      code.line(fmt::format("const float g_base_k = g_base * {};", log2e));
    }
    if (nan_guard_ && probabilities) {
      nan_flags(e);
      code.line(fmt::format("const float g_scale = g_nan[{}] ? 0.0f : {};", r,
                            exp_minus_base("g_max[" + r + "]")));
    } else {
      code.line(fmt::format("const float g_scale = {};", exp_minus_base("g_max[" + r + "]")));
    }
    code.line(fmt::format("g_max[{}] = g_new_max;", r));
    code.line(fmt::format("g_sum[{}] *= g_scale;", r));
    if (probabilities) {
      code.line("#pragma unroll");
      e.open_block(fmt::format("for (int g_c = 0; g_c < {}; ++g_c)", a_.columns / 8));
      code.line(fmt::format("{}[g_c][2 * g_r] *= g_scale;", o));
      code.line(fmt::format("{}[g_c][2 * g_r + 1] *= g_scale;", o));
      e.close_block();
    }
    code.line("#pragma unroll");
    e.open_block(fmt::format("for (int g_n = 0; g_n < {}; ++g_n)", split_keys_ / 8));
    code.line("#pragma unroll");
    e.open_block("for (int g_h = 2 * g_r; g_h < 2 * g_r + 2; ++g_h)");
    const std::string score = s + "[g_n][g_h]";
    code.line(nan_guard_ && probabilities
                  ? fmt::format("const float g_p = g_nan[{}] ? 0.0f : {};", r, exp_of_score(score))
                  : fmt::format("const float g_p = {};", exp_of_score(score)));
    code.line(fmt::format("g_sum[{}] += g_p;", r));
    if (probabilities) code.line(fmt::format("{} = g_p;", score));
    e.close_block();
    e.close_block();
    e.close_block();
    close_groups(e);
  }

  // The NaN guard, online. A row's softmax is NaN everywhere or nowhere: everywhere when a score
  // is NaN or +inf (its sum is NaN) or every score is −inf (0 / 0). The guard makes such a row's P
  // zero, so its O is Σ 0·V'. Once such a score shows (g_nan, agreed by the row's four lanes), the
  // accumulator is scaled by 0 and later probabilities are 0; a row of −inf scores gets p = 0
  // throughout and a zero sum. The epilogue then writes O undivided for both. The running max
  // shows the first kind: kiln_max keeps a NaN, so a NaN or +inf score makes the max !(< +inf),
  // and the row's four lanes agree on it (one test a row, not one a score).
  void nan_flags(ElementEmitter& e) {
    e.code().line(fmt::format("g_nan[{0}] = g_nan[{0}] || !(g_new_max < {1});", row(), plus_inf_));
  }

  // Lanes of a row hold partial sums over their keys; each gets the warp's total.
  void sum_over_quad(ElementEmitter& e) {
    CodeWriter& code = e.code();
    code.line("#pragma unroll");
    e.open_block(fmt::format("for (int g_r = 0; g_r < {}; ++g_r)", 2 * groups_));
    code.line("g_sum[g_r] += __shfl_xor_sync(0xffffffffu, g_sum[g_r], 1);");
    code.line("g_sum[g_r] += __shfl_xor_sync(0xffffffffu, g_sum[g_r], 2);");
    e.close_block();
  }

  // Each warp's row statistics to shared memory (lane t = 0 of each row).
  void store_statistics(ElementEmitter& e) {
    CodeWriter& code = e.code();
    e.open_block("if (g_t == 0)");
    code.line("#pragma unroll");
    e.open_block("for (int g_r = 0; g_r < 2; ++g_r)");
    code.line(fmt::format("g_row_max[g_warp * {} + g_g + 8 * g_r] = g_max[g_r];", kWarpRows));
    code.line(fmt::format("g_row_sum[g_warp * {} + g_g + 8 * g_r] = g_sum[g_r];", kWarpRows));
    if (nan_guard_) {
      code.line(fmt::format("g_row_nan[g_warp * {} + g_g + 8 * g_r] = g_nan[g_r];", kWarpRows));
    }
    e.close_block();
    e.close_block();
  }

  // The max over the key splits of row `local` (of the block's tile) into `top`, and the
  // corresponding base (0 when the max is -inf) into `base`.
  void split_max(ElementEmitter& e, const std::string& local) {
    CodeWriter& code = e.code();
    code.line(fmt::format("float g_top = {};", minus_inf_));
    code.line("#pragma unroll");
    e.open_block(fmt::format("for (int g_ks = 0; g_ks < {}; ++g_ks)", key_splits_));
    code.line(
        fmt::format("g_top = kiln_max(g_top, g_row_max[g_ks * {} + {}]);", query_tile_, local));
    e.close_block();
    code.line(fmt::format("const float g_top_base = g_top == {} ? 0.0f : g_top;", minus_inf_));
  }

  // Exact softmax with split keys: every warp takes the row max and sum over all splits.
  void combine_statistics(ElementEmitter& e) {
    CodeWriter& code = e.code();
    store_statistics(e);
    code.line("__syncthreads();");
    code.line("#pragma unroll");
    e.open_block("for (int g_r = 0; g_r < 2; ++g_r)");
    code.line("const int g_local = g_rows + g_g + 8 * g_r;");
    split_max(e, "g_local");
    code.line("float g_total = 0.0f;");
    code.line("#pragma unroll");
    e.open_block(fmt::format("for (int g_ks = 0; g_ks < {}; ++g_ks)", key_splits_));
    code.line(fmt::format("const int g_at = g_ks * {} + g_local;", query_tile_));
    code.line("g_total += g_row_sum[g_at] * exp(g_row_max[g_at] - g_top_base);");
    e.close_block();
    code.line("g_max[g_r] = g_top;");
    code.line("g_sum[g_r] = g_total;");
    e.close_block();
  }

  // Exact softmax: P = exp(s - max) / sum at each score's index, then the ops up to P'.
  void normalized_probabilities(ElementEmitter& e) {
    CodeWriter& code = e.code();
    open_fragment_loops(e);
    const std::string at = score_index(e);
    code.line(fmt::format("const float g_base = g_max[g_h / 2] == {} ? 0.0f : g_max[g_h / 2];",
                          minus_inf_));
    e.bind(a_.softmax->result(), at,
           e.temp("float", rounded(*a_.softmax, "exp(g_s[g_n][g_h] - g_base) / g_sum[g_h / 2]")));
    code.line(fmt::format("g_s[g_n][g_h] = {};", e.element(a_.output->operand(0), at)));
    e.close_block();
    e.close_block();
  }

  // O += P'·V'. Tensor cores: the score fragments of keys 16k..16k+15 are P''s A fragment,
  // rounded to its 16-bit type as they pack. CUDA cores: P goes through the warp's rows of g_prob
  // (rounded to TF32 where the matmul says so), and each thread sums its O elements over the
  // warp's keys.
  void accumulate_output(ElementEmitter& e) {
    CodeWriter& code = e.code();
    if (tensor_cores_) {
      code.line("#pragma unroll");
      e.open_block(fmt::format("for (int g_kk = 0; g_kk < {}; ++g_kk)", split_keys_ / 16));
      skip_keys_past_end(e, "g_kk * 16");
      // P''s A fragment: scores of keys 16·g_kk.. (pairs packed) for rows g and g + 8.
      std::vector<std::string> words;
      for (const char* at : {"2 * g_kk][0", "2 * g_kk][2", "2 * g_kk + 1][0", "2 * g_kk + 1][2"}) {
        const std::string first = group("g_s") + "[" + at + "]";
        std::string second = first;
        second[second.size() - 2] += 1;  // element 1 (3) beside 0 (2)
        words.push_back(fmt::format("{}({}, {})", pack_function(pv_type_), first, second));
      }
      if (groups_ == 1) {
        code.line(fmt::format("const unsigned g_pf[4] = {{{}}};", fmt::join(words, ", ")));
      } else {
        code.line(fmt::format("unsigned g_pf[{}][4];", groups_));
        open_groups(e);
        for (size_t w = 0; w < words.size(); ++w) {
          code.line(fmt::format("g_pf[g_rg][{}] = {};", w, words[w]));
        }
        close_groups(e);
      }
      code.line("#pragma unroll");
      if (strided_) {
        // ldmatrix.trans of V' [key][e]: keys 16·g_kk.. and + 8 at columns g_c·8.. and
        // (g_c + 1)·8..: B fragments of two mmas.
        e.open_block(fmt::format("for (int g_c = 0; g_c < {}; g_c += 2)", a_.columns / 8));
        code.line("unsigned g_vf[4];");
        code.line(fmt::format(
            "kiln_ldmatrix_x4_trans(g_vf, g_vt + (g_split + g_kk * 16 + g_lane / 8 % 2 * 8 + "
            "g_lane % 8) * {} + g_c * 8 + g_lane / 16 * 8);",
            v_stride_));
        mma_pair(e, pv_type_, "g_o", "g_c", group("g_pf"), "g_vf");
        e.close_block();
        close_skip(e);
        e.close_block();
        return;
      }
      e.open_block(fmt::format("for (int g_c = 0; g_c < {}; ++g_c)", a_.columns / 8));
      code.line(fmt::format(
          "const int g_at = (g_c * 8 + g_g) * {} + g_split + g_kk * 16 + 2 * g_t;", v_stride_));
      code.line(fmt::format("const unsigned g_vf[2] = {{{}, {}}};", word("g_v", "g_at"),
                            word("g_v", "g_at + 8")));
      code.line(fmt::format("{}(g_o[g_c], g_pf, g_vf);", mma_function(pv_type_)));
      e.close_block();
      close_skip(e);
      e.close_block();
      return;
    }
    open_fragment_loops(e);
    const std::string p =
        is_tf32(*a_.output) ? "kiln_round_to_tf32(g_s[g_n][g_h])" : "g_s[g_n][g_h]";
    code.line(fmt::format(
        "g_prob[(g_warp * {} + g_g + g_h / 2 * 8) * {} + g_n * 8 + 2 * g_t + g_h % 2] = {};",
        kWarpRows, p_stride_, p));
    e.close_block();
    e.close_block();
    code.line("__syncwarp();");
    code.line("#pragma unroll");
    e.open_block(fmt::format("for (int g_j = 0; g_j < {}; g_j += 4)", split_keys_));
    for (const char* row : {"a", "b"}) {
      code.line(
          fmt::format("const g_float4 g_p{} = {};", row,
                      vector_at("g_float4", "g_prob",
                                fmt::format("(g_warp * {} + g_g{}) * {} + g_j", kWarpRows,
                                            std::string(row) == "a" ? "" : " + 8", p_stride_))));
    }
    code.line("#pragma unroll");
    e.open_block(fmt::format("for (int g_c = 0; g_c < {}; ++g_c)", a_.columns / 8));
    code.line(fmt::format("const int g_at = (g_split + g_j) * {} + g_c * 8 + 2 * g_t;", v_stride_));
    for (int j = 0; j < 4; ++j) {
      code.line(fmt::format("const g_float2 g_v{} = {};", j,
                            vector_at("g_float2", "g_v", fmt::format("g_at + {}", j * v_stride_))));
    }
    const char* p_fields = "xyzw";
    for (int h = 0; h < 4; ++h) {
      const std::string row = h < 2 ? "g_pa" : "g_pb";
      const char column = h % 2 == 0 ? 'x' : 'y';
      std::string sum;
      for (int j = 0; j < 4; ++j) {
        sum += fmt::format("{}{}.{} * g_v{}.{}", j ? " + " : "", row, p_fields[j], j, column);
      }
      code.line(fmt::format("g_o[g_c][{}] += {};", h, sum));
    }
    e.close_block();
    e.close_block();
    code.line("__syncwarp();");
  }

  // Each warp's partial O (and, online, its row statistics) through shared memory; the block's
  // threads then combine the key splits of each output element and write it through the
  // epilogue (rows past M are not stored).
  void epilogue(ElementEmitter& e) {
    CodeWriter& code = e.code();
    const int64_t cols = a_.columns, stride = part_stride();
    if (normalizes_in_registers()) {
      epilogue_one_split(e);
      return;
    }
    code.line("__syncthreads();");
    code.line("#pragma unroll");
    e.open_block(fmt::format("for (int g_c = 0; g_c < {}; ++g_c)", cols / 8));
    code.line("#pragma unroll");
    e.open_block("for (int g_h = 0; g_h < 4; ++g_h)");
    code.line(fmt::format(
        "g_part[(g_warp * {} + g_g + g_h / 2 * 8) * {} + g_c * 8 + 2 * g_t + g_h % 2] = "
        "g_o[g_c][g_h];",
        kWarpRows, stride));
    e.close_block();
    e.close_block();
    if (online_) store_statistics(e);
    code.line("__syncthreads();");
    const bool checked = open_spread_loop(e, query_tile_ * cols);
    code.line(fmt::format("const int g_local = g_i / {}, g_c = g_i % {};", cols, cols));
    code.line("const int g_q = g_m0 + g_local;");
    e.open_block(fmt::format("if (g_q < {})", a_.queries));
    code.line(online_ ? "float g_num = 0.0f, g_den = 0.0f;" : "float g_num = 0.0f;");
    if (online_) split_max(e, "g_local");
    if (nan_guard_) {
      code.line("bool g_guarded = false;");
      code.line("#pragma unroll");
      e.open_block(fmt::format("for (int g_ks = 0; g_ks < {}; ++g_ks)", key_splits_));
      code.line(
          fmt::format("g_guarded = g_guarded || g_row_nan[g_ks * {} + g_local];", query_tile_));
      e.close_block();
    }
    code.line("#pragma unroll");
    e.open_block(fmt::format("for (int g_ks = 0; g_ks < {}; ++g_ks)", key_splits_));
    code.line(fmt::format("const int g_at = g_ks * {} + g_local;", query_tile_));
    if (online_) {
      // The splits' maxima are of the scores as the exponent takes them: unscaled where the
      // scale rides in the exponent (scale_in_exponent_).
      const std::string factor =
          scale_in_exponent_
              ? fmt::format("exp2f((g_row_max[g_at] - g_top_base) * {})",
                            cuda_literal(*folded_factor_ * kLog2e, DType::kF32))
              : "exp(g_row_max[g_at] - g_top_base)";
      code.line(nan_guard_ ? "const float g_factor = g_guarded ? 0.0f : " + factor + ";"
                           : "const float g_factor = " + factor + ";");
      code.line(fmt::format("g_num += g_part[g_at * {} + g_c] * g_factor;", stride));
      code.line("g_den += g_row_sum[g_at] * g_factor;");
    } else {
      code.line(fmt::format("g_num += g_part[g_at * {} + g_c];", stride));
    }
    e.close_block();
    const std::string at =
        e.index_temp(fmt::format("(g_b * {} + g_q) * {} + g_c", a_.queries, cols));
    // Guarded rows (NaN, or every key masked: g_den is 0) hold O = Σ 0·V' undivided.
    const std::string result = !online_     ? "g_num"
                               : nan_guard_ ? "g_guarded || g_den == 0.0f ? g_num : g_num / g_den"
                                            : "g_num / g_den";
    e.bind(a_.output->result(), at, e.temp("float", rounded(*a_.output, result)));
    store_outputs(e, body_, outputs_, at);
    e.close_block();
    close_spread_loop(e, checked);
  }

  // The row stride of the partial O rows in shared memory (g_part, floats): 8 past the columns,
  // so that the 8 row groups of a warp's fragment stores fall in different banks (ncu on ViT's
  // attention: 5.6-way conflicts with the unpadded stride).
  int64_t part_stride() const { return a_.columns + 8; }

  // Online softmax with one key split: each thread divides its O fragments by its rows' sums in
  // registers; nothing is combined across warps.
  bool normalizes_in_registers() const { return online_ && key_splits_ == 1; }

  // Whether the block writes O itself, 8 columns (16 bytes) a thread: the body's one output is
  // O, 16-bit, the columns a multiple of 8 (rows start 16-byte aligned).
  bool stores_vectors() const {
    const DType dtype = a_.output->result()->type().dtype;
    return body_.outputs.size() == 1 && body_.outputs[0] == a_.output->result() &&
           is_16_bit_float(dtype) && a_.columns % kCopyElements == 0;
  }

  // The epilogue with one key split: O / sum per row in registers (guarded rows, and rows whose
  // every key was masked, keep O = Σ 0·V' undivided), through shared memory to the block's
  // threads, then stored row-major, 8 columns a thread where stores_vectors().
  void epilogue_one_split(ElementEmitter& e) {
    CodeWriter& code = e.code();
    const int64_t cols = a_.columns, stride = part_stride();
    code.line(fmt::format("float g_inv[{}];", 2 * groups_));
    code.line("#pragma unroll");
    e.open_block(fmt::format("for (int g_r = 0; g_r < {}; ++g_r)", 2 * groups_));
    code.line(nan_guard_
                  ? "g_inv[g_r] = g_nan[g_r] || g_sum[g_r] == 0.0f ? 1.0f : 1.0f / g_sum[g_r];"
                  : "g_inv[g_r] = 1.0f / g_sum[g_r];");
    e.close_block();
    code.line("__syncthreads();");
    open_groups(e);
    code.line("#pragma unroll");
    e.open_block(fmt::format("for (int g_c = 0; g_c < {}; ++g_c)", cols / 8));
    code.line("#pragma unroll");
    e.open_block("for (int g_r = 0; g_r < 2; ++g_r)");
    code.line(fmt::format(
        "*reinterpret_cast<g_float2*>(&g_part[(g_warp * {0} + {1}g_g + g_r * 8) * {2} + g_c * 8 + "
        "2 * "
        "g_t]) = g_float2{{{3}[g_c][2 * g_r] * g_inv[{4}], {3}[g_c][2 * g_r + 1] * g_inv[{4}]}};",
        kWarpRows * groups_, groups_ == 1 ? "" : "g_rg * 16 + ", stride, group("g_o"), row()));
    e.close_block();
    e.close_block();
    close_groups(e);
    code.line("__syncthreads();");
    if (!stores_vectors()) {
      const bool checked = open_spread_loop(e, query_tile_ * cols);
      code.line(fmt::format("const int g_local = g_i / {}, g_c = g_i % {};", cols, cols));
      code.line("const int g_q = g_m0 + g_local;");
      e.open_block(fmt::format("if (g_q < {})", a_.queries));
      const std::string at =
          e.index_temp(fmt::format("(g_b * {} + g_q) * {} + g_c", a_.queries, cols));
      e.bind(
          a_.output->result(), at,
          e.temp("float", rounded(*a_.output, fmt::format("g_part[g_local * {} + g_c]", stride))));
      store_outputs(e, body_, outputs_, at);
      e.close_block();
      close_spread_loop(e, checked);
      return;
    }
    const int64_t chunks = cols / kCopyElements;
    const DType dtype = a_.output->result()->type().dtype;
    const bool checked = open_spread_loop(e, query_tile_ * chunks);
    code.line(fmt::format("const int g_local = g_i / {}, g_c = g_i % {} * {};", chunks, chunks,
                          kCopyElements));
    code.line("const int g_q = g_m0 + g_local;");
    e.open_block(fmt::format("if (g_q < {})", a_.queries));
    code.line(fmt::format("const float* const g_row = g_part + g_local * {} + g_c;", stride));
    code.line("g_half8 g_w;");
    code.line("#pragma unroll");
    code.line(
        fmt::format("for (int g_u = 0; g_u < 4; ++g_u) g_w.w[g_u] = {}(g_row[2 * g_u], "
                    "g_row[2 * g_u + 1]);",
                    pack_function(dtype)));
    code.line(
        fmt::format("*reinterpret_cast<g_half8*>(&{}[(static_cast<{}>(g_b) * {} + g_q) * {} + "
                    "g_c]) = g_w;",
                    outputs_[0], e.index_type(), a_.queries, cols));
    e.close_block();
    close_spread_loop(e, checked);
  }

  const KernelBody& body_;
  const AttentionShape& a_;
  KernelSpec& spec_;
  std::vector<std::string> outputs_;
  bool tensor_cores_ = true;
  int64_t key_tile_ = 0, row_warps_ = 1, key_splits_ = 1, query_tile_ = 0, split_keys_ = 0;
  int64_t groups_ = 1;         // groups of 16 query rows a warp
  bool partial_keys_ = false;  // writing the math of the last key tile, which is partial
  int64_t tiles_ = 0, q_stride_ = 0, k_stride_ = 0, v_stride_ = 0, p_stride_ = 0;
  DType qk_type_ = DType::kF16, pv_type_ = DType::kF16;
  bool online_ = true;
  bool nan_guard_ = false;  // online, P' = where(is_nan(P), 0, P) (see statistics())
  // Q', K', V' strided views of inputs: cp.async tiles, double-buffered K'/V', ldmatrix.
  bool strided_ = false;
  bool first_pass_ = true;
  StridedOperand q_, k_, v_;
  std::optional<double> folded_factor_;  // the scores' factor when Q'·K''s scales fold
  bool scale_in_exponent_ = false;  // the folded scale rides in the exponent (see the constructor)
  std::vector<std::string> batch_coordinates_;
  std::string minus_inf_, plus_inf_;
  // Score operands computed once per key (shared memory, per key tile) or per row (registers).
  struct Hoisted {
    const Value* value = nullptr;
    bool per_key = false;
    std::string type, array;
  };
  std::vector<Hoisted> hoisted_;
};

}  // namespace

bool fits_tiled_attention(const AttentionShape& a) {
  const bool tensor_cores =
      is_16_bit_float(operand_type(*a.scores)) && is_16_bit_float(operand_type(*a.output)) &&
      a.depth % 16 == 0 && a.depth <= kMmaMaxHeadSize && a.columns % 8 == 0 &&
      a.columns <= kMmaMaxHeadSize && a.softmax->result()->type().dtype != DType::kF64;
  return tensor_cores || fits_simt(a);
}

namespace {

// A division of the block's 4 warps: `row_warps` warps along the query rows, each with `groups`
// groups of 16 rows; the key tiles split between the other 4 / row_warps warps.
struct RowLayout {
  int64_t row_warps = 4, groups = 1;
};

std::vector<RowLayout> tiled_attention_layouts(const KernelBody& body, const AttentionShape& a,
                                               const Target& target) {
  std::vector<RowLayout> choices = {{4, 1}, {2, 1}, {1, 1}};
  // The heuristic's: the most row warps whose grid has a block for every SM.
  const auto fills_sms = [&](const RowLayout& layout) {
    return a.batch_count * ceil_div(a.queries, layout.row_warps * kWarpRows) >= target.sm_count;
  };
  const auto heuristic = std::find_if(choices.begin(), choices.end() - 1, fills_sms);
  std::rotate(choices.begin(), heuristic, heuristic + 1);
  // More row groups than the query rows fill are not offered (their blocks would only be
  // emptier), unless the heuristic takes them.
  const int64_t chosen = choices.front().row_warps;
  const int64_t row_groups = std::max<int64_t>(1, ceil_div(a.queries, kWarpRows));
  std::erase_if(choices, [&](const RowLayout& layout) {
    return layout.row_warps > row_groups && layout.row_warps != chosen;
  });
  // 32 rows a warp (128 a block) where the writer can pair row groups and the queries fill more
  // than 64 rows.
  KernelSpec unused;
  if (a.queries > kWarps * kWarpRows &&
      TiledAttentionWriter(body, a, 4, 1, unused).pairs_row_groups()) {
    choices.push_back({4, 2});
  }
  return choices;
}

}  // namespace

std::vector<std::string> tiled_attention_tactics(const KernelBody& body, const AttentionShape& a,
                                                 const Target& target) {
  std::vector<std::string> names;
  for (const RowLayout& layout : tiled_attention_layouts(body, a, target)) {
    const int64_t splits = kWarps / layout.row_warps;
    const int64_t rows = layout.row_warps * layout.groups * kWarpRows;
    names.push_back(
        layout.groups > 1
            ? fmt::format("{} query rows a block, {} a warp", rows, layout.groups * kWarpRows)
        : splits == 1 ? fmt::format("{} query rows a block", rows)
                      : fmt::format("{} query rows a block, key tiles split in {}", rows, splits));
  }
  return names;
}

KernelSpec emit_tiled_attention_kernel(const KernelBody& body, const AttentionShape& shape,
                                       const Target& target, int tactic) {
  const std::vector<RowLayout> layouts = tiled_attention_layouts(body, shape, target);
  if (tactic < 0 || static_cast<size_t>(tactic) >= layouts.size()) {
    throw InternalError(fmt::format("tiled attention: tactic {} of {}", tactic, layouts.size()));
  }
  const RowLayout& layout = layouts[static_cast<size_t>(tactic)];
  KernelSpec spec;
  TiledAttentionWriter(body, shape, layout.row_warps, layout.groups, spec).write();
  return spec;
}

}  // namespace kiln::codegen
