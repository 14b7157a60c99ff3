// Loop kernels: fusion.loop, fusion.multi, single elementwise, broadcast and injective ops, and
// the copies lowering adds for graph outputs.
//
// One thread per output element, in a grid-stride loop; each thread computes every output of
// the body at its own flat index (the outputs of a loop or multi fusion all have as many
// elements), with the element machinery of codegen/element_emitter.h:
//
//   for (int i = first; i < N; i += stride) {
//     const float v0 = in0[i];  const float v1 = in1[i % 768];  ...  out0[i] = v5;
//   }
//
// A body of elementwise ops whose operands all have N elements (or are scalars) reads and
// writes 16 bytes at a time: each thread handles W = 16 / (widest element) neighbouring
// elements (at most 8) through aligned vector types, and a scalar loop finishes the last
// N % W. Buffers are 256-byte aligned (runtime/program.h), so every vector access is aligned.
#pragma once

#include "codegen/kernel_body.h"
#include "codegen/kernel_spec.h"

namespace kiln::codegen {

// Throws UnsupportedError naming the op for a body op the loop emitter cannot compute.
KernelSpec emit_loop_kernel(const KernelBody& body);

}  // namespace kiln::codegen
