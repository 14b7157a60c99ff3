// The direct convolution emitter (see the header).
#include "codegen/direct_conv_emitter.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "codegen/cuda_expr.h"
#include "codegen/element_emitter.h"
#include "codegen/grid_stride.h"
#include "codegen/vector_access.h"
#include "ir/error.h"
#include "ir/ops/nn_conv_geometry.h"

namespace kiln::codegen {
namespace {

// Channels per group up to which a conv is direct (see the header).
constexpr int64_t kMaxDirectInChannels = 16;
constexpr int64_t kMaxDirectOutChannels = 15;
// Windows up to this many taps per channel are unrolled.
constexpr int64_t kMaxUnrolledTaps = 32;
// Channels a thread of a vectorized depthwise conv computes: 16 bytes of 16-bit X a tap.
constexpr int kDepthwiseVector = 8;
// The heuristic gives a thread 8 channels where that leaves at least this many threads (8 warps
// an SM on 132 SMs), and 8 channels of kDepthwiseColumns columns where that does: a smaller conv
// (batch 1's deeper layers) keeps a thread an element, eight times the threads to hide latency.
// On an H200 the columns tactic beat 8 channels a thread on each of MobileNetV2's depthwise convs
// at batch 32 and 128 (tied where the columns left 110 K threads), and the tuner kept an element
// a thread for most at batch 1 (docs/PERF.md, session 17); measurement decides where there is a
// GPU.
constexpr int64_t kMinDepthwiseThreads = 32768;
// Neighbouring output columns a thread of the columns tactic computes: its window's columns
// overlap, so it loads (columns − 1) · stride + (kernel − 1) · dilation + 1 vectors of X a kernel
// row instead of columns · kernel, and each weight once for all of them.
constexpr int kDepthwiseColumns = 4;
constexpr int64_t kMaxHeuristicColumnTaps = 9;
// The tactics of a conv that can be vectorized.
constexpr const char* kVectorTactic = "8 channels a thread";
constexpr const char* kColumnsTactic = "8 channels, 4 columns a thread";
constexpr const char* kElementTactic = "an element a thread";

const Node* conv_anchor(const KernelBody& body) {
  return first_node_of(body, {"conv", "conv_transpose"});
}

bool is_direct(const Node& conv) {
  if (conv.op() == "conv_transpose") return true;
  const nn::ConvGeometry g = nn::conv_geometry(conv);
  return g.in_spatial.size() != 2 || (g.in_channels / g.group <= kMaxDirectInChannels &&
                                      g.out_channels / g.group <= kMaxDirectOutChannels);
}

// Whether `conv` in `body` is a channels-last depthwise conv (one input and one output channel a
// group) whose 16-bit X, a kernel input, has a multiple of kDepthwiseVector channels: a thread
// can then compute kDepthwiseVector neighbouring channels of one output position, each tap one
// 16-byte load of X (see the header).
bool can_vectorize_depthwise(const KernelBody& body, const Node& conv) {
  if (conv.op() != "conv" || !nn::is_channels_last_conv(conv)) return false;
  const nn::ConvGeometry g = nn::conv_geometry(conv);
  const Value* x = conv.operand(0);
  const DType dtype = x->type().dtype;
  return g.group == g.in_channels && g.out_channels == g.in_channels &&
         g.in_channels % kDepthwiseVector == 0 && (dtype == DType::kF16 || dtype == DType::kBF16) &&
         std::find(body.inputs.begin(), body.inputs.end(), x) != body.inputs.end();
}

// Whether the vectorized depthwise conv also reads its weights in vectors: W [C, k..., 1] of a
// 16-bit type, a kernel input, holds a thread's kDepthwiseVector channels' taps as
// kDepthwiseVector · taps neighbouring elements starting at a multiple of 16 bytes, so `taps`
// 16-byte loads bring them into registers (where the taps' loop is unrolled), instead of one
// 2-byte load a channel and tap: 72 loads for a 3 × 3 window, eight times its X loads.
bool vectorizes_depthwise_weights(const KernelBody& body, const Node& conv) {
  const Value* w = conv.operand(1);
  const DType dtype = w->type().dtype;
  return (dtype == DType::kF16 || dtype == DType::kBF16) &&
         num_elements(nn::conv_geometry(conv).kernel) <= kMaxUnrolledTaps &&
         std::find(body.inputs.begin(), body.inputs.end(), w) != body.inputs.end();
}

// Whether the columns tactic is offered for such a conv: 2-D, its weights in registers, at least
// kDepthwiseColumns output columns.
bool offers_columns(const KernelBody& body, const Node& conv) {
  const Shape& y = conv.result()->type().shape;
  return y.size() == 4 && y[2] >= kDepthwiseColumns && vectorizes_depthwise_weights(body, conv);
}

// The columns tactic's threads as the elements of [N, H', ⌈W' / kDepthwiseColumns⌉, C] of its
// output [N, H', W', C]: one a kDepthwiseVector of them.
Shape column_threads_shape(const Shape& y) {
  return {y[0], y[1], (y[2] + kDepthwiseColumns - 1) / kDepthwiseColumns, y[3]};
}

// The heuristic's order of such a conv's tactics: the one of the fewest threads that still
// leaves kMinDepthwiseThreads first; the columns tactic only for windows of at most
// kMaxHeuristicColumnTaps taps (measured on 3 × 3; a 5 × 5 window's weights take 100 registers
// before the columns' accumulators), else last.
std::vector<std::string> heuristic_order(const KernelBody& body, const Node& conv) {
  const int64_t vectors = conv.result()->type().num_elements() / kDepthwiseVector;
  const bool columns = offers_columns(body, conv);
  if (columns && vectors / kDepthwiseColumns >= kMinDepthwiseThreads &&
      num_elements(nn::conv_geometry(conv).kernel) <= kMaxHeuristicColumnTaps) {
    return {kColumnsTactic, kVectorTactic, kElementTactic};
  }
  std::vector<std::string> tactics = {kElementTactic, kVectorTactic};
  if (vectors >= kMinDepthwiseThreads) std::swap(tactics[0], tactics[1]);
  if (columns) tactics.push_back(kColumnsTactic);
  return tactics;
}

class DirectConvWriter {
 public:
  // `vectors`: whether a thread computes kDepthwiseVector channels (the conv then
  // can_vectorize_depthwise); `weight_vectors`: vectorizes_depthwise_weights's answer;
  // `columns`: of kDepthwiseColumns output columns (offers_columns then holds).
  DirectConvWriter(const KernelBody& body, const Node& conv, KernelSpec& spec,
                   const std::vector<std::string>& outputs, bool vectors, bool weight_vectors,
                   bool columns)
      : body_(body),
        conv_(conv),
        transpose_(conv.op() == "conv_transpose"),
        geometry_(transpose_ ? nn::conv_transpose_geometry(conv) : nn::conv_geometry(conv)),
        outputs_(outputs),
        code_(1),
        e_(code_, spec.params, grid_stride_index_type(body)),
        accumulator_(cuda_compute_type(conv.result()->type().dtype)),
        round_tf32_(conv.has_attr("tf32") && conv.int_attr("tf32") != 0),
        channels_last_(nn::is_channels_last_conv(conv)),
        vectors_(vectors),
        weight_vectors_(weight_vectors),
        columns_(columns) {}

  std::string write(int64_t count) {
    if (columns_) return write_depthwise_columns();
    if (vectors_) return write_depthwise_vectors(count);
    open_grid_stride_loop(e_, count);
    // Y is [N, M, D'...], or [N, D'..., M] channels-last.
    const Shape& y = conv_.result()->type().shape;
    const size_t first_spatial = channels_last_ ? 1 : 2;
    image_ = e_.coordinate("i", y, 0);
    out_channel_ = e_.coordinate("i", y, channels_last_ ? y.size() - 1 : 1);
    for (size_t d = 0; d < geometry_.kernel.size(); ++d) {
      out_position_.push_back(e_.coordinate("i", y, d + first_spatial));
    }
    const int64_t out_per_group = geometry_.out_channels / geometry_.group;
    group_ = geometry_.group == 1 ? "0"
             : out_per_group == 1
                 ? out_channel_
                 : e_.index_temp(fmt::format("{} / {}", out_channel_, out_per_group));
    code_.line(fmt::format("{} acc = 0;", accumulator_));
    const int64_t in_per_group = geometry_.in_channels / geometry_.group;
    e_.open_block(fmt::format("for (int c = 0; c < {}; ++c)", in_per_group));
    in_channel_ = in_per_group == 1 ? group_
                  : group_ == "0"   ? "c"
                                  : e_.index_temp(fmt::format("{} * {} + c", group_, in_per_group));
    weight_row_ =
        transpose_ ? e_.index_temp(fmt::format("{} * {} + {} % {}", in_channel_, out_per_group,
                                               out_channel_, out_per_group))
        : in_per_group == 1 ? out_channel_
                            : e_.index_temp(fmt::format("{} * {} + c", out_channel_, in_per_group));
    write_window(0, {}, {});
    e_.close_block();
    std::string result = "acc";
    if (conv_.operands().size() > 2) {
      result = e_.temp(accumulator_, "acc + " + e_.element(conv_.operand(2), out_channel_));
    }
    close_grid_stride_loop(e_, body_, conv_, result, outputs_);
    return code_.text();
  }

 private:
  // The vectorized depthwise kernel: index q strides over the output in vectors of
  // kDepthwiseVector channels, i0 = q · kDepthwiseVector their first element.
  std::string write_depthwise_vectors(int64_t count) {
    const Shape& y = conv_.result()->type().shape;
    declare_grid_stride(e_);
    const std::string& index = e_.index_type();
    e_.open_block(
        fmt::format("for ({} q = first; q < {}; q += stride)", index, count / kDepthwiseVector));
    code_.line(fmt::format("// {} channels a thread: X one 16-byte load a tap", kDepthwiseVector));
    code_.line(fmt::format("const {} i0 = q * {};", index, kDepthwiseVector));
    image_ = e_.coordinate("i0", y, 0);
    for (size_t d = 0; d < geometry_.kernel.size(); ++d) {
      out_position_.push_back(e_.coordinate("i0", y, d + 1));
    }
    out_channel_ = e_.coordinate("i0", y, y.size() - 1);
    code_.line(fmt::format("{} acc[{}] = {{}};", accumulator_, kDepthwiseVector));
    if (weight_vectors_) load_weight_vectors();
    write_window(0, {}, {});
    write_vector_results("i0", out_position_, "acc", "q");
    e_.close_block();
    return code_.text();
  }

  // The columns tactic's kernel (2-D): index q strides over vectors of kDepthwiseVector channels
  // of [N, H', ⌈W' / kDepthwiseColumns⌉, C], a thread computing kDepthwiseColumns neighbouring
  // output columns from x0 on. Each kernel row's input columns are loaded once, each into the
  // accumulators of every (column, tap) that reads it; the weights come from registers.
  std::string write_depthwise_columns() {
    const Shape& y = conv_.result()->type().shape;
    const Shape threads_shape = column_threads_shape(y);
    declare_grid_stride(e_);
    const std::string& index = e_.index_type();
    e_.open_block(fmt::format("for ({} q = first; q < {}; q += stride)", index,
                              num_elements(threads_shape) / kDepthwiseVector));
    code_.line(fmt::format("// {} channels of {} neighbouring output columns a thread",
                           kDepthwiseVector, kDepthwiseColumns));
    code_.line(fmt::format("const {} i0 = q * {};", index, kDepthwiseVector));
    image_ = e_.coordinate("i0", threads_shape, 0);
    const std::string row = e_.coordinate("i0", threads_shape, 1);
    const std::string x0 = e_.index_temp(
        fmt::format("{} * {}", e_.coordinate("i0", threads_shape, 2), kDepthwiseColumns));
    out_channel_ = e_.coordinate("i0", threads_shape, 3);
    code_.line(
        fmt::format("{} acc[{}][{}] = {{}};", accumulator_, kDepthwiseColumns, kDepthwiseVector));
    load_weight_vectors();
    const Value* x = conv_.operand(0);
    const Shape& x_shape = x->type().shape;
    const int64_t taps_wide = geometry_.kernel[1], taps = num_elements(geometry_.kernel);
    const int64_t stride = geometry_.strides[1], dilation = geometry_.dilations[1];
    const std::string first_column =
        e_.index_temp(fmt::format("{} * {} - {}", x0, stride, geometry_.pads_begin[1]));
    code_.line("#pragma unroll");
    e_.open_block(fmt::format("for (int k0 = 0; k0 < {}; ++k0)", geometry_.kernel[0]));
    const std::string input_row =
        e_.index_temp(fmt::format("{} * {} - {} + k0 * {}", row, geometry_.strides[0],
                                  geometry_.pads_begin[0], geometry_.dilations[0]));
    e_.open_block(fmt::format("if ({0} >= 0 && {0} < {1})", input_row, x_shape[1]));
    // The kernel row's weights widened once for the columns' multiply-adds.
    code_.line(fmt::format("{} w_row[{}][{}];", accumulator_, kDepthwiseVector, taps_wide));
    code_.line("#pragma unroll");
    e_.open_block(fmt::format("for (int j = 0; j < {}; ++j)", kDepthwiseVector));
    code_.line("#pragma unroll");
    e_.open_block(fmt::format("for (int k1 = 0; k1 < {}; ++k1)", taps_wide));
    const std::string w = e_.index_temp(fmt::format("j * {} + k0 * {} + k1", taps, taps_wide));
    code_.line(fmt::format("w_row[j][k1] = {};", widened(conv_.operand(1)->type().dtype,
                                                         fmt::format("wv[{0} / {1}].v[{0} % {1}]",
                                                                     w, kDepthwiseVector))));
    e_.close_block();
    e_.close_block();
    const std::string x_vector = vector_type(x->type().dtype, kDepthwiseVector);
    const int64_t span = (kDepthwiseColumns - 1) * stride + (taps_wide - 1) * dilation + 1;
    for (int64_t offset = 0; offset < span; ++offset) {
      // The (column, tap) pairs reading input column first_column + offset.
      std::vector<std::pair<int64_t, int64_t>> readers;
      for (int64_t column = 0; column < kDepthwiseColumns; ++column) {
        for (int64_t tap = 0; tap < taps_wide; ++tap) {
          if (column * stride + tap * dilation == offset) readers.emplace_back(column, tap);
        }
      }
      if (readers.empty()) continue;
      const std::string input_column = e_.index_temp(fmt::format("{} + {}", first_column, offset));
      e_.open_block(fmt::format("if ({0} >= 0 && {0} < {1})", input_column, x_shape[2]));
      const std::string at =
          e_.flat_index({image_, input_row, input_column, out_channel_}, x_shape);
      code_.line(fmt::format("const {0} xv = *reinterpret_cast<const {0}*>(&{1}[{2}]);", x_vector,
                             e_.params().read(x), at));
      code_.line("#pragma unroll");
      e_.open_block(fmt::format("for (int j = 0; j < {}; ++j)", kDepthwiseVector));
      code_.line(
          fmt::format("const {} xj = {};", accumulator_, widened(x->type().dtype, "xv.v[j]")));
      for (const auto& [column, tap] : readers) {
        code_.line(fmt::format("acc[{}][j] += xj * w_row[j][{}];", column, tap));
      }
      e_.close_block();
      e_.close_block();
    }
    e_.close_block();
    e_.close_block();
    code_.line("#pragma unroll");
    e_.open_block(fmt::format("for (int p = 0; p < {}; ++p)", kDepthwiseColumns));
    const std::string column = e_.index_temp(x0 + " + p");
    if (y[2] % kDepthwiseColumns != 0) {
      e_.open_block(fmt::format("if ({} < {})", column, y[2]));
    }
    const std::string first = e_.flat_index({image_, row, column, out_channel_}, y);
    write_vector_results(first, {row, column}, "acc[p]",
                         e_.index_temp(fmt::format("{} / {}", first, kDepthwiseVector)));
    if (y[2] % kDepthwiseColumns != 0) e_.close_block();
    e_.close_block();
    e_.close_block();
    return code_.text();
  }

  // The epilogue of a vectorized depthwise kernel's output vector: lane j of `acc` (its
  // accumulators) is the conv's element at flat index `first` + j, output position `position`,
  // channel out_channel_ + j; each body output's lanes are stored as vector `vector`.
  void write_vector_results(const std::string& first, const std::vector<std::string>& position,
                            const std::string& acc, const std::string& vector) {
    const Shape& y = conv_.result()->type().shape;
    declare_result_vectors(code_, body_.outputs, kDepthwiseVector);
    code_.line("#pragma unroll");
    e_.open_block(fmt::format("for (int j = 0; j < {}; ++j)", kDepthwiseVector));
    code_.line(fmt::format("const {} i = {} + j;", e_.index_type(), first));
    std::vector<std::string> coordinates = {image_};
    coordinates.insert(coordinates.end(), position.begin(), position.end());
    const std::string channel = e_.index_temp(out_channel_ + " + j");
    coordinates.push_back(channel);
    e_.set_coordinates("i", y, coordinates);
    std::string result = acc + "[j]";
    if (conv_.operands().size() > 2) {
      result = e_.temp(accumulator_, result + " + " + e_.element(conv_.operand(2), channel));
    }
    e_.bind(conv_.result(), "i", result);
    for (size_t k = 0; k < body_.outputs.size(); ++k) {
      code_.line(fmt::format("r{}.v[j] = {};", k, e_.stored(body_.outputs[k], "i")));
    }
    e_.close_block();
    store_result_vectors(code_, body_.outputs, outputs_, kDepthwiseVector, vector);
  }

  // vectorizes_depthwise_weights's registers: wv[t] holds elements 8t.. of the thread's channels'
  // taps, channel j's tap t at element j · taps + t.
  void load_weight_vectors() {
    const Value* w = conv_.operand(1);
    const int64_t taps = num_elements(geometry_.kernel);
    std::vector<std::string> first(w->type().shape.size(), "0");
    first[0] = out_channel_;
    const std::string w_vector = vector_type(w->type().dtype, kDepthwiseVector);
    code_.line(fmt::format("// W's {} taps of the {} channels: {} 16-byte loads", taps,
                           kDepthwiseVector, taps));
    code_.line(fmt::format("{} wv[{}];", w_vector, taps));
    const std::string at = e_.flat_index(first, w->type().shape);
    code_.line(fmt::format("const {0}* w_taps = reinterpret_cast<const {0}*>(&{1}[{2}]);", w_vector,
                           e_.params().read(w), at));
    code_.line("#pragma unroll");
    e_.open_block(fmt::format("for (int t = 0; t < {}; ++t)", taps));
    code_.line("wv[t] = w_taps[t];");
    e_.close_block();
  }

  // One tap of the vectorized depthwise conv at input position `inputs`: X's 16 bytes there,
  // each channel times its weight at `taps`.
  void write_vector_multiply_add(const std::vector<std::string>& inputs,
                                 const std::vector<std::string>& taps) {
    std::vector<std::string> x_coordinates = {image_};
    x_coordinates.insert(x_coordinates.end(), inputs.begin(), inputs.end());
    x_coordinates.push_back(out_channel_);
    const Value* x = conv_.operand(0);
    const std::string x_index = e_.flat_index(x_coordinates, x->type().shape);
    const std::string x_vector = vector_type(x->type().dtype, kDepthwiseVector);
    code_.line(fmt::format("const {0} xv = *reinterpret_cast<const {0}*>(&{1}[{2}]);", x_vector,
                           e_.params().read(x), x_index));
    code_.line("#pragma unroll");
    e_.open_block(fmt::format("for (int j = 0; j < {}; ++j)", kDepthwiseVector));
    const Value* weights = conv_.operand(1);
    std::string w;
    if (weight_vectors_) {
      // Element j · taps + tap of wv: constant once the loops are unrolled.
      std::vector<std::string> tap_coordinates = taps;
      tap_coordinates.push_back("0");
      const Shape tap_shape(weights->type().shape.begin() + 1, weights->type().shape.end());
      const std::string at = e_.index_temp(fmt::format("j * {} + {}", num_elements(tap_shape),
                                                       e_.flat_index(tap_coordinates, tap_shape)));
      w = widened(weights->type().dtype,
                  fmt::format("wv[{0} / {1}].v[{0} % {1}]", at, kDepthwiseVector));
    } else {
      std::vector<std::string> w_coordinates = {e_.index_temp(out_channel_ + " + j")};
      w_coordinates.insert(w_coordinates.end(), taps.begin(), taps.end());
      w_coordinates.push_back("0");
      w = e_.element(weights, e_.flat_index(w_coordinates, weights->type().shape));
    }
    code_.line(fmt::format("acc[j] += {} * {};", widened(x->type().dtype, "xv.v[j]"), w));
    e_.close_block();
  }

  // The loops over kernel offsets of spatial dims d and on; `inputs` and `taps` hold the input
  // position and kernel offset of the dims before d.
  void write_window(size_t d, std::vector<std::string> inputs, std::vector<std::string> taps) {
    if (d == geometry_.kernel.size()) {
      if (vectors_) {
        write_vector_multiply_add(inputs, taps);
      } else {
        write_multiply_add(inputs, taps);
      }
      return;
    }
    const std::string k = "k" + std::to_string(d);
    if (num_elements(geometry_.kernel) <= kMaxUnrolledTaps) code_.line("#pragma unroll");
    e_.open_block(fmt::format("for (int {0} = 0; {0} < {1}; ++{0})", k, geometry_.kernel[d]));
    const int64_t stride = geometry_.strides[d], dilation = geometry_.dilations[d];
    const int64_t pad = geometry_.pads_begin[d], extent = geometry_.in_spatial[d];
    std::string input;
    if (transpose_) {
      // o = i·stride − pad + k·dilation: i = (o + pad − k·dilation) / stride where it divides.
      const std::string shifted =
          e_.index_temp(fmt::format("{} + {} - {} * {}", out_position_[d], pad, k, dilation));
      input = e_.index_temp(stride == 1 ? shifted : fmt::format("{} / {}", shifted, stride));
      const std::string divides =
          stride == 1 ? "" : fmt::format(" && {} % {} == 0", shifted, stride);
      e_.open_block(fmt::format("if ({} >= 0{} && {} < {})", shifted, divides, input, extent));
    } else {
      input = e_.index_temp(
          fmt::format("{} * {} - {} + {} * {}", out_position_[d], stride, pad, k, dilation));
      e_.open_block(fmt::format("if ({0} >= 0 && {0} < {1})", input, extent));
    }
    inputs.push_back(input);
    taps.push_back(k);
    write_window(d + 1, inputs, taps);
    e_.close_block();
    e_.close_block();
  }

  void write_multiply_add(const std::vector<std::string>& inputs,
                          const std::vector<std::string>& taps) {
    std::string x_index, w_index;
    if (channels_last_) {
      // X [N, D..., C] at (image, inputs..., in_channel); W [M, k..., C/group] at (out_channel,
      // taps..., c).
      std::vector<std::string> x_coordinates = {image_};
      x_coordinates.insert(x_coordinates.end(), inputs.begin(), inputs.end());
      x_coordinates.push_back(in_channel_);
      x_index = e_.flat_index(x_coordinates, conv_.operand(0)->type().shape);
      std::vector<std::string> w_coordinates = {out_channel_};
      w_coordinates.insert(w_coordinates.end(), taps.begin(), taps.end());
      w_coordinates.push_back("c");
      w_index = e_.flat_index(w_coordinates, conv_.operand(1)->type().shape);
    } else {
      std::vector<std::string> x_coordinates = {image_, in_channel_};
      x_coordinates.insert(x_coordinates.end(), inputs.begin(), inputs.end());
      x_index = e_.flat_index(x_coordinates, conv_.operand(0)->type().shape);
      // W's flat index: its first two dims merged into weight_row_.
      Shape w_shape = conv_.operand(1)->type().shape;
      w_shape[1] *= w_shape[0];
      w_shape[0] = 1;
      std::vector<std::string> w_coordinates = {"0", weight_row_};
      w_coordinates.insert(w_coordinates.end(), taps.begin(), taps.end());
      w_index = e_.flat_index(w_coordinates, w_shape);
    }
    const std::string x = operand(e_.element(conv_.operand(0), x_index));
    const std::string w = operand(e_.element(conv_.operand(1), w_index));
    code_.line(fmt::format("acc += {} * {};", x, w));
  }

  std::string operand(const std::string& element) const {
    return round_tf32_ ? "kiln_round_to_tf32(" + element + ")" : element;
  }

  const KernelBody& body_;
  const Node& conv_;
  bool transpose_;
  nn::ConvGeometry geometry_;
  const std::vector<std::string>& outputs_;
  CodeWriter code_;
  ElementEmitter e_;
  std::string accumulator_;
  bool round_tf32_;
  bool channels_last_;
  const bool vectors_;         // write_depthwise_vectors's kernel
  const bool weight_vectors_;  // its weights in registers (load_weight_vectors)
  const bool columns_;         // write_depthwise_columns's kernel
  std::string image_, out_channel_, group_, in_channel_, weight_row_;
  std::vector<std::string> out_position_;
};

}  // namespace

bool is_direct_conv_body(const KernelBody& body) {
  const Node* conv = conv_anchor(body);
  return conv && is_direct(*conv);
}

std::vector<std::string> direct_conv_tactics(const KernelBody& body) {
  const Node* conv = conv_anchor(body);
  if (!conv || !can_vectorize_depthwise(body, *conv)) return {};
  return heuristic_order(body, *conv);
}

KernelSpec emit_direct_conv_kernel(const KernelBody& body, int tactic) {
  const Node* conv = conv_anchor(body);
  if (!conv) throw InternalError("emit_direct_conv_kernel: no conv in the body");
  const int64_t count = conv->result()->type().num_elements();
  KernelSpec spec;
  const std::vector<std::string> tactics = direct_conv_tactics(body);
  if (tactic < 0 || static_cast<size_t>(tactic) >= std::max<size_t>(tactics.size(), 1)) {
    throw InternalError(
        fmt::format("direct conv emitter: tactic {} of {}", tactic, tactics.size()));
  }
  const std::string chosen = tactics.empty() ? "" : tactics[static_cast<size_t>(tactic)];
  spec.tactic = chosen;
  const bool columns = chosen == kColumnsTactic;
  const bool vectors = chosen == kVectorTactic || columns;
  const bool weight_vectors = vectors && vectorizes_depthwise_weights(body, *conv);
  const int64_t threads =
      columns ? num_elements(column_threads_shape(conv->result()->type().shape)) / kDepthwiseVector
      : vectors ? count / kDepthwiseVector
                : count;
  const std::vector<std::string> outputs =
      begin_grid_stride_spec(spec, body, *conv, threads, count);
  if (vectors) {
    std::set<DType> dtypes = {conv->operand(0)->type().dtype};
    if (weight_vectors) dtypes.insert(conv->operand(1)->type().dtype);
    for (const Value* output : body.outputs) dtypes.insert(output->type().dtype);
    spec.definitions = vector_definitions(dtypes, kDepthwiseVector);
  }
  spec.body =
      DirectConvWriter(body, *conv, spec, outputs, vectors, weight_vectors, columns).write(count);
  return spec;
}

}  // namespace kiln::codegen
