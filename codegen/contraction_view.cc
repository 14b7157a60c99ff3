// The GEMM views of gemm, matmul and conv (see the header).
#include "codegen/contraction_view.h"

#include <fmt/format.h>

#include <array>

#include "codegen/cuda_expr.h"
#include "ir/error.h"

namespace kiln::codegen {
namespace {

// An [..., r_size, c_size] operand of a matmul whose result has batch dims `batch` (numpy
// broadcasting): plain where all its batch dims broadcast (one matrix) or none do.
std::optional<OperandStrides> matmul_operand_strides(const Shape& shape, int64_t batch,
                                                     int64_t r_size, int64_t c_size) {
  if (shape.size() < 2) return std::nullopt;
  int64_t matrices = 1;
  for (size_t i = 0; i + 2 < shape.size(); ++i) matrices *= shape[i];
  if (matrices != 1 && matrices != batch) return std::nullopt;
  return OperandStrides{.batch = matrices == 1 ? 0 : r_size * c_size, .row = c_size, .column = 1};
}

class MatmulView : public ContractionView {
 public:
  explicit MatmulView(const Node& node) : ContractionView(node) {
    const Shape& a = node.operand(0)->type().shape;
    const Shape& b = node.operand(1)->type().shape;
    const Shape& out = node.result()->type().shape;
    // A 1-D A is one row [1, k], a 1-D B one column [k, 1]; the result lacks that axis.
    const bool a_vector = a.size() == 1;
    b_vector_ = b.size() == 1;
    rows = a_vector ? 1 : a[a.size() - 2];
    depth = a.back();
    cols = b_vector_ ? 1 : b.back();
    const size_t matrix_axes = (a_vector ? 0 : 1) + (b_vector_ ? 0 : 1);
    batch_shape_.assign(out.begin(), out.end() - static_cast<std::ptrdiff_t>(matrix_axes));
    for (int64_t dim : batch_shape_) batch *= dim;
  }
  // A 1-D A broadcasts as a [1, k] matrix would, so only a 1-D B needs its own index.
  std::string a_index(ElementEmitter& e, const std::string& b, const std::string& m,
                      const std::string& k) override {
    return matmul_operand_index(e, a_operand(), batch_shape_, b, m, k, rows, depth);
  }
  std::string b_index(ElementEmitter& e, const std::string& b, const std::string& k,
                      const std::string& n) override {
    if (b_vector_) return e.index_temp(k);
    return matmul_operand_index(e, b_operand(), batch_shape_, b, k, n, depth, cols);
  }
  std::string result_index(ElementEmitter& e, const std::string& b, const std::string& m,
                           const std::string& n) override {
    return e.index_temp(fmt::format("({} * {} + {}) * {} + {}", b, rows, m, cols, n));
  }
  std::string result(ElementEmitter&, const std::string&, const std::string&, const std::string&,
                     const std::string& sum) override {
    return sum;
  }
  bool a_contiguous_along_m() const override { return false; }
  bool b_contiguous_along_k() const override { return false; }
  int64_t a_contiguous_run() const override { return depth; }
  int64_t b_contiguous_run() const override { return cols; }
  std::optional<OperandStrides> a_strides() const override {
    return matmul_operand_strides(a_operand()->type().shape, batch, rows, depth);
  }
  std::optional<OperandStrides> b_strides() const override {
    if (b_vector_) return std::nullopt;
    return matmul_operand_strides(b_operand()->type().shape, batch, depth, cols);
  }
  bool result_contiguous_along_m() const override { return false; }

 private:
  Shape batch_shape_;
  bool b_vector_ = false;
};

class GemmView : public ContractionView {
 public:
  explicit GemmView(const Node& node) : ContractionView(node) {
    const Shape& a = node.operand(0)->type().shape;
    const Shape& b = node.operand(1)->type().shape;
    trans_a_ = node.int_attr("transA") != 0;
    trans_b_ = node.int_attr("transB") != 0;
    rows = trans_a_ ? a[1] : a[0];
    depth = trans_a_ ? a[0] : a[1];
    cols = trans_b_ ? b[0] : b[1];
  }
  std::string a_index(ElementEmitter& e, const std::string&, const std::string& m,
                      const std::string& k) override {
    return e.index_temp(trans_a_ ? fmt::format("{} * {} + {}", k, rows, m)
                                 : fmt::format("{} * {} + {}", m, depth, k));
  }
  std::string b_index(ElementEmitter& e, const std::string&, const std::string& k,
                      const std::string& n) override {
    return e.index_temp(trans_b_ ? fmt::format("{} * {} + {}", n, depth, k)
                                 : fmt::format("{} * {} + {}", k, cols, n));
  }
  std::string result_index(ElementEmitter& e, const std::string&, const std::string& m,
                           const std::string& n) override {
    return e.index_temp(fmt::format("{} * {} + {}", m, cols, n));
  }
  std::string result(ElementEmitter& e, const std::string& b, const std::string& m,
                     const std::string& n, const std::string& sum) override {
    const double alpha = node_.float_attr("alpha");
    const double beta = node_.float_attr("beta");
    std::string value =
        alpha == 1.0 ? sum : fmt::format("{} * {}", cuda_literal(alpha, DType::kF32), sum);
    if (node_.operands().size() > 2 && beta != 0.0) {
      const Value* c = node_.operand(2);
      const std::string c_element =
          e.element(c, e.broadcast_index(result_index(e, b, m, n), {rows, cols}, c->type().shape));
      value = beta == 1.0
                  ? fmt::format("{} + {}", value, c_element)
                  : fmt::format("{} + {} * {}", value, cuda_literal(beta, DType::kF32), c_element);
    }
    return e.temp("float", value);
  }
  bool a_contiguous_along_m() const override { return trans_a_; }
  bool b_contiguous_along_k() const override { return trans_b_; }
  int64_t a_contiguous_run() const override { return trans_a_ ? rows : depth; }
  int64_t b_contiguous_run() const override { return trans_b_ ? depth : cols; }
  std::optional<OperandStrides> a_strides() const override {
    return trans_a_ ? OperandStrides{.batch = 0, .row = 1, .column = rows}
                    : OperandStrides{.batch = 0, .row = depth, .column = 1};
  }
  std::optional<OperandStrides> b_strides() const override {
    return trans_b_ ? OperandStrides{.batch = 0, .row = 1, .column = depth}
                    : OperandStrides{.batch = 0, .row = cols, .column = 1};
  }
  bool result_contiguous_along_m() const override { return false; }

 private:
  bool trans_a_ = false, trans_b_ = false;
};

// 2-D conv. Channels-first (X [N,C,H,W], W [M,C/g,kh,kw], Y [N,M,H',W']): k = (input channel
// of the group, kernel_y, kernel_x); neighbouring m are neighbouring input and output pixels.
// Channels-last (channels_last=1: X [N,H,W,C], W [M,kh,kw,C/g], Y [N,H',W',M]): k = (kernel_y,
// kernel_x, input channel of the group), so consecutive k at one tap are consecutive channels in
// memory; neighbouring n are neighbouring output channels.
class ConvView : public ContractionView {
 public:
  explicit ConvView(const Node& node) : ContractionView(node) {
    const Shape& x = node.operand(0)->type().shape;
    const Shape& w = node.operand(1)->type().shape;
    const Shape& y = node.result()->type().shape;
    if (x.size() != 4) {
      throw UnsupportedError(node.describe() + ": only 2-D convolutions on the GPU so far");
    }
    channels_last_ = node.int_attr("channels_last") != 0;
    // Dims of X, W and Y: channel, height, width.
    const size_t c = channels_last_ ? 3 : 1, h = channels_last_ ? 1 : 2,
                 wd = channels_last_ ? 2 : 3;
    groups_ = node.int_attr("group");
    channels_ = x[c];
    height_ = x[h];
    width_ = x[wd];
    out_channels_ = w[0];
    kernel_h_ = w[h];
    kernel_w_ = w[wd];
    out_h_ = y[h];
    out_w_ = y[wd];
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
  void a_row_terms(ElementEmitter& e, const std::string& m) override { row_coordinates(e, m); }
  std::string a_index(ElementEmitter& e, const std::string& b, const std::string& m,
                      const std::string& k) override {
    input_coordinates(e, b, m, k);
    if (channels_last_) {
      return e.index_temp(fmt::format("(({} * {} + {}) * {} + {}) * {} + {}", image_, height_, iy_,
                                      width_, ix_, channels_, channel_));
    }
    return e.index_temp(fmt::format("(({} * {} + {}) * {} + {}) * {} + {}", image_, channels_,
                                    channel_, height_, iy_, width_, ix_));
  }
  // [oc][k] either way: OIHW's k = (c, ky, kx) and OHWI's k = (ky, kx, c) are both W's order.
  std::string b_index(ElementEmitter& e, const std::string& b, const std::string& k,
                      const std::string& n) override {
    const std::string oc = e.index_temp(fmt::format("{} * {} + {}", b, cols, n));
    return e.index_temp(fmt::format("{} * {} + {}", oc, depth, k));
  }
  std::string result_index(ElementEmitter& e, const std::string& b, const std::string& m,
                           const std::string& n) override {
    const std::string oc = e.index_temp(fmt::format("{} * {} + {}", b, cols, n));
    if (channels_last_) return e.index_temp(fmt::format("{} * {} + {}", m, out_channels_, oc));
    const std::string image = e.index_temp(fmt::format("{} / {}", m, out_h_ * out_w_));
    const std::string pixel = e.index_temp(fmt::format("{} % {}", m, out_h_ * out_w_));
    return e.index_temp(
        fmt::format("({} * {} + {}) * {} + {}", image, out_channels_, oc, out_h_ * out_w_, pixel));
  }
  std::string result(ElementEmitter& e, const std::string& b, const std::string&,
                     const std::string& n, const std::string& sum) override {
    if (node_.operands().size() < 3) return sum;
    const std::string oc = e.index_temp(fmt::format("{} * {} + {}", b, cols, n));
    return e.temp("float", fmt::format("{} + {}", sum, e.element(node_.operand(2), oc)));
  }
  // Channels-first: neighbouring output pixels read neighbouring input pixels. Channels-last:
  // neighbouring k at one tap read neighbouring channels. Weights are [oc][k] either way.
  bool a_contiguous_along_m() const override { return !channels_last_; }
  bool b_contiguous_along_k() const override { return true; }
  // A 1×1 convolution of stride 1 without padding reads its input as it lies: channels-first,
  // each image's [C, H·W] pixels (runs of H·W along m); channels-last, the [N·H·W, C] matrix
  // (runs of a group's C/g channels along k, each at a multiple of C/g).
  int64_t a_contiguous_run() const override {
    if (!is_pointwise()) return 1;
    return channels_last_ ? channels_ / groups_ : out_h_ * out_w_;
  }
  // Channels-last: a group's C/g channels at one (pixel, tap) lie together, inside the image or
  // wholly in its padding.
  int64_t a_gather_run() const override {
    return channels_last_ ? channels_ / groups_ : a_contiguous_run();
  }
  int64_t b_contiguous_run() const override { return depth; }
  // A channels-last 1×1 convolution of one group reads X as the [N·H·W, C] matrix; W is
  // [groups · cols, depth] either way.
  std::optional<OperandStrides> a_strides() const override {
    if (!channels_last_ || groups_ != 1 || !is_pointwise()) return std::nullopt;
    return OperandStrides{.batch = 0, .row = channels_, .column = 1};
  }
  std::optional<OperandStrides> b_strides() const override {
    return OperandStrides{.batch = cols * depth, .row = 1, .column = depth};
  }
  bool result_contiguous_along_m() const override { return !channels_last_; }

 private:
  bool is_pointwise() const {
    return kernel_h_ == 1 && kernel_w_ == 1 && strides_[0] == 1 && strides_[1] == 1 &&
           pads_[0] == 0 && pads_[1] == 0 && out_h_ == height_ && out_w_ == width_;
  }

  // Row m's image and output pixel (oy, ox).
  std::array<std::string, 3> row_coordinates(ElementEmitter& e, const std::string& m) {
    const std::string image = e.index_temp(fmt::format("{} / {}", m, out_h_ * out_w_));
    const std::string pixel = e.index_temp(fmt::format("{} % {}", m, out_h_ * out_w_));
    return {image, e.index_temp(fmt::format("{} / {}", pixel, out_w_)),
            e.index_temp(fmt::format("{} % {}", pixel, out_w_))};
  }

  void input_coordinates(ElementEmitter& e, const std::string& b, const std::string& m,
                         const std::string& k) {
    const int64_t taps = kernel_h_ * kernel_w_;
    const int64_t group_channels = channels_ / groups_;
    const auto [image, oy, ox] = row_coordinates(e, m);
    image_ = image;
    std::string tap;
    if (channels_last_) {
      channel_ =
          e.index_temp(fmt::format("{} * {} + {} % {}", b, group_channels, k, group_channels));
      tap = e.index_temp(fmt::format("{} / {}", k, group_channels));
    } else {
      channel_ = e.index_temp(fmt::format("{} * {} + {} / {}", b, group_channels, k, taps));
      tap = e.index_temp(fmt::format("{} % {}", k, taps));
    }
    const std::string ky = e.index_temp(fmt::format("{} / {}", tap, kernel_w_));
    const std::string kx = e.index_temp(fmt::format("{} % {}", tap, kernel_w_));
    iy_ = e.index_temp(
        fmt::format("{} * {} - {} + {} * {}", oy, strides_[0], pads_[0], ky, dilations_[0]));
    ix_ = e.index_temp(
        fmt::format("{} * {} - {} + {} * {}", ox, strides_[1], pads_[1], kx, dilations_[1]));
  }

  bool channels_last_ = false;
  int64_t groups_, channels_, height_, width_, out_channels_, kernel_h_, kernel_w_, out_h_, out_w_;
  std::vector<int64_t> strides_, pads_, dilations_;
  std::string image_, channel_, iy_, ix_;
};

}  // namespace

std::string matmul_operand_index(ElementEmitter& e, const Value* value, const Shape& batch,
                                 const std::string& b, const std::string& r, const std::string& c,
                                 int64_t r_size, int64_t c_size) {
  Shape full = batch;
  full.push_back(r_size);
  full.push_back(c_size);
  const std::string flat =
      e.index_temp(fmt::format("({} * {} + {}) * {} + {}", b, r_size, r, c_size, c));
  return e.broadcast_index(flat, full, value->type().shape);
}

const Node* contraction_anchor(const KernelBody& body) {
  return first_node_of(body, {"gemm", "matmul", "conv"});
}

std::unique_ptr<ContractionView> contraction_view_of(const Node& anchor) {
  if (anchor.op() == "matmul") return std::make_unique<MatmulView>(anchor);
  if (anchor.op() == "gemm") return std::make_unique<GemmView>(anchor);
  return std::make_unique<ConvView>(anchor);
}

void emit_contraction_result(ElementEmitter& e, const KernelBody& body, const Node& anchor,
                             ContractionView& view, const std::vector<std::string>& outputs,
                             const std::string& b, const std::string& m, const std::string& n,
                             const std::string& sum) {
  const std::string result = view.result(e, b, m, n, sum);
  const std::string at = view.result_index(e, b, m, n);
  if (view.result_index_ends_in_n()) e.set_inner_coordinate(at, view.cols, n);
  e.bind(anchor.result(), at, result);
  for (size_t k = 0; k < body.outputs.size(); ++k) {
    e.code().line(fmt::format("{}[{}] = {};", outputs[k], at, e.stored(body.outputs[k], at)));
  }
}

}  // namespace kiln::codegen
