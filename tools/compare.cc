// Tolerance comparison of tensors (see the header).
#include "tools/compare.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace kiln::tools {
namespace {

// 16-bit precisions: the bound on max |got − want| relative to max |want|, a few units of the
// format's precision (f16 keeps 11 significant bits, bf16 8) for the roundings a computation
// makes on the way, calibrated on the ONNX node tests and the dev models (docs/MODELS.md).
constexpr double kHalfRtol = 8 * 0x1p-11;
constexpr double kBFloatRtol = 8 * 0x1p-8;

}  // namespace

double Comparison::max_error_of_max() const {
  return max_abs_want > 0.0 ? max_abs_error / max_abs_want : 0.0;
}

std::string Comparison::summary() const {
  if (!problem.empty()) return problem;
  std::string text = fmt::format(
      "max abs {:.3g} ({:.3g} of max |want|), max rel {:.3g}, norm ratio {:.6f}, cosine {:.6f}",
      max_abs_error, max_error_of_max(), max_rel_error, norm_ratio, cosine);
  if (mismatches) {
    text += fmt::format(
        ", {} elements out of tolerance (first at flat index {}: got {:.6g}, want "
        "{:.6g})",
        mismatches, first_mismatch, first_got, first_want);
  }
  if (!failed.empty()) text += "; failed: " + failed;
  return text;
}

Tolerance tolerance_for_dtype(DType dtype, Tolerance tolerance) {
  const double two_ulps = dtype == DType::kF16 ? 0x1p-10 : dtype == DType::kBF16 ? 0x1p-7 : 0.0;
  tolerance.atol = std::max(tolerance.atol, two_ulps);
  tolerance.rtol = std::max(tolerance.rtol, two_ulps);
  return tolerance;
}

Tolerance tolerance_for_precision(const std::string& precision, DType want_dtype) {
  Tolerance tolerance;
  if (precision == "tf32") {
    tolerance.atol = 1e-3;
    tolerance.rtol = 1e-2;
  }
  const bool half = precision == "fp16" || precision == "bf16";
  if (half && is_float(want_dtype)) {
    tolerance.relative_to_max = true;
    tolerance.atol = precision == "fp16" ? 1e-3 : 1e-2;
    tolerance.rtol = precision == "fp16" ? kHalfRtol : kBFloatRtol;
    tolerance.min_cosine = 0.999;
    return tolerance;
  }
  return tolerance_for_dtype(want_dtype, tolerance);
}

Tolerance tolerance_for_model(const std::string& precision, DType want_dtype) {
  Tolerance tolerance;
  if (!is_float(want_dtype)) return tolerance;
  if (precision == "fp32") {
    tolerance.max_rtol = 1e-5;
    return tolerance;
  }
  tolerance.relative_to_max = true;
  const bool bf16 = precision == "bf16";
  tolerance.atol = bf16 ? 1e-2 : 1e-3;
  tolerance.rtol = bf16 ? 0.2 : 0.05;
  tolerance.norm_rtol = bf16 ? 0.02 : 0.01;
  tolerance.min_cosine = bf16 ? 0.99 : 0.999;
  return tolerance;
}

std::string judged_precision(const std::string& precision, const Graph& graph) {
  if (precision == "bf16") return precision;
  bool f16 = false;
  bool bf16 = false;
  const auto note = [&](const Value* value) {
    f16 = f16 || value->type().dtype == DType::kF16;
    bf16 = bf16 || value->type().dtype == DType::kBF16;
  };
  for (const Value* value : graph.inputs()) note(value);
  for (const Value* value : graph.constants()) note(value);
  for (const Node* node : graph.nodes()) {
    for (const Value* result : node->results()) note(result);
  }
  if (bf16) return "bf16";
  return f16 && precision == "fp32" ? "fp16" : precision;
}

Comparison compare_tensors(const Tensor& got, const Tensor& want, const Tolerance& tolerance) {
  Comparison result;
  // bf16 outputs are stored as f32 .npy files, so an f32 expectation may judge a bf16 result.
  const bool bf16_as_f32 = got.dtype() == DType::kBF16 && want.dtype() == DType::kF32;
  if (got.dtype() != want.dtype() && !bf16_as_f32) {
    result.ok = false;
    result.problem = "dtype mismatch: got " + std::string(dtype_name(got.dtype())) + ", expected " +
                     std::string(dtype_name(want.dtype()));
    return result;
  }
  if (got.shape() != want.shape()) {
    result.ok = false;
    result.problem = "shape mismatch: got [" + shape_to_string(got.shape()) + "], expected [" +
                     shape_to_string(want.shape()) + "]";
    return result;
  }
  double largest_want = 0.0;  // for the element-wise floor of max_rtol
  for (int64_t i = 0; i < want.num_elements() && tolerance.max_rtol > 0.0; ++i) {
    const double w = want.get_double(i);
    if (std::isfinite(w)) largest_want = std::max(largest_want, std::abs(w));
  }
  const double floor = tolerance.atol + tolerance.max_rtol * largest_want;
  double dot = 0.0, got_norm = 0.0, want_norm = 0.0;
  int64_t finite = 0;
  for (int64_t i = 0; i < got.num_elements(); ++i) {
    const double g = got.get_double(i);
    const double w = want.get_double(i);
    bool close;
    if (std::isnan(w) || std::isnan(g)) {
      close = std::isnan(w) && std::isnan(g);
    } else if (std::isinf(w) || std::isinf(g)) {
      close = g == w;
    } else {
      const double error = std::abs(g - w);
      result.max_abs_error = std::max(result.max_abs_error, error);
      result.max_abs_want = std::max(result.max_abs_want, std::abs(w));
      if (w != 0.0) result.max_rel_error = std::max(result.max_rel_error, error / std::abs(w));
      close = tolerance.relative_to_max || error <= floor + tolerance.rtol * std::abs(w);
      dot += g * w;
      got_norm += g * g;
      want_norm += w * w;
      ++finite;
    }
    if (!close) {
      if (result.first_mismatch < 0) {
        result.first_mismatch = i;
        result.first_got = g;
        result.first_want = w;
      }
      ++result.mismatches;
    }
  }
  got_norm = std::sqrt(got_norm);
  want_norm = std::sqrt(want_norm);
  if (got_norm > 0.0 && want_norm > 0.0) {
    result.cosine = dot / (got_norm * want_norm);
    result.norm_ratio = got_norm / want_norm;
  } else {
    result.cosine = got_norm == want_norm ? 1.0 : 0.0;
    result.norm_ratio = got_norm == want_norm ? 1.0 : want_norm > 0.0 ? 0.0 : HUGE_VAL;
  }
  const auto fail = [&result](const char* rule) {
    result.failed += (result.failed.empty() ? "" : ", ") + std::string(rule);
  };
  const bool max_error_ok =
      !tolerance.relative_to_max ||
      result.max_abs_error <= tolerance.atol + tolerance.rtol * result.max_abs_want;
  if (result.mismatches || !max_error_ok) fail("error");
  const double norm_slack =
      tolerance.norm_rtol * want_norm + tolerance.atol * std::sqrt(static_cast<double>(finite));
  if (std::abs(got_norm - want_norm) > norm_slack) fail("norm");
  if (tolerance.min_cosine > 0.0 && result.cosine < tolerance.min_cosine) fail("cosine");
  result.ok = result.failed.empty();
  return result;
}

}  // namespace kiln::tools
