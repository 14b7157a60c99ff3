// ONNX GridSample (opsets 16, 20, 22) -> kiln ops: X [N, C, spatial...] sampled at the grid's
// normalized coordinates [N, out..., k] (component 0 along the last spatial axis), each output
// the weighted sum of its taps, every tap a gather_elements from X flattened to [N, C, S]. As
// ONNX's reference (after PyTorch's grid_sampler) computes it, in f32:
//
//   denormalize   align_corners: (g + 1) / 2 · (d − 1); else ((g + 1) · d − 1) / 2
//   nearest       the coordinate rounded half to even
//   outside [lo, hi] (lo, hi = 0, d − 1 with align_corners, else −0.5, d − 0.5): border clamps
//                 the coordinate to [0, d − 1], reflection reflects it back between lo and hi
//   taps          nearest: the coordinate itself; linear: ⌊v⌋ and ⌊v⌋ + 1 weighted 1 − t and t
//                 (t = v − ⌊v⌋); cubic: ⌊v⌋ − 1 .. ⌊v⌋ + 2 weighted by Keys' cubic (a = −0.75);
//                 a tap's weight the product over the axes
//   tap index     zeros: outside [0, d − 1] reads 0 (its weight times 0, the gather's index
//                 clamped); border: clamped; reflection: reflected between lo and hi, then
//                 truncated
#include <cmath>

#include "frontend/converters/layout_converters.h"

namespace kiln::onnx_import {
namespace {

class GridSampler {
 public:
  explicit GridSampler(NodeImporter& node) : node_(node) {}

  std::vector<Value*> convert() {
    Value* x = node_.input(0);
    Value* grid = node_.input(1);
    const Shape& x_shape = x->type().shape;
    const Shape& grid_shape = grid->type().shape;
    const int64_t k = static_cast<int64_t>(x_shape.size()) - 2;
    if (k < 1) node_.fail("X must be [N, C, spatial...], with at least one spatial axis");
    if (static_cast<int64_t>(grid_shape.size()) != k + 2 || grid_shape[0] != x_shape[0] ||
        grid_shape.back() != k) {
      node_.fail("grid must be [N, out..., " + std::to_string(k) + "] for X [" +
                 shape_to_string(x_shape) + "], not [" + shape_to_string(grid_shape) + "]");
    }
    if (!is_float(x->type().dtype) || !is_float(grid->type().dtype)) {
      node_.fail("X and grid must hold floats");
    }
    read_attributes();
    const int64_t batch = x_shape[0], channels = x_shape[1];
    int64_t positions = 1, elements = 1;
    for (int64_t a = 0; a < k; ++a) positions *= grid_shape[static_cast<size_t>(a + 1)];
    for (int64_t a = 0; a < k; ++a) elements *= x_shape[static_cast<size_t>(a + 2)];
    Value* data = reshape(f32(x), {batch, channels, elements});
    Value* points = reshape(f32(grid), {batch, positions, k});

    // Per spatial axis a: its taps (index, weight; zeros-mode validity).
    std::vector<std::vector<Tap>> taps(static_cast<size_t>(k));
    for (int64_t a = 0; a < k; ++a) {
      const int64_t extent = x_shape[static_cast<size_t>(a + 2)];
      Value* g = reshape(node_.emit_slice(points, 2, k - 1 - a, k - a), {batch, positions});
      taps[static_cast<size_t>(a)] = axis_taps(coordinate(g, extent), extent);
    }
    // Every combination of the axes' taps, the last axis fastest.
    Value* sum = nullptr;
    std::vector<size_t> pick(static_cast<size_t>(k), 0);
    while (true) {
      Value* index = nullptr;
      Value* weight = nullptr;
      int64_t stride = 1;
      for (int64_t a = k - 1; a >= 0; --a) {
        const Tap& tap = taps[static_cast<size_t>(a)][pick[static_cast<size_t>(a)]];
        Value* term = stride == 1 ? tap.index : mul(tap.index, index_constant(stride));
        index = index ? add(index, term) : term;
        if (tap.weight) weight = weight ? mul(weight, tap.weight) : tap.weight;
        stride *= x_shape[static_cast<size_t>(a + 2)];
      }
      Value* spread = node_.emit1("expand", {reshape(index, {batch, 1, positions})},
                                  {{"shape", Shape{batch, channels, positions}}});
      Value* value = node_.emit1("gather_elements", {data, spread}, {{"axis", int64_t{2}}});
      if (weight) value = mul(value, reshape(weight, {batch, 1, positions}));
      sum = sum ? add(sum, value) : value;
      // The next combination.
      int64_t a = k - 1;
      while (a >= 0 && ++pick[static_cast<size_t>(a)] == taps[static_cast<size_t>(a)].size()) {
        pick[static_cast<size_t>(a--)] = 0;
      }
      if (a < 0) break;
    }
    Shape out{batch, channels};
    out.insert(out.end(), grid_shape.begin() + 1, grid_shape.end() - 1);
    Value* result = reshape(sum, out);
    if (x->type().dtype != DType::kF32) {
      result = node_.emit1("cast", {result}, {{"to", Attribute(x->type().dtype)}});
    }
    return {result};
  }

 private:
  struct Tap {
    Value* index = nullptr;  // int64 [N, P], within [0, extent)
    // f32 [N, P], 0 where zeros padding reads outside the axis (a mask multiplied in, so no
    // bool tensor is left between kernels); nullptr: 1.
    Value* weight = nullptr;
  };

  void read_attributes() {
    mode_ = node_.attr_string("mode", node_.opset() >= 20 ? "linear" : "bilinear");
    if (mode_ == "bilinear") mode_ = "linear";  // opset 16's names
    if (mode_ == "bicubic") mode_ = "cubic";
    if (mode_ != "linear" && mode_ != "nearest" && mode_ != "cubic") {
      node_.fail("mode '" + mode_ + "' is not linear, nearest or cubic");
    }
    padding_ = node_.attr_string("padding_mode", "zeros");
    if (padding_ != "zeros" && padding_ != "border" && padding_ != "reflection") {
      node_.fail("padding_mode '" + padding_ + "' is not zeros, border or reflection");
    }
    align_corners_ = node_.attr_int("align_corners", 0) != 0;
  }

  double low() const { return align_corners_ ? 0.0 : -0.5; }
  double high(int64_t extent) const {
    return align_corners_ ? static_cast<double>(extent) - 1 : static_cast<double>(extent) - 0.5;
  }

  // The pixel coordinate of normalized g along an axis of `extent`, rounded (nearest) and brought
  // inside by the padding mode.
  Value* coordinate(Value* g, int64_t extent) {
    const double d = static_cast<double>(extent);
    Value* v =
        align_corners_
            ? mul(add(g, scalar(1)), scalar((d - 1) / 2))
            : node_.emit1("div", {sub(mul(add(g, scalar(1)), scalar(d)), scalar(1)), scalar(2)});
    if (mode_ == "nearest") v = node_.emit1("round", {v});
    if (padding_ == "border") {
      Value* outside = node_.emit1("or", {node_.emit1("less", {v, scalar(low())}),
                                          node_.emit1("greater", {v, scalar(high(extent))})});
      v = node_.emit1("where", {outside, clip(v, 0, d - 1), v});
    } else if (padding_ == "reflection") {
      v = reflect(v, low(), high(extent));
    }
    return v;
  }

  std::vector<Tap> axis_taps(Value* v, int64_t extent) {
    if (mode_ == "nearest") return {tap_at(v, nullptr, extent)};
    Value* first = node_.emit1("floor", {v});
    Value* t = sub(v, first);
    if (mode_ == "linear") {
      return {tap_at(first, sub(scalar(1), t), extent), tap_at(add(first, scalar(1)), t, extent)};
    }
    // Keys' cubic with a = −0.75 at distances 1 + t, t, 1 − t, 2 − t.
    const double a = -0.75;
    const auto outer = [&](Value* s) {  // ((a·s − 5a)·s + 8a)·s − 4a, for 1 ≤ s ≤ 2
      return sub(mul(add(mul(sub(mul(s, scalar(a)), scalar(5 * a)), s), scalar(8 * a)), s),
                 scalar(4 * a));
    };
    const auto inner = [&](Value* s) {  // ((a + 2)·s − (a + 3))·s·s + 1, for 0 ≤ s ≤ 1
      return add(mul(mul(sub(mul(s, scalar(a + 2)), scalar(a + 3)), s), s), scalar(1));
    };
    Value* one_minus = sub(scalar(1), t);
    return {tap_at(sub(first, scalar(1)), outer(add(t, scalar(1))), extent),
            tap_at(first, inner(t), extent),
            tap_at(add(first, scalar(1)), inner(one_minus), extent),
            tap_at(add(first, scalar(2)), outer(add(one_minus, scalar(1))), extent)};
  }

  // The tap at float index i: its int64 index inside the axis by the padding mode.
  Tap tap_at(Value* i, Value* weight, int64_t extent) {
    const double last = static_cast<double>(extent) - 1;
    Tap tap;
    tap.weight = weight;
    if (padding_ == "zeros") {
      Value* inside = node_.emit1("and", {node_.emit1("greater_or_equal", {i, scalar(0)}),
                                          node_.emit1("less_or_equal", {i, scalar(last)})});
      Value* mask = node_.emit1("where", {inside, scalar(1), scalar(0)});
      tap.weight = weight ? mul(weight, mask) : mask;
    } else if (padding_ == "reflection") {
      i = reflect(i, low(), high(extent));
    }
    // Truncated toward zero as the reference's int(); clamped, so no gather leaves the axis.
    tap.index = node_.emit1("cast", {clip(i, 0, last)}, {{"to", Attribute(DType::kI64)}});
    return tap;
  }

  // v reflected back between lo and hi by the nearer border, as often as it takes (an axis of
  // one pixel with align_corners: lo = hi, everything reflects to lo).
  Value* reflect(Value* v, double lo, double hi) {
    const double range = hi - lo;
    Value* below = node_.emit1("less", {v, scalar(lo)});
    Value* above = node_.emit1("greater", {v, scalar(hi)});
    if (range <= 0) {
      return node_.emit1("where", {node_.emit1("or", {below, above}), scalar(lo), v});
    }
    Value* distance = node_.emit1("where", {below, sub(scalar(lo), v), sub(v, scalar(hi))});
    Value* turns = node_.emit1("floor", {node_.emit1("div", {distance, scalar(range)})});
    Value* rest = sub(distance, mul(turns, scalar(range)));
    Value* even = node_.emit1(
        "equal", {node_.emit1("mod", {turns, scalar(2)}, {{"fmod", int64_t{1}}}), scalar(0)});
    Value* from_low = add(scalar(lo), rest);
    Value* from_high = sub(scalar(hi), rest);
    Value* reflected_below = node_.emit1("where", {even, from_low, from_high});
    Value* reflected_above = node_.emit1("where", {even, from_high, from_low});
    return node_.emit1("where",
                       {below, reflected_below, node_.emit1("where", {above, reflected_above, v})});
  }

  Value* f32(Value* v) {
    return v->type().dtype == DType::kF32
               ? v
               : node_.emit1("cast", {v}, {{"to", Attribute(DType::kF32)}});
  }
  Value* scalar(double value) { return node_.scalar_constant(DType::kF32, value); }
  Value* index_constant(int64_t value) { return node_.constant(Tensor::scalar_i64(value)); }
  Value* clip(Value* v, double lo, double hi) {
    return node_.emit1("clip", {v}, {{"min", lo}, {"max", hi}});
  }
  Value* add(Value* a, Value* b) { return node_.emit1("add", {a, b}); }
  Value* sub(Value* a, Value* b) { return node_.emit1("sub", {a, b}); }
  Value* mul(Value* a, Value* b) { return node_.emit1("mul", {a, b}); }
  Value* reshape(Value* v, const Shape& shape) { return node_.emit_reshape(v, shape); }

  NodeImporter& node_;
  std::string mode_, padding_;
  bool align_corners_ = false;
};

std::vector<Value*> convert_grid_sample(NodeImporter& node) { return GridSampler(node).convert(); }

}  // namespace

void register_grid_sample_converters(ConverterTable& table) {
  table.add("GridSample", 16, convert_grid_sample);  // bilinear, nearest, bicubic; 2-D
  table.add("GridSample", 20, convert_grid_sample);  // linear, nearest, cubic; N-D
}

}  // namespace kiln::onnx_import
