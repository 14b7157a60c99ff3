// Comparing a computed tensor with an expected one: |got - want| <= atol + rtol * |want| per
// element (NaN matches NaN, infinities match exactly), with the max errors and cosine similarity.
#pragma once

#include <cstdint>
#include <string>

#include "ir/tensor.h"

namespace kiln::tools {

struct Tolerance {
  double atol = 1e-4;
  double rtol = 1e-3;
};

struct Comparison {
  bool ok = true;
  std::string problem;  // a dtype or shape mismatch, when there is one
  int64_t mismatches = 0;
  int64_t first_mismatch = -1;  // flat index
  double max_abs_error = 0.0;
  double max_rel_error = 0.0;
  double cosine = 1.0;

  // "max abs 1.2e-06, max rel 3.4e-05, cosine 1.000000" plus the mismatch count when failing.
  std::string summary() const;
};

// `tolerance` raised, for f16 and bf16 results, to at least two units in the last place of the
// format (atol and rtol 2^-10 for f16, 2^-7 for bf16): 16-bit results computed in another order
// of operations may differ by a rounding step. Other dtypes keep it as it is.
Tolerance tolerance_for_dtype(DType dtype, Tolerance tolerance);

Comparison compare_tensors(const Tensor& got, const Tensor& want, const Tolerance& tolerance);

}  // namespace kiln::tools
