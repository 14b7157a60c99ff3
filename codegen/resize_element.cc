// resize as an element expression (see the header). Each function mirrors the reference's
// AxisResampler (ir/ops/layout_resize_op.cc) operation for operation; constants the reference
// computes from attributes alone are computed here, in double, and written as exact literals.
#include "codegen/resize_element.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "codegen/cuda_expr.h"
#include "codegen/double_store.h"
#include "ir/dtype.h"

namespace kiln::codegen {
namespace {

std::string lit(double value) { return cuda_literal(value, DType::kF64); }
std::string mul(const std::string& a, const std::string& b) {
  return "__dmul_rn(" + a + ", " + b + ")";
}
std::string add(const std::string& a, const std::string& b) {
  return "__dadd_rn(" + a + ", " + b + ")";
}
std::string sub(const std::string& a, const std::string& b) {
  return "__dsub_rn(" + a + ", " + b + ")";
}

// One resized axis, with what its taps depend on.
struct Axis {
  size_t axis;
  int64_t in;
  int64_t out;
  double scale;
  double roi_start;
  double roi_end;
};

// An axis's taps as emitted variables: `count` weights in the double array `weights`, the
// unclamped index of the first tap (long long), and a bool saying the position extrapolates
// ("" when it never does).
struct AxisTaps {
  std::string weights;
  std::string start;
  int64_t count;
  std::string extrapolated;
};

// The reference's identity test: such an axis is copied, not resampled.
bool is_identity_axis(const Axis& a, const std::vector<double>& roi, size_t rank) {
  const auto close = [](double x, double y) {
    return std::abs(x - y) <= 1e-9 * std::max(1.0, std::abs(y));
  };
  return close(a.scale, 1.0) && a.in == a.out &&
         (roi.empty() || (close(roi[a.axis], 0.0) && close(roi[a.axis + rank], 1.0)));
}

// The source coordinate of output coordinate `y` (a double variable).
std::string source_coordinate(const Node& node, const Axis& a, const std::string& y) {
  const std::string& mode = node.string_attr("coordinate_transformation_mode");
  const double out_width = a.scale * static_cast<double>(a.in);
  const std::string in_minus_1 = lit(static_cast<double>(a.in - 1));
  const std::string half_pixel = sub(add(y, "0.5") + " / " + lit(a.scale), "0.5");
  if (mode == "align_corners") {
    return out_width == 1 ? "0.0" : mul(y, in_minus_1) + " / " + lit(out_width - 1);
  }
  if (mode == "asymmetric") return y + " / " + lit(a.scale);
  if (mode == "tf_crop_and_resize") {
    const double span = (a.roi_end - a.roi_start) * static_cast<double>(a.in - 1);
    const std::string x =
        out_width == 1 ? lit(span / 2) : mul(y, lit(span)) + " / " + lit(out_width - 1);
    return add(x, lit(a.roi_start * static_cast<double>(a.in - 1)));
  }
  if (mode == "pytorch_half_pixel") return out_width == 1 ? "(-0.5)" : half_pixel;
  if (mode == "half_pixel_symmetric") {
    const double adjustment = static_cast<double>(a.out) / out_width;
    const double offset = static_cast<double>(a.in) / 2.0 * (1 - adjustment);
    return sub(add(lit(offset), add(y, "0.5") + " / " + lit(a.scale)), "0.5");
  }
  return half_pixel;
}

// Keys' cubic convolution weight of a distance x in [0, 1] and in [1, 2].
std::string cubic_near(double a, const std::string& x) {
  return add(mul(mul(sub(mul(lit(a + 2), x), lit(a + 3)), x), x), "1.0");
}
std::string cubic_far(double a, const std::string& x) {
  return sub(mul(add(mul(sub(mul(lit(a), x), lit(5 * a)), x), lit(8 * a)), x), lit(4 * a));
}

// First tap offset of the antialiased kernels, relative to the pixel on the ratio's left.
int64_t antialias_start(const Node& node, double scale) {
  const double reach = node.string_attr("mode") == "linear" ? 1 : 2;
  return static_cast<int64_t>(std::floor(-reach / std::min(scale, 1.0))) + 1;
}

int64_t tap_count(const Node& node, double scale) {
  if (node.int_attr("antialias") != 0) return 2 - 2 * antialias_start(node, scale);
  return node.string_attr("mode") == "cubic" ? 4 : 2;
}

// Fills `w` (declared, `count` doubles) for the ratio in (0, 1].
void emit_weights(ElementEmitter& e, const Node& node, const Axis& a, const std::string& w,
                  int64_t count, const std::string& ratio) {
  CodeWriter& code = e.code();
  const std::string& mode = node.string_attr("mode");
  const double cubic_a = node.float_attr("cubic_coeff_a");
  if (node.int_attr("antialias") != 0) {
    const double scale = std::min(a.scale, 1.0);
    const std::string sum = e.fresh_name('s');
    const std::string k = e.fresh_name('k');
    const std::string wk = w + "[" + k + "]";
    code.line("double " + sum + " = 0.0;");
    e.open_block(fmt::format("for (int {0} = 0; {0} < {1}; ++{0})", k, count));
    const std::string d = e.temp(
        "double", sub(fmt::format("(double)({} + {})", antialias_start(node, a.scale), k), ratio));
    if (mode == "linear") {
      code.line(fmt::format("{} = fmin(fmax({}, 0.0), 1.0);", wk,
                            sub("1.0", "fabs(" + mul(d, lit(scale)) + ")")));
    } else {
      const std::string x = e.temp("double", "fabs(" + mul(lit(scale), d) + ")");
      code.line(fmt::format("{} = {} <= 1.0 ? {} : {} < 2.0 ? {} : 0.0;", wk, x,
                            cubic_near(cubic_a, x), x, cubic_far(cubic_a, x)));
    }
    code.line(sum + " = " + add(sum, wk) + ";");
    e.close_block();
    code.line(
        fmt::format("for (int {0} = 0; {0} < {1}; ++{0}) {2} = {2} / {3};", k, count, wk, sum));
    return;
  }
  if (mode == "cubic") {
    const std::string r1 = e.temp("double", add(ratio, "1.0"));
    const std::string q = e.temp("double", sub("1.0", ratio));
    const std::string q1 = e.temp("double", add(q, "1.0"));
    code.line(fmt::format("{}[0] = {};", w, cubic_far(cubic_a, r1)));
    code.line(fmt::format("{}[1] = {};", w, cubic_near(cubic_a, ratio)));
    code.line(fmt::format("{}[2] = {};", w, cubic_near(cubic_a, q)));
    code.line(fmt::format("{}[3] = {};", w, cubic_far(cubic_a, q1)));
    return;
  }
  if (mode == "linear") {
    code.line(fmt::format("{}[0] = {};", w, sub("1.0", ratio)));
    code.line(fmt::format("{}[1] = {};", w, ratio));
    return;
  }
  const std::string& nearest_mode = node.string_attr("nearest_mode");
  std::string up = ratio + " == 1.0";
  if (nearest_mode == "round_prefer_floor") up += " || " + ratio + " > 0.5";
  if (nearest_mode == "round_prefer_ceil") up += " || " + ratio + " >= 0.5";
  if (nearest_mode == "ceil") up = "true";
  const std::string take_ceil = e.temp("bool", up);
  code.line(fmt::format("{}[0] = {} ? 0.0 : 1.0;", w, take_ceil));
  code.line(fmt::format("{}[1] = {} ? 1.0 : 0.0;", w, take_ceil));
}

// exclude_outside: weights of taps outside the input become 0, the rest renormalized.
void emit_exclude_outside(ElementEmitter& e, const Axis& a, const AxisTaps& taps) {
  CodeWriter& code = e.code();
  const std::string sum = e.fresh_name('s');
  const std::string k = e.fresh_name('k');
  const std::string wk = taps.weights + "[" + k + "]";
  code.line("double " + sum + " = 0.0;");
  e.open_block(fmt::format("for (int {0} = 0; {0} < {1}; ++{0})", k, taps.count));
  code.line(
      fmt::format("if ({0} + {1} < 0 || {0} + {1} >= {2}) {3} = 0.0;", taps.start, k, a.in, wk));
  code.line(sum + " = " + add(sum, wk) + ";");
  e.close_block();
  code.line(fmt::format("if ({0} != 0.0) for (int {1} = 0; {1} < {2}; ++{1}) {3} = {3} / {0};", sum,
                        k, taps.count, wk));
}

AxisTaps emit_taps(ElementEmitter& e, const Node& node, const Axis& a,
                   const std::string& coordinate) {
  CodeWriter& code = e.code();
  const std::string y = e.temp("double", "(double)" + coordinate);
  const std::string limit = lit(static_cast<double>(a.in) + 0x1p32);
  const std::string x = e.temp("double", fmt::format("fmin(fmax({}, -{}), {})",
                                                     source_coordinate(node, a, y), limit, limit));
  AxisTaps taps;
  taps.count = tap_count(node, a.scale);
  if (node.string_attr("coordinate_transformation_mode") == "tf_crop_and_resize") {
    taps.extrapolated = e.temp(
        "bool", fmt::format("{} < 0.0 || {} > {}", x, x, lit(static_cast<double>(a.in - 1))));
  }
  const std::string floor_x = e.temp("double", "floor(" + x + ")");
  const std::string frac = e.temp("double", x + " - " + floor_x);
  const std::string ratio = e.temp("double", frac + " == 0.0 ? 1.0 : " + frac);
  taps.weights = e.fresh_name('w');
  code.line(fmt::format("double {}[{}];", taps.weights, taps.count));
  emit_weights(e, node, a, taps.weights, taps.count, ratio);
  const int64_t half = taps.count / 2;
  taps.start = e.fresh_name('p');
  code.line(fmt::format("const long long {} = (long long){} + ({} == 0.0 ? {} : {});", taps.start,
                        floor_x, frac, -half, 1 - half));
  if (node.int_attr("exclude_outside") != 0) emit_exclude_outside(e, a, taps);
  return taps;
}

// The sum over the taps of axes[0..level] at the input coordinates `source` (the coordinates
// of the axes above `level` already chosen).
std::string emit_sum(ElementEmitter& e, const Node& node, const std::vector<Axis>& axes,
                     const std::vector<AxisTaps>& taps, size_t level,
                     std::vector<std::string>& source) {
  CodeWriter& code = e.code();
  const Axis& a = axes[level];
  const AxisTaps& t = taps[level];
  const std::string acc = e.fresh_name('v');
  code.line("double " + acc + " = 0.0;");
  if (!t.extrapolated.empty()) {
    e.open_block("if (" + t.extrapolated + ")");
    code.line(acc + " = " + lit(node.float_attr("extrapolation_value")) + ";");
    e.reopen_block("else");
  }
  const std::string k = e.fresh_name('k');
  e.open_block(fmt::format("for (int {0} = 0; {0} < {1}; ++{0})", k, t.count));
  const std::string p = e.temp("long long", t.start + " + " + k);
  source[a.axis] = e.index_temp(fmt::format("{0} < 0 ? 0 : {0} > {1} ? {1} : {0}", p, a.in - 1));
  const Value* input = node.operand(0);
  const std::string inner =
      level == 0 ? "(double)" + e.element(input, e.flat_index(source, input->type().shape))
                 : emit_sum(e, node, axes, taps, level - 1, source);
  code.line(acc + " = " + add(acc, mul(t.weights + "[" + k + "]", inner)) + ";");
  e.close_block();
  if (!t.extrapolated.empty()) e.close_block();
  return acc;
}

}  // namespace

std::string resize_element(ElementEmitter& e, const Node& node, const std::string& index) {
  const Shape& in = node.operand(0)->type().shape;
  const Shape& out = node.result(0)->type().shape;
  const DType dtype = node.result(0)->type().dtype;
  const std::vector<double>& scales = node.floats_attr("scales");
  const std::vector<double>& roi = node.floats_attr("roi");
  std::vector<Axis> axes;
  std::vector<std::string> source;
  for (size_t d = 0; d < in.size(); ++d) {
    const Axis a{d,
                 in[d],
                 out[d],
                 scales[d],
                 roi.empty() ? 0.0 : roi[d],
                 roi.empty() ? 1.0 : roi[d + in.size()]};
    source.push_back(e.coordinate(index, out, d));
    if (!is_identity_axis(a, roi, in.size())) axes.push_back(a);
  }
  // An empty result has no element to compute; an unresized one goes through double too.
  if (num_elements(out) == 0) return cuda_literal(0, dtype);
  if (axes.empty())
    return stored_from_double(e, dtype, "(double)" + e.element(node.operand(0), index));
  std::vector<AxisTaps> taps;
  for (const Axis& a : axes) taps.push_back(emit_taps(e, node, a, source[a.axis]));
  return stored_from_double(e, dtype, emit_sum(e, node, axes, taps, axes.size() - 1, source));
}

bool is_resize_body(const KernelBody& body) { return first_node_of(body, {"resize"}) != nullptr; }

}  // namespace kiln::codegen
