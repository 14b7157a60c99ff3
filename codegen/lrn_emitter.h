// LRN kernels (ONNX LRN, alone or anchoring a fusion.reduction): one thread per output element
// sums the squares of X over its channel window [c − ⌊(size−1)/2⌋, c + ⌈(size−1)/2⌉] (clipped
// to the channels) and computes x / (bias + alpha / size · sum)^beta, in f32 (f64 for f64) as
// the reference does. X comes from the element machinery (codegen/element_emitter.h), so a
// fusion's prologue is computed as the window reads it; the result goes through the epilogue.
// Neighbouring threads take neighbouring spatial positions of one channel.
#pragma once

#include "codegen/kernel_body.h"
#include "codegen/kernel_spec.h"

namespace kiln::codegen {

// `lrn`: the body's LRN node.
KernelSpec emit_lrn_kernel(const KernelBody& body, const Node& lrn);

}  // namespace kiln::codegen
