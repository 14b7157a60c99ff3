// scatter_elements and scatter_nd kernels (ONNX ScatterElements, ScatterND): one thread per
// output element starts from its data element and applies, in the reference's order (the
// order of the indices), every update that lands on it: the last one for reduction `none`
// (duplicate indices: the last write wins, as in the reference), else combined by add, mul,
// max or min. No two threads write one element, so the kernel needs no atomics and its result
// does not depend on the schedule.
//
//   scatter_elements  output element c (coordinates) takes the updates u at (c with axis j),
//                     j = 0 .. the indices' axis size, where indices at that position resolve to
//                     c's axis coordinate (only where c lies within the indices' other sizes)
//   scatter_nd        output element c, its index tuple prefix p (the first `depth` coordinates)
//                     and the rest r, takes updates[t, r] for every tuple t (in order) that
//                     resolves to p
//
// Each thread scans every update that could land on it: a scatter_elements line along the axis,
// or every index tuple of a scatter_nd. Negative indices count from the end; out of range ones
// clamp (the reference rejects them). Floats combine in their compute type (f32 for 16-bit
// values, which rounds as the reference's f64 then the store do), integers in 64 bits (sums and
// products wrapping around as the reference's do); max and min keep the element unless the update
// compares greater (less), as std::max/std::min do, so a NaN update never replaces an element.
#pragma once

#include "codegen/kernel_body.h"
#include "codegen/kernel_spec.h"

namespace kiln::codegen {

// Whether `body` is a scatter_elements or a scatter_nd.
bool is_scatter_body(const KernelBody& body);

KernelSpec emit_scatter_kernel(const KernelBody& body);

}  // namespace kiln::codegen
