// cum_sum and cum_prod kernels (ONNX CumSum, CumProd): one thread per line along the axis (outer
// × inner lines, so neighbouring threads take neighbouring inner positions) walks its `count`
// elements in order (or from the end with `reverse`), writing the running sum or product before
// (`exclusive`) or after taking in each element. Floats in f32 (f64 for f64), integers in 64 bits
// wrapping around, as the reference does; the input comes from the element machinery
// (codegen/element_emitter.h).
#pragma once

#include "codegen/kernel_body.h"
#include "codegen/kernel_spec.h"

namespace kiln::codegen {

// Whether `body` is a cum_sum or a cum_prod.
bool is_cum_sum_body(const KernelBody& body);

KernelSpec emit_cum_sum_kernel(const KernelBody& body);

}  // namespace kiln::codegen
