// top_k kernels (ONNX TopK, k an attribute): one thread per input element ranks it in its line
// along the axis by counting the elements that come before it, and writes it (and its index) to
// output position `rank` when that is below k. "Before" is the reference's stable sort: a
// larger value (smaller with largest=0) first, NaN above every number, equal values by lower
// index, so every element of a line has its own rank and no two threads write one output.
// Results are sorted whatever `sorted` says, as the reference's are. A thread stops counting once
// its rank reaches k, so a line of n costs about n · k · (1 + ln(n / k)) comparisons for random
// values (n² when k = n): fine for the short axes and small k top_k mostly sees, slow on long
// ones with a large k.
#pragma once

#include "codegen/kernel_body.h"
#include "codegen/kernel_spec.h"

namespace kiln::codegen {

// Whether `body` is a top_k.
bool is_top_k_body(const KernelBody& body);

KernelSpec emit_top_k_kernel(const KernelBody& body);

}  // namespace kiln::codegen
