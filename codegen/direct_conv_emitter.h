// Direct convolution kernels: one thread per output element walks its window, for the convs
// an implicit GEMM serves badly or not at all:
//   - conv with few channels per group (depthwise and narrow grouped convs: at most 16 input
//     and fewer than 16 output channels per group). The contraction emitter computes such a
//     conv as a GEMM per group whose tiles are 64 output channels wide, so at least three
//     quarters of each tile is padding (63/64 for a depthwise conv), while a direct thread does
//     only (input channels per group) × kernel taps multiply-adds, its window read through the
//     L1 cache that its neighbours share;
//   - conv of other than 2 spatial dims (1-D, 3-D: the contraction emitter is 2-D only);
//   - conv_transpose, gathered per output: output position o takes input position
//     i = (o + pad_begin − k·dilation) / stride of kernel offset k where that divides exactly
//     and lies inside the input.
// Any spatial rank, strides, dilations, pads and groups, channels-first or channels-last (X
// [N,D...,C], W [M,k...,C/group]: neighbouring threads then compute neighbouring channels and
// read neighbouring input channels); the bias is added, and tf32=1 rounds X
// and W as the contraction emitter does. Accumulation is in f32 (f64 for f64). X and W come
// from the element machinery (codegen/element_emitter.h), so a fusion's prologue ops are
// computed as the window reads them, and each output element then goes through the fusion's
// epilogue (clip, residual add, cast, ...) at its flat index, as in the contraction emitter.
// A channels-last depthwise conv (one channel a group) whose 16-bit X is a kernel input with a
// multiple of 8 channels can take 8 neighbouring channels of one output position a thread: each
// tap one 16-byte load of X for the 8 (instead of 8 loads and 8 copies of the index arithmetic
// and padding tests), the 8 channels' weights (16-bit, a kernel input: W [C, k..., 1] holds
// them as 8 · taps neighbouring elements) as taps 16-byte loads into registers before the
// window, and the results as one 16-byte vector per output (codegen/vector_access.h). A 2-D one
// can also take 8 channels of 4 neighbouring output columns a thread: each kernel row's input
// columns loaded once for the 4 (6 vectors instead of 12 for a 3-wide window at stride 1), its
// weights widened once. These are tactics ("8 channels, 4 columns a thread", "8 channels a
// thread", "an element a thread"): the heuristic takes the first that still leaves 32768
// threads (a smaller conv keeps a thread an element, for parallelism; the columns only for
// windows of at most 9 taps), measurement where there is a GPU.
// MobileNetV2 b128's 17 depthwise convs take 1.86 ms one element a thread, 1.06 ms 8 channels a
// thread, 0.79 ms with 4 columns, against cuDNN's 0.66 (H200; docs/PERF.md, sessions 16-17).
#pragma once

#include <string>
#include <vector>

#include "codegen/kernel_body.h"
#include "codegen/kernel_spec.h"

namespace kiln::codegen {

// Whether `body` is anchored by a conv or conv_transpose that a direct kernel computes.
bool is_direct_conv_body(const KernelBody& body);

// The ways of computing a conv that can be vectorized (above), the heuristic's first; none for
// any other.
std::vector<std::string> direct_conv_tactics(const KernelBody& body);

// The kernel the way `tactic` indexes in direct_conv_tactics(body) (0 where it has none). Throws
// UnsupportedError naming what it cannot do (an output of another size than the conv's).
KernelSpec emit_direct_conv_kernel(const KernelBody& body, int tactic = 0);

}  // namespace kiln::codegen
