// Comparing a computed tensor with an expected one. Every comparison bounds the error, checks the
// norm and reports the cosine, so that no output passes by being merely parallel to the expected
// one (a result scaled by 1.5 has cosine 1):
//   error   element-wise |got − want| ≤ atol + rtol·|want| + max_rtol·max|want| (fp32, tf32,
//           integers; max_rtol is 0 but for whole models, whose long sums cancel); or, with
//           `relative_to_max` (16-bit precisions, whose rounding is relative to the values'
//           magnitude, not each element's), max |got − want| ≤ atol + rtol·max |want|
//   norm    | ‖got‖ − ‖want‖ | ≤ norm_rtol·‖want‖ + atol·√n
//   cosine  ≥ min_cosine where min_cosine > 0 (always reported)
// NaN matches NaN and infinities match exactly, in every mode; the norms and the cosine are over
// the elements finite in both.
#pragma once

#include <cstdint>
#include <string>

#include "ir/graph.h"
#include "ir/tensor.h"

namespace kiln::tools {

struct Tolerance {
  double atol = 1e-4;
  double rtol = 1e-3;
  bool relative_to_max = false;
  double max_rtol = 0.0;  // element-wise: a floor of max_rtol·max|want| on every element's bound
  double norm_rtol = 0.01;
  double min_cosine = 0.0;
};

struct Comparison {
  bool ok = true;
  std::string problem;     // a dtype or shape mismatch, when there is one
  int64_t mismatches = 0;  // elements out of the element-wise rule, or misplaced NaN/infinities
  int64_t first_mismatch = -1;  // flat index
  double first_got = 0.0, first_want = 0.0;  // the values there
  double max_abs_error = 0.0;
  double max_rel_error = 0.0;  // over elements whose expected value is not 0
  double max_abs_want = 0.0;
  double norm_ratio = 1.0;  // ‖got‖ / ‖want‖ (1 when both are 0)
  double cosine = 1.0;
  std::string failed;  // which rule failed: "error", "norm", "cosine" (joined), or ""

  // max |got − want| / max |want| (0 when want is all 0).
  double max_error_of_max() const;
  // "max abs 1.2e-06 (2.1e-07 of max |want|), max rel 3.4e-05, norm ratio 1.000002, cosine
  // 1.000000" plus what failed.
  std::string summary() const;
};

// `tolerance` raised, for f16 and bf16 results, to at least two units in the last place of the
// format (atol and rtol 2^-10 for f16, 2^-7 for bf16): 16-bit results computed in another order
// of operations may differ by a rounding step. Other dtypes keep it as it is.
Tolerance tolerance_for_dtype(DType dtype, Tolerance tolerance);

// How outputs computed at a precision ("fp32", "tf32", "fp16", "bf16") are judged against f32
// expectations (kiln test-onnx, the GPU node tests, kiln bench):
//   fp32   element-wise atol 1e-4, rtol 1e-3
//   tf32   element-wise atol 1e-3, rtol 1e-2 (TF32 keeps 10 of f32's 23 mantissa bits)
//   fp16   float outputs: max error ≤ 1e-3 + kHalfRtol·max|want|, cosine ≥ 0.999
//   bf16   float outputs: max error ≤ 1e-2 + kBFloatRtol·max|want|, cosine ≥ 0.999
// and in each the norm within 1%; element-wise rules raised by tolerance_for_dtype for 16-bit
// outputs. Non-float outputs keep fp32's element-wise rule.
Tolerance tolerance_for_precision(const std::string& precision, DType want_dtype);

// How a whole model's outputs computed at a precision are judged against its f32 run (kiln
// bench), where roundings compound over dozens of layers: fp32 element-wise as above with a floor
// of 1e-5·max|want| (a K-deep f32 sum whose terms cancel is off by about √K·2^-24 of its partial
// sums: 7e-4 on an element of 0.12 in a 4608-deep matmul whose largest output is 285); float
// outputs in tf32 and fp16 max error ≤ 1e-3 + 0.05·max|want|, cosine ≥ 0.999, the norm within
// 1%; in bf16 ≤ 1e-2 + 0.2·max|want|, cosine ≥ 0.99, the norm within 2%. These are the bars of
// the model tests (tests/models/run_model_test.py, SIXTEEN_BIT_BARS), calibrated on the dev
// models with random weights: tf32 and fp16 reach 0.021 of max |want|, bf16 0.111.
Tolerance tolerance_for_model(const std::string& precision, DType want_dtype);

// The precision a model's results are judged at: the coarser of `precision` and the model's own
// 16-bit floats (f16 or bf16 inputs, constants or results: an fp16 export, a cast to f16
// inside): fp32 → fp16 for a model holding f16, anything but bf16 → bf16 for one holding bf16.
// The CPU reference
// rounds each such value as it is stored, a fused kernel where it leaves the kernel, so fp32's
// bar would fail them for rounding alone.
std::string judged_precision(const std::string& precision, const Graph& graph);

Comparison compare_tensors(const Tensor& got, const Tensor& want, const Tolerance& tolerance);

}  // namespace kiln::tools
