// cum_sum kernels (ONNX CumSum): one thread per line along the axis (outer × inner lines, so
// neighbouring threads take neighbouring inner positions) walks its `count` elements in order
// (or from the end with `reverse`), writing the running sum before (`exclusive`) or after adding
// each element. Floats sum in f32 (f64 for f64), integers in 64 bits wrapping around, as the
// reference does; the input comes from the element machinery (codegen/element_emitter.h).
#pragma once

#include "codegen/kernel_body.h"
#include "codegen/kernel_spec.h"

namespace kiln::codegen {

// Whether `body` is a cum_sum.
bool is_cum_sum_body(const KernelBody& body);

KernelSpec emit_cum_sum_kernel(const KernelBody& body);

}  // namespace kiln::codegen
