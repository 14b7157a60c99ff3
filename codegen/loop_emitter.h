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
//
// Other bodies (injective ops, operands broadcast) whose outputs share a shape with a last axis
// of whole vectors are vectorized by lanes: thread j writes the 16-byte vector j of each output,
// computing the vector's coordinates once; lane k's element (flat index i = j·W + k, the last
// coordinate the vector's first plus k) comes from the element machinery, which reuses those
// coordinates, and buffers read at i itself come as vectors:
//
//   for (int j = first; j < N / W; j += stride) {
//     const int t0 = j % 224;  ...  vec_f16x8 r0;
//     for (int k = 0; k < 8; ++k) { const int i = j * 8 + k;  ...  r0.v[k] = ...; }
//     reinterpret_cast<vec_f16x8*>(out0)[j] = r0;
//   }
//
// By lanes, two more kinds of buffer come as whole vectors: a concat along the last axis whose
// operands each hold whole vectors along it (vector j lies in one operand, chosen once per
// vector: DenseNet's concat of its layers' outputs) and a buffer of one element per column (a
// channels-last per-channel scale or shift), at the vector's columns, each lane bound where an op
// of the outputs' shape broadcasts it at the lane's own index (a read through a transpose loads
// as before). Before, each lane chose its concat operand and read its scale element by element.
#pragma once

#include "codegen/kernel_body.h"
#include "codegen/kernel_spec.h"

namespace kiln::codegen {

// Throws UnsupportedError naming the op for a body op the loop emitter cannot compute.
KernelSpec emit_loop_kernel(const KernelBody& body);

}  // namespace kiln::codegen
