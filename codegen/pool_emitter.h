// Pooling kernels: max_pool, max_pool_with_indices and average_pool (1-D, 2-D, 3-D, ...), as
// single nodes and as the anchor of a fusion.reduction. One thread per output element in a
// grid-stride loop walks its window tap by tap, matching the reference kernels
// (ir/ops/nn_pool.cc): strides, dilations, explicit pads, ceil_mode (the output shape already
// holds it; taps past the input read nothing), count_include_pad (taps inside the explicitly
// padded input count); max_pool keeps the first tap and replaces it only by a greater one, so a
// NaN in the first tap wins and a later NaN does not; a window with no tap inside the input
// gives 0 (and index -1). The pooled input is read through the element machinery
// (codegen/element_emitter.h), so a fusion's prologue ops are computed per tap; the pool's
// result is an override there, so the fusion's epilogue ops read it at any index.
// A channels-last pool of a kernel input whose channels fill 16-byte vectors (8 of 16 bits, 4
// of 32) takes a thread per vector of channels of an output pixel instead: one vector load per
// tap, the max or sum per lane (in the compute type), one vector store per output.
#pragma once

#include "codegen/kernel_body.h"
#include "codegen/kernel_spec.h"

namespace kiln::codegen {

// Whether `body` is a pooling kernel (its anchor is a windowed pool).
bool is_pool_body(const KernelBody& body);

// Throws UnsupportedError when an output has not one element per pooled element.
KernelSpec emit_pool_kernel(const KernelBody& body);

}  // namespace kiln::codegen
