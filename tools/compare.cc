// Tolerance comparison of tensors.
#include "tools/compare.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace kiln::tools {

std::string Comparison::summary() const {
  if (!problem.empty()) return problem;
  std::string text = fmt::format("max abs {:.3g}, max rel {:.3g}, cosine {:.6f}", max_abs_error,
                                 max_rel_error, cosine);
  if (mismatches) {
    text += fmt::format(", {} elements out of tolerance (first at flat index {})", mismatches,
                        first_mismatch);
  }
  return text;
}

Tolerance tolerance_for_dtype(DType dtype, Tolerance tolerance) {
  const double two_ulps = dtype == DType::kF16 ? 0x1p-10 : dtype == DType::kBF16 ? 0x1p-7 : 0.0;
  return {std::max(tolerance.atol, two_ulps), std::max(tolerance.rtol, two_ulps)};
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
  double dot = 0.0, got_norm = 0.0, want_norm = 0.0;
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
      if (w != 0.0) result.max_rel_error = std::max(result.max_rel_error, error / std::abs(w));
      close = error <= tolerance.atol + tolerance.rtol * std::abs(w);
      dot += g * w;
      got_norm += g * g;
      want_norm += w * w;
    }
    if (!close) {
      if (result.first_mismatch < 0) result.first_mismatch = i;
      ++result.mismatches;
    }
  }
  if (got_norm > 0.0 && want_norm > 0.0) {
    result.cosine = dot / (std::sqrt(got_norm) * std::sqrt(want_norm));
  } else {
    result.cosine = got_norm == want_norm ? 1.0 : 0.0;
  }
  result.ok = result.mismatches == 0;
  return result;
}

}  // namespace kiln::tools
