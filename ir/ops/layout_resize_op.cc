// resize: ONNX Resize with the output size, per-axis scales and roi resolved at import. The
// kernel interpolates one axis at a time in double precision (the interpolation is separable),
// exactly as the ONNX reference implementation does.
#include <algorithm>
#include <cmath>

#include "ir/error.h"
#include "ir/op_registry.h"
#include "ir/ops/layout_ops.h"
#include "ir/ops/op_helpers.h"

namespace kiln {
namespace {

const std::vector<std::string> kModes = {"nearest", "linear", "cubic"};
const std::vector<std::string> kCoordinateModes = {"half_pixel",         "half_pixel_symmetric",
                                                   "pytorch_half_pixel", "align_corners",
                                                   "asymmetric",         "tf_crop_and_resize"};
const std::vector<std::string> kNearestModes = {"round_prefer_floor", "round_prefer_ceil", "floor",
                                                "ceil"};

void require_one_of(const Node& node, const std::string& attr,
                    const std::vector<std::string>& allowed) {
  const std::string& value = node.string_attr(attr);
  if (std::find(allowed.begin(), allowed.end(), value) != allowed.end()) return;
  std::string list;
  for (const std::string& name : allowed) list += (list.empty() ? "" : ", ") + name;
  throw InputError(attr + " '" + value + "' is not one of: " + list);
}

std::vector<TensorType> infer_resize(const Node& node) {
  const TensorType& in = operand_type(node, 0);
  require_one_of(node, "mode", kModes);
  require_one_of(node, "coordinate_transformation_mode", kCoordinateModes);
  require_one_of(node, "nearest_mode", kNearestModes);
  const std::vector<int64_t>& sizes = node.ints_attr("sizes");
  const size_t rank = in.shape.size();
  if (sizes.size() != rank || node.floats_attr("scales").size() != rank) {
    throw InputError("sizes and scales must have one entry per axis of " + type_to_string(in));
  }
  const size_t roi_size = node.floats_attr("roi").size();
  if (roi_size != 0 && roi_size != 2 * rank) {
    throw InputError("roi must be empty or have 2 entries per axis of " + type_to_string(in));
  }
  if (node.int_attr("antialias") != 0 && node.string_attr("mode") == "nearest") {
    throw InputError("antialias is not defined for nearest mode");
  }
  for (double value : node.floats_attr("roi")) {
    if (!std::isfinite(value)) throw InputError("roi values must be finite");
  }
  const bool antialias = node.int_attr("antialias") != 0;
  // The kernel resizes one axis at a time, so every intermediate is at most this large.
  Shape largest_intermediate = in.shape;
  for (size_t d = 0; d < rank; ++d) {
    const double scale = node.floats_attr("scales")[d];
    // Within [2^-64, 2^64] every source coordinate the kernel computes is finite.
    if (!(scale >= 0x1p-64 && scale <= 0x1p64)) {
      throw InputError("scales must lie in [2^-64, 2^64], got " + std::to_string(scale) +
                       " on axis " + std::to_string(d));
    }
    if (sizes[d] < 0 || (in.shape[d] == 0 && sizes[d] != 0)) {
      throw InputError("cannot resize axis " + std::to_string(d) + " of " + type_to_string(in) +
                       " to " + std::to_string(sizes[d]));
    }
    // Antialiased downsampling reads about 4 / scale taps per output element.
    if (antialias && scale < 1 &&
        static_cast<double>(sizes[d]) * (4 / scale + 4) > static_cast<double>(kMaxResultElements)) {
      throw InputError("antialias with scale " + std::to_string(scale) + " on axis " +
                       std::to_string(d) + " needs too many taps for " + std::to_string(sizes[d]) +
                       " outputs");
    }
    largest_intermediate[d] = std::max(in.shape[d], sizes[d]);
  }
  check_element_count(largest_intermediate, "an intermediate of resizing " + type_to_string(in));
  if (in.dtype == DType::kBool) throw InputError("operand 0 must be numeric, got bool");
  return {{in.dtype, sizes}};
}

// The interpolation of one axis: for each output index, the source indices and their weights.
struct Taps {
  std::vector<int64_t> index;
  std::vector<double> weight;
  bool extrapolated = false;
};

class AxisResampler {
 public:
  AxisResampler(const Node& node, int64_t in_width, int64_t out_width, double scale,
                double roi_start, double roi_end)
      : mode_(node.string_attr("mode")),
        coordinate_mode_(node.string_attr("coordinate_transformation_mode")),
        nearest_mode_(node.string_attr("nearest_mode")),
        cubic_a_(node.float_attr("cubic_coeff_a")),
        exclude_outside_(node.int_attr("exclude_outside") != 0),
        antialias_(node.int_attr("antialias") != 0),
        in_width_(in_width),
        out_width_(out_width),
        scale_(scale),
        roi_start_(roi_start),
        roi_end_(roi_end) {}

  Taps taps(int64_t out_index) const {
    Taps taps;
    // Far outside the input every tap clamps to the same edge; the limit keeps the integer
    // conversions below defined whatever the scale.
    const double limit = static_cast<double>(in_width_) + 0x1p32;
    const double x = std::clamp(source_coordinate(static_cast<double>(out_index)), -limit, limit);
    if (coordinate_mode_ == "tf_crop_and_resize" && (x < 0 || x > in_width_ - 1)) {
      taps.extrapolated = true;
      return taps;
    }
    const double x_floor = std::floor(x);
    const double frac = x - x_floor;
    // The ratio lies in (0, 1]: an exact coordinate counts as 1 past the pixel on its left.
    const double ratio = frac == 0 ? 1.0 : frac;
    taps.weight = coefficients(ratio);
    const int64_t n = static_cast<int64_t>(taps.weight.size());
    int64_t start = static_cast<int64_t>(x_floor);
    if (n % 2 == 0) {
      start += frac == 0 ? -(n / 2) : -(n / 2) + 1;
    } else {
      start += -((n - 1) / 2) + (frac <= 0.5 ? 0 : 1);
    }
    double sum = 0;
    for (int64_t k = 0; k < n; ++k) {
      const int64_t index = start + k;
      if (exclude_outside_ && (index < 0 || index >= in_width_)) taps.weight[k] = 0;
      sum += taps.weight[k];
      taps.index.push_back(std::clamp<int64_t>(index, 0, in_width_ - 1));
    }
    if (exclude_outside_ && sum != 0) {
      for (double& weight : taps.weight) weight /= sum;
    }
    return taps;
  }

 private:
  double source_coordinate(double y) const {
    const double out_width = scale_ * static_cast<double>(in_width_);
    if (coordinate_mode_ == "align_corners") {
      return out_width == 1 ? 0.0 : y * (in_width_ - 1) / (out_width - 1);
    }
    if (coordinate_mode_ == "asymmetric") return y / scale_;
    if (coordinate_mode_ == "tf_crop_and_resize") {
      const double span = (roi_end_ - roi_start_) * (in_width_ - 1);
      const double x = out_width == 1 ? span / 2 : y * span / (out_width - 1);
      return x + roi_start_ * (in_width_ - 1);
    }
    if (coordinate_mode_ == "pytorch_half_pixel") {
      return out_width == 1 ? -0.5 : (y + 0.5) / scale_ - 0.5;
    }
    if (coordinate_mode_ == "half_pixel_symmetric") {
      const double adjustment = static_cast<double>(out_width_) / out_width;
      const double offset = in_width_ / 2.0 * (1 - adjustment);
      return offset + (y + 0.5) / scale_ - 0.5;
    }
    return (y + 0.5) / scale_ - 0.5;  // half_pixel
  }

  std::vector<double> coefficients(double ratio) const {
    if (mode_ == "nearest") return nearest_coefficients(ratio);
    if (mode_ == "linear") return antialias_ ? linear_antialias(ratio) : linear(ratio);
    return antialias_ ? cubic_antialias(ratio) : cubic(ratio);
  }

  std::vector<double> nearest_coefficients(double ratio) const {
    if (ratio == 1.0) return {0, 1};
    bool take_ceil;
    if (nearest_mode_ == "round_prefer_floor") {
      take_ceil = ratio > 0.5;
    } else if (nearest_mode_ == "round_prefer_ceil") {
      take_ceil = ratio >= 0.5;
    } else {
      take_ceil = nearest_mode_ == "ceil";
    }
    return take_ceil ? std::vector<double>{0, 1} : std::vector<double>{1, 0};
  }

  static std::vector<double> linear(double ratio) { return {1 - ratio, ratio}; }

  std::vector<double> cubic(double ratio) const {
    const double a = cubic_a_;
    const double r1 = ratio + 1;
    const double q = 1 - ratio;
    const double q1 = q + 1;
    return {((a * r1 - 5 * a) * r1 + 8 * a) * r1 - 4 * a,
            ((a + 2) * ratio - (a + 3)) * ratio * ratio + 1, ((a + 2) * q - (a + 3)) * q * q + 1,
            ((a * q1 - 5 * a) * q1 + 8 * a) * q1 - 4 * a};
  }

  // Antialiasing widens the kernel by 1/scale when downsampling and normalizes the weights.
  std::vector<double> linear_antialias(double ratio) const {
    const double scale = std::min(scale_, 1.0);
    const int64_t start = static_cast<int64_t>(std::floor(-1 / scale)) + 1;
    const int64_t footprint = 2 - 2 * start;
    std::vector<double> weights;
    for (int64_t i = start; i < start + footprint; ++i) {
      weights.push_back(std::clamp(1 - std::abs((i - ratio) * scale), 0.0, 1.0));
    }
    return normalized(weights);
  }

  std::vector<double> cubic_antialias(double ratio) const {
    const double scale = std::min(scale_, 1.0);
    const double a = cubic_a_;
    const int64_t start = static_cast<int64_t>(std::floor(-2 / scale)) + 1;
    std::vector<double> weights;
    for (int64_t i = start; i < 2 - start; ++i) {
      const double x = std::abs(scale * (i - ratio));
      if (x <= 1) {
        weights.push_back(((a + 2) * x - (a + 3)) * x * x + 1);
      } else if (x < 2) {
        weights.push_back(((a * x - 5 * a) * x + 8 * a) * x - 4 * a);
      } else {
        weights.push_back(0);
      }
    }
    return normalized(weights);
  }

  static std::vector<double> normalized(std::vector<double> weights) {
    double sum = 0;
    for (double weight : weights) sum += weight;
    for (double& weight : weights) weight /= sum;
    return weights;
  }

  const std::string& mode_;
  const std::string& coordinate_mode_;
  const std::string& nearest_mode_;
  double cubic_a_;
  bool exclude_outside_;
  bool antialias_;
  int64_t in_width_;
  int64_t out_width_;
  double scale_;
  double roi_start_;
  double roi_end_;
};

// Resamples axis `axis` of `data` (shape `shape`) to `out_width`; updates `shape`.
std::vector<double> resample_axis(const std::vector<double>& data, Shape& shape, size_t axis,
                                  int64_t out_width, const AxisResampler& resampler,
                                  double extrapolation_value) {
  const int64_t outer = product(shape, 0, axis);
  const int64_t inner = product(shape, axis + 1, shape.size());
  const int64_t in_width = shape[axis];
  std::vector<Taps> taps;
  for (int64_t i = 0; i < out_width; ++i) taps.push_back(resampler.taps(i));
  std::vector<double> result(static_cast<size_t>(outer * out_width * inner), 0.0);
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i = 0; i < out_width; ++i) {
      double* dst = &result[(o * out_width + i) * inner];
      if (taps[i].extrapolated) {
        std::fill(dst, dst + inner, extrapolation_value);
        continue;
      }
      for (size_t k = 0; k < taps[i].index.size(); ++k) {
        const double weight = taps[i].weight[k];
        const double* src = &data[(o * in_width + taps[i].index[k]) * inner];
        for (int64_t j = 0; j < inner; ++j) dst[j] += weight * src[j];
      }
    }
  }
  shape[axis] = out_width;
  return result;
}

// Stores like numpy's saturating cast in the ONNX reference: integers round half to even and
// clamp to the dtype's range.
void store_saturated(Tensor& out, const std::vector<double>& values) {
  const DType dtype = out.dtype();
  double low = 0;
  double high = 0;
  switch (dtype) {
    case DType::kI8:
      low = -128, high = 127;
      break;
    case DType::kU8:
      low = 0, high = 255;
      break;
    case DType::kI32:
      low = -2147483648.0, high = 2147483647.0;
      break;
    case DType::kI64:
      low = -9223372036854775808.0, high = 9223372036854774784.0;
      break;
    default:
      for (size_t i = 0; i < values.size(); ++i) out.set_double(static_cast<int64_t>(i), values[i]);
      return;
  }
  for (size_t i = 0; i < values.size(); ++i) {
    const double rounded = std::clamp(std::nearbyint(values[i]), low, high);
    out.set_int(static_cast<int64_t>(i), static_cast<int64_t>(rounded));
  }
}

bool is_identity_axis(double scale, int64_t in_width, int64_t out_width,
                      const std::vector<double>& roi, size_t axis, size_t rank) {
  auto close = [](double a, double b) {
    return std::abs(a - b) <= 1e-9 * std::max(1.0, std::abs(b));
  };
  return close(scale, 1.0) && in_width == out_width &&
         (roi.empty() || (close(roi[axis], 0.0) && close(roi[axis + rank], 1.0)));
}

void run_resize(const Node& node, std::span<const Tensor* const> in, std::span<Tensor> out) {
  Shape shape = in[0]->shape();
  const size_t rank = shape.size();
  const std::vector<int64_t>& sizes = node.ints_attr("sizes");
  const std::vector<double>& scales = node.floats_attr("scales");
  const std::vector<double>& roi = node.floats_attr("roi");
  const double extrapolation_value = node.float_attr("extrapolation_value");
  std::vector<double> data = in[0]->to_doubles();
  for (size_t axis = 0; axis < rank; ++axis) {
    if (is_identity_axis(scales[axis], shape[axis], sizes[axis], roi, axis, rank)) continue;
    if (sizes[axis] == 0) {
      shape[axis] = 0;
      data.clear();
      continue;
    }
    const AxisResampler resampler(node, shape[axis], sizes[axis], scales[axis],
                                  roi.empty() ? 0.0 : roi[axis],
                                  roi.empty() ? 1.0 : roi[axis + rank]);
    data = resample_axis(data, shape, axis, sizes[axis], resampler, extrapolation_value);
  }
  store_saturated(out[0], data);
}

}  // namespace

void register_resize_op(OpRegistry& registry) {
  registry.add(
      {.name = "resize",
       .category = OpCategory::kOpaque,
       .attrs = {{"sizes", AttrKind::kInts, std::nullopt},
                 {"scales", AttrKind::kFloats, std::nullopt},
                 {"roi", AttrKind::kFloats, Attribute(std::vector<double>{})},
                 {"mode", AttrKind::kString, Attribute("nearest")},
                 {"coordinate_transformation_mode", AttrKind::kString, Attribute("half_pixel")},
                 {"nearest_mode", AttrKind::kString, Attribute("round_prefer_floor")},
                 {"cubic_coeff_a", AttrKind::kFloat, Attribute(-0.75)},
                 {"exclude_outside", AttrKind::kInt, Attribute(0)},
                 {"extrapolation_value", AttrKind::kFloat, Attribute(0.0)},
                 {"antialias", AttrKind::kInt, Attribute(0)}},
       .infer = infer_resize,
       .reference = run_resize});
}

}  // namespace kiln
