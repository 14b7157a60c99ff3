// resize (ONNX Resize) as an element expression: each output element is computed from the input
// elements it reads, exactly as the reference kernel (ir/ops/layout_resize_op.cc) computes it.
//
// The reference resizes one axis at a time in double, skipping axes it leaves as they are; an
// output element is therefore a nested sum over the resized axes (the first axis innermost):
// for each axis its source coordinate, taps (clamped indices) and weights come from the output
// coordinate alone, in double, with the same operations in the same order (products and sums by
// __dmul_rn / __dadd_rn, which NVRTC never contracts into a fused multiply-add), and
//   acc = 0; for each tap k: acc += weight[k] · (the next axis's sum, or the input element).
// tf_crop_and_resize's extrapolated positions give extrapolation_value for that axis's sum.
// Every mode (nearest with each nearest_mode, linear, cubic with cubic_coeff_a and
// exclude_outside, antialias for linear and cubic), every coordinate transformation and every
// dtype the op accepts is computed; the double sum is rounded once to the result's format, as
// the reference stores it (bf16 by way of a float rounded to odd), integers rounded half to
// even and saturated.
#pragma once

#include <string>

#include "codegen/element_emitter.h"
#include "codegen/kernel_body.h"

namespace kiln::codegen {

// The element of resize `node`'s result at flat `index`.
std::string resize_element(ElementEmitter& emitter, const Node& node, const std::string& index);

// Whether `body` holds a resize (its kernel is a loop kernel, the resize anchoring it).
bool is_resize_body(const KernelBody& body);

}  // namespace kiln::codegen
