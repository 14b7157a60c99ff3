// space-to-depth-stem: rewrites a network's stem, a stride-2 2-D conv on few input channels (an
// RGB image's 3), as a space-to-depth of its input and a stride-1 conv with half the kernel on
// four times the channels, so the tensor-core conv's gemm depth shrinks.
//
// channels-last pads a stem's 3 channels to 8 (one 16-byte vector a tap), so ResNet's 7×7 stem
// has depth 7·7·8 = 392, five eighths of it zeros. Here the input, zero-padded by the conv's pads,
// becomes X'[n, (dy·2+dx)·C + c, i, j] = Xpad[n, c, 2i+dy, 2j+dx] (space_to_depth, blocksize 2,
// DCR), and the conv becomes one with stride 1, no pads, kernel ⌈k/2⌉ per axis and weights
// repacked at compile time: W'[o, (dy·2+dx)·C + c, a, b] = Wpad[o, c, 2a+dy, 2b+dx], Wpad being W
// zero-padded to an even kernel. ResNet's stem reads 115×115×12 (16 after channels-last's
// padding) through a 4×4 kernel: depth 256. Every product of the old conv is one of the new
// (the others multiply zero weights), so the output is the same in exact arithmetic, and the
// bias and whatever follows the conv (a folded BatchNorm's bias, a ReLU) are untouched.
//
// The padded size of each axis is 2·(out + ⌈k/2⌉ − 1), out being the old conv's output size: the
// end pad grows by one row where the new kernel's extra row needs it, or crops one that no output
// reads (an even kernel), so the new output size is the old one exactly.
//
// After mixed-precision and before channels-last (which moves the space-to-depth input to NHWC
// and pads its channels to a multiple of 8), only with --precision fp16 or bf16: the pad and the
// space_to_depth fuse into the loop kernel that casts and moves the graph input anyway. The pass
// looks at the stems: the convs reading a graph input, directly or through elementwise ops (a
// cast, a normalization). A stem is refused, with the reason (--explain-refusals), unless it is
// 2-D with 16-bit operands, constant weights, stride 2, dilation 1, one group and 4·C ≤ 16, and
// the rewrite shrinks its depth (kh·kw·C with C rounded up to 8, as channels-last pads it: a 1×1
// kernel does not gain). Other convs are left alone unreported (their input is computed in NHWC,
// where a space-to-depth would be a kernel of its own).
#pragma once

#include "passes/pass.h"

namespace kiln::passes {

class SpaceToDepthStem : public Pass {
 public:
  static constexpr const char* kName = "space-to-depth-stem";
  std::string_view name() const override { return kName; }
  bool run(Graph& graph, PassContext& context) override;
};

}  // namespace kiln::passes
