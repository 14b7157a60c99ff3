// einsum kernels (ONNX Einsum): one thread per output element walks the summed labels in nested
// loops (the last label innermost, the reference's order) and adds the product of the operands'
// elements at those labels; an operand's flat index is its labels' coordinates times its
// strides (summed over a repeated label: a diagonal; none for a size-1 dim, broadcast). Floats
// multiply and sum in double and are rounded once, when stored, as the reference does; integers
// in 64 bits wrapping around. The label plan is the reference's (ir/ops/einsum_plan.h).
//
// A direct kernel: a thread's work is the product of the summed labels' sizes, with no tiling or
// tensor cores, so a large contraction is slow. The einsum-to-matmul pass rewrites most einsums
// into transposes, reshapes, reductions and matmuls; this kernel takes the ones it leaves
// (diagonals, three or more operands, f64 and integer products; docs/CODEGEN.md, "Einsums").
#pragma once

#include "codegen/kernel_body.h"
#include "codegen/kernel_spec.h"

namespace kiln::codegen {

// Whether `body` is an einsum.
bool is_einsum_body(const KernelBody& body);

KernelSpec emit_einsum_kernel(const KernelBody& body);

}  // namespace kiln::codegen
