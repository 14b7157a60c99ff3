// The contraction emitter (see the header).
#include "codegen/contraction_emitter.h"

#include <fmt/format.h>

#include <memory>

#include "codegen/element_emitter.h"
#include "ir/cuda_expr.h"
#include "ir/error.h"

namespace kiln::codegen {
namespace {

constexpr int kTile = 64;      // output rows and columns of a block
constexpr int kTileK = 16;     // depth staged per step
constexpr int kThreads = 256;  // 16 × 16 threads
constexpr int kPerThread = 4;  // outputs per thread along rows and along columns
constexpr int kThreadsPerSide = kTile / kPerThread;

const Node* anchor_of(const KernelBody& body) {
  for (const Node* node : body.nodes) {
    if (node->op() == "gemm" || node->op() == "matmul" || node->op() == "conv") return node;
  }
  return nullptr;
}

// The GEMM view of one contraction op: sizes, and how (b, m, k), (b, k, n) and (b, m, n) map to
// its operands' and result's elements.
class ContractionView {
 public:
  virtual ~ContractionView() = default;
  int64_t batch = 1, rows = 1, cols = 1, depth = 1;
  // A(b, m, k) and B(b, k, n) as element variables (emitting their loads).
  virtual std::string a_element(ElementEmitter& e, const std::string& b, const std::string& m,
                                const std::string& k) = 0;
  virtual std::string b_element(ElementEmitter& e, const std::string& b, const std::string& k,
                                const std::string& n) = 0;
  // The flat index of result element (b, m, n), and the op's result from the accumulated sum.
  virtual std::string result_index(ElementEmitter& e, const std::string& b, const std::string& m,
                                   const std::string& n) = 0;
  virtual std::string result(ElementEmitter& e, const std::string& b, const std::string& m,
                             const std::string& n, const std::string& sum) = 0;
  // A condition under which A(b, m, k) is loaded; elsewhere it reads as zero ("": always).
  virtual std::string a_padding(ElementEmitter&, const std::string&, const std::string&,
                                const std::string&) {
    return "";
  }
};

class MatmulView : public ContractionView {
 public:
  explicit MatmulView(const Node& node) : node_(node) {
    const Shape& a = node.operand(0)->type().shape;
    const Shape& b = node.operand(1)->type().shape;
    const Shape& out = node.result()->type().shape;
    if (a.size() < 2 || b.size() < 2) {
      throw UnsupportedError(node.describe() + ": matmul of a rank-1 operand on the GPU");
    }
    rows = a[a.size() - 2];
    depth = a.back();
    cols = b.back();
    batch_shape_.assign(out.begin(), out.end() - 2);
    for (int64_t dim : batch_shape_) batch *= dim;
  }
  std::string a_element(ElementEmitter& e, const std::string& b, const std::string& m,
                        const std::string& k) override {
    return operand(e, 0, b, m, k, rows, depth);
  }
  std::string b_element(ElementEmitter& e, const std::string& b, const std::string& k,
                        const std::string& n) override {
    return operand(e, 1, b, k, n, depth, cols);
  }
  std::string result_index(ElementEmitter& e, const std::string& b, const std::string& m,
                           const std::string& n) override {
    return e.index_temp(fmt::format("({} * {} + {}) * {} + {}", b, rows, m, cols, n));
  }
  std::string result(ElementEmitter&, const std::string&, const std::string&, const std::string&,
                     const std::string& sum) override {
    return sum;
  }

 private:
  // Operand `i` as a [batch..., r, c] matrix broadcast over the result's batch dims.
  std::string operand(ElementEmitter& e, size_t i, const std::string& b, const std::string& r,
                      const std::string& c, int64_t r_size, int64_t c_size) {
    Shape full = batch_shape_;
    full.push_back(r_size);
    full.push_back(c_size);
    const std::string flat =
        e.index_temp(fmt::format("({} * {} + {}) * {} + {}", b, r_size, r, c_size, c));
    const Value* value = node_.operand(i);
    return e.element(value, e.broadcast_index(flat, full, value->type().shape));
  }

  const Node& node_;
  Shape batch_shape_;
};

class GemmView : public ContractionView {
 public:
  explicit GemmView(const Node& node) : node_(node) {
    const Shape& a = node.operand(0)->type().shape;
    const Shape& b = node.operand(1)->type().shape;
    trans_a_ = node.int_attr("transA") != 0;
    trans_b_ = node.int_attr("transB") != 0;
    rows = trans_a_ ? a[1] : a[0];
    depth = trans_a_ ? a[0] : a[1];
    cols = trans_b_ ? b[0] : b[1];
  }
  std::string a_element(ElementEmitter& e, const std::string&, const std::string& m,
                        const std::string& k) override {
    const std::string index = trans_a_ ? fmt::format("{} * {} + {}", k, rows, m)
                                       : fmt::format("{} * {} + {}", m, depth, k);
    return e.element(node_.operand(0), e.index_temp(index));
  }
  std::string b_element(ElementEmitter& e, const std::string&, const std::string& k,
                        const std::string& n) override {
    const std::string index = trans_b_ ? fmt::format("{} * {} + {}", n, depth, k)
                                       : fmt::format("{} * {} + {}", k, cols, n);
    return e.element(node_.operand(1), e.index_temp(index));
  }
  std::string result_index(ElementEmitter& e, const std::string&, const std::string& m,
                           const std::string& n) override {
    return e.index_temp(fmt::format("{} * {} + {}", m, cols, n));
  }
  std::string result(ElementEmitter& e, const std::string& b, const std::string& m,
                     const std::string& n, const std::string& sum) override {
    const double alpha = node_.float_attr("alpha");
    const double beta = node_.float_attr("beta");
    std::string value = alpha == 1.0 ? sum : fmt::format("{}f * {}", alpha, sum);
    if (node_.operands().size() > 2 && beta != 0.0) {
      const Value* c = node_.operand(2);
      const std::string c_element =
          e.element(c, e.broadcast_index(result_index(e, b, m, n), {rows, cols}, c->type().shape));
      value = beta == 1.0 ? fmt::format("{} + {}", value, c_element)
                          : fmt::format("{} + {}f * {}", value, beta, c_element);
    }
    return e.temp("float", value);
  }

 private:
  const Node& node_;
  bool trans_a_ = false, trans_b_ = false;
};

class ConvView : public ContractionView {
 public:
  explicit ConvView(const Node& node) : node_(node) {
    const Shape& x = node.operand(0)->type().shape;
    const Shape& w = node.operand(1)->type().shape;
    const Shape& y = node.result()->type().shape;
    if (x.size() != 4) {
      throw UnsupportedError(node.describe() + ": only 2-D convolutions on the GPU so far");
    }
    groups_ = node.int_attr("group");
    channels_ = x[1];
    height_ = x[2];
    width_ = x[3];
    out_channels_ = w[0];
    kernel_h_ = w[2];
    kernel_w_ = w[3];
    out_h_ = y[2];
    out_w_ = y[3];
    strides_ = node.ints_attr("strides");
    pads_ = node.ints_attr("pads");
    dilations_ = node.ints_attr("dilations");
    batch = groups_;
    rows = x[0] * out_h_ * out_w_;
    cols = out_channels_ / groups_;
    depth = (channels_ / groups_) * kernel_h_ * kernel_w_;
  }
  std::string a_padding(ElementEmitter& e, const std::string& b, const std::string& m,
                        const std::string& k) override {
    input_coordinates(e, b, m, k);
    return fmt::format("{} >= 0 && {} < {} && {} >= 0 && {} < {}", iy_, iy_, height_, ix_, ix_,
                       width_);
  }
  std::string a_element(ElementEmitter& e, const std::string& b, const std::string& m,
                        const std::string& k) override {
    input_coordinates(e, b, m, k);
    const std::string index =
        e.index_temp(fmt::format("(({} * {} + {}) * {} + {}) * {} + {}", image_, channels_,
                                 channel_, height_, iy_, width_, ix_));
    return e.element(node_.operand(0), index);
  }
  std::string b_element(ElementEmitter& e, const std::string& b, const std::string& k,
                        const std::string& n) override {
    const std::string oc = e.index_temp(fmt::format("{} * {} + {}", b, cols, n));
    return e.element(node_.operand(1), e.index_temp(fmt::format("{} * {} + {}", oc, depth, k)));
  }
  std::string result_index(ElementEmitter& e, const std::string& b, const std::string& m,
                           const std::string& n) override {
    const std::string image = e.index_temp(fmt::format("{} / {}", m, out_h_ * out_w_));
    const std::string pixel = e.index_temp(fmt::format("{} % {}", m, out_h_ * out_w_));
    const std::string oc = e.index_temp(fmt::format("{} * {} + {}", b, cols, n));
    return e.index_temp(
        fmt::format("({} * {} + {}) * {} + {}", image, out_channels_, oc, out_h_ * out_w_, pixel));
  }
  std::string result(ElementEmitter& e, const std::string& b, const std::string&,
                     const std::string& n, const std::string& sum) override {
    if (node_.operands().size() < 3) return sum;
    const std::string oc = e.index_temp(fmt::format("{} * {} + {}", b, cols, n));
    return e.temp("float", fmt::format("{} + {}", sum, e.element(node_.operand(2), oc)));
  }

 private:
  void input_coordinates(ElementEmitter& e, const std::string& b, const std::string& m,
                         const std::string& k) {
    const int64_t taps = kernel_h_ * kernel_w_;
    image_ = e.index_temp(fmt::format("{} / {}", m, out_h_ * out_w_));
    const std::string pixel = e.index_temp(fmt::format("{} % {}", m, out_h_ * out_w_));
    const std::string oy = e.index_temp(fmt::format("{} / {}", pixel, out_w_));
    const std::string ox = e.index_temp(fmt::format("{} % {}", pixel, out_w_));
    channel_ = e.index_temp(fmt::format("{} * {} + {} / {}", b, channels_ / groups_, k, taps));
    const std::string tap = e.index_temp(fmt::format("{} % {}", k, taps));
    const std::string ky = e.index_temp(fmt::format("{} / {}", tap, kernel_w_));
    const std::string kx = e.index_temp(fmt::format("{} % {}", tap, kernel_w_));
    iy_ = e.index_temp(
        fmt::format("{} * {} - {} + {} * {}", oy, strides_[0], pads_[0], ky, dilations_[0]));
    ix_ = e.index_temp(
        fmt::format("{} * {} - {} + {} * {}", ox, strides_[1], pads_[1], kx, dilations_[1]));
  }

  const Node& node_;
  int64_t groups_, channels_, height_, width_, out_channels_, kernel_h_, kernel_w_, out_h_, out_w_;
  std::vector<int64_t> strides_, pads_, dilations_;
  std::string image_, channel_, iy_, ix_;
};

std::unique_ptr<ContractionView> view_of(const Node& anchor) {
  if (anchor.op() == "matmul") return std::make_unique<MatmulView>(anchor);
  if (anchor.op() == "gemm") return std::make_unique<GemmView>(anchor);
  return std::make_unique<ConvView>(anchor);
}

// TF32 operand rounding (codegen/device_functions.cc).
std::string tf32(const std::string& element) { return "kiln_round_to_tf32(" + element + ")"; }

}  // namespace

bool is_contraction_body(const KernelBody& body) { return anchor_of(body) != nullptr; }

KernelSpec emit_contraction_kernel(const KernelBody& body) {
  const Node* anchor = anchor_of(body);
  if (!anchor) throw InternalError("emit_contraction_kernel: no gemm, matmul or conv in the body");
  std::unique_ptr<ContractionView> view = view_of(*anchor);
  const bool round_tf32 = anchor->has_attr("tf32") && anchor->int_attr("tf32") != 0;
  const auto operand = [&](const std::string& element) {
    return round_tf32 ? tf32(element) : element;
  };

  KernelSpec spec;
  const int64_t row_tiles = (view->rows + kTile - 1) / kTile;
  if (view->batch > 65535 || row_tiles > 65535) {
    throw UnsupportedError(anchor->describe() + ": too many rows or batches for one launch");
  }
  const std::vector<std::string> outputs =
      begin_spec(spec, body, kThreads,
                 {static_cast<uint32_t>((view->cols + kTile - 1) / kTile),
                  static_cast<uint32_t>(row_tiles), static_cast<uint32_t>(view->batch)});

  CodeWriter code(1);
  ElementEmitter e(code, spec.params, index_type_for(body, 0));
  const std::string& index = e.index_type();
  const std::string rows = std::to_string(view->rows), cols = std::to_string(view->cols),
                    depth = std::to_string(view->depth);
  code.line(fmt::format("__shared__ float g_a_tile[{}][{}];", kTileK, kTile + 1));
  code.line(fmt::format("__shared__ float g_b_tile[{}][{}];", kTileK, kTile + 1));
  code.line(fmt::format("const {} g_b = blockIdx.z;", index));
  code.line(fmt::format("const {} g_m0 = static_cast<{}>(blockIdx.y) * {};", index, index, kTile));
  code.line(fmt::format("const {} g_n0 = static_cast<{}>(blockIdx.x) * {};", index, index, kTile));
  code.line(fmt::format("const int g_tx = threadIdx.x % {}, g_ty = threadIdx.x / {};",
                        kThreadsPerSide, kThreadsPerSide));
  code.line(fmt::format("float g_acc[{}][{}] = {{}};", kPerThread, kPerThread));
  e.open_block(fmt::format("for ({} g_k0 = 0; g_k0 < {}; g_k0 += {})", index, depth, kTileK));

  // A tile: thread t loads (row t / kTileK, depth t % kTileK): consecutive threads, consecutive k.
  e.open_block(fmt::format("for (int g_l = 0; g_l < {}; ++g_l)", kTile * kTileK / kThreads));
  code.line(fmt::format("const int g_t = threadIdx.x + g_l * {};", kThreads));
  code.line(fmt::format("const int g_kk = g_t % {}, g_row = g_t / {};", kTileK, kTileK));
  code.line(fmt::format("const {} g_m = g_m0 + g_row, g_k = g_k0 + g_kk;", index));
  code.line("float g_v = 0.0f;");
  e.open_block(fmt::format("if (g_m < {} && g_k < {})", rows, depth));
  const std::string padding = view->a_padding(e, "g_b", "g_m", "g_k");
  if (!padding.empty()) e.open_block("if (" + padding + ")");
  code.line("g_v = " + operand(view->a_element(e, "g_b", "g_m", "g_k")) + ";");
  if (!padding.empty()) e.close_block();
  e.close_block();
  code.line("g_a_tile[g_kk][g_row] = g_v;");
  e.close_block();

  // B tile: thread t loads (depth t / kTile, column t % kTile): consecutive threads, consecutive n.
  e.open_block(fmt::format("for (int g_l = 0; g_l < {}; ++g_l)", kTile * kTileK / kThreads));
  code.line(fmt::format("const int g_t = threadIdx.x + g_l * {};", kThreads));
  code.line(fmt::format("const int g_kk = g_t / {}, g_col = g_t % {};", kTile, kTile));
  code.line(fmt::format("const {} g_k = g_k0 + g_kk, g_n = g_n0 + g_col;", index));
  code.line("float g_v = 0.0f;");
  e.open_block(fmt::format("if (g_k < {} && g_n < {})", depth, cols));
  code.line("g_v = " + operand(view->b_element(e, "g_b", "g_k", "g_n")) + ";");
  e.close_block();
  code.line("g_b_tile[g_kk][g_col] = g_v;");
  e.close_block();
  code.line("__syncthreads();");

  code.line("#pragma unroll");
  e.open_block(fmt::format("for (int g_kk = 0; g_kk < {}; ++g_kk)", kTileK));
  code.line(fmt::format("float g_a[{}], g_w[{}];", kPerThread, kPerThread));
  code.line("#pragma unroll");
  code.line(
      fmt::format("for (int g_i = 0; g_i < {}; ++g_i) g_a[g_i] = g_a_tile[g_kk][g_ty + {} * g_i];",
                  kPerThread, kThreadsPerSide));
  code.line("#pragma unroll");
  code.line(
      fmt::format("for (int g_j = 0; g_j < {}; ++g_j) g_w[g_j] = g_b_tile[g_kk][g_tx + {} * g_j];",
                  kPerThread, kThreadsPerSide));
  code.line("#pragma unroll");
  e.open_block(fmt::format("for (int g_i = 0; g_i < {}; ++g_i)", kPerThread));
  code.line("#pragma unroll");
  code.line(fmt::format(
      "for (int g_j = 0; g_j < {}; ++g_j) g_acc[g_i][g_j] += g_a[g_i] * g_w[g_j];", kPerThread));
  e.close_block();
  e.close_block();
  code.line("__syncthreads();");
  e.close_block();

  // The epilogue: each result element through the fusion's ops after the contraction.
  code.line("#pragma unroll");
  e.open_block(fmt::format("for (int g_i = 0; g_i < {}; ++g_i)", kPerThread));
  code.line("#pragma unroll");
  e.open_block(fmt::format("for (int g_j = 0; g_j < {}; ++g_j)", kPerThread));
  code.line(fmt::format("const {} g_m = g_m0 + g_ty + {} * g_i, g_n = g_n0 + g_tx + {} * g_j;",
                        index, kThreadsPerSide, kThreadsPerSide));
  e.open_block(fmt::format("if (g_m < {} && g_n < {})", rows, cols));
  const std::string result = view->result(e, "g_b", "g_m", "g_n", "g_acc[g_i][g_j]");
  const std::string at = view->result_index(e, "g_b", "g_m", "g_n");
  e.bind(anchor->result(), at, result);
  for (size_t k = 0; k < body.outputs.size(); ++k) {
    const DType dtype = body.outputs[k]->type().dtype;
    code.line(fmt::format("{}[{}] = {};", outputs[k], at,
                          store_expression(dtype, e.element(body.outputs[k], at))));
  }
  e.close_block();
  e.close_block();
  e.close_block();
  spec.body = code.text();
  return spec;
}

}  // namespace kiln::codegen
