// channels-last: runs the 16-bit 2-D convolutions of a graph, and the ops between them, in
// channels-last order (NHWC), which the tensor-core kernels read and write better: a conv's
// im2col gather reads a group's channels at one tap as one contiguous run, and its results are
// stored as pairs of neighbouring output channels.
//
// After mixed-precision (it needs to know which convs run in 16 bits) and before fuse-kernels
// (the transposes it leaves fuse with their neighbours like any injective op). Every 2-D conv
// whose operands are f16 or bf16 and whose weights are constant becomes conv {channels_last=1}:
// its weights are repacked OIHW -> OHWI at compile time (a new constant, so no kernel transposes
// them), its input is read in NHWC. An ungrouped conv reading a value from outside the NHWC
// region (a graph input) whose channels are not a multiple of 8 (an RGB stem's 3) reads them
// zero-padded to one (a pad op after the input's move, computed by the same kernel; weights
// padded at compile time), so a pixel's channels are whole 16-byte vectors. The layout then follows
// the values:
//   - elementwise ops and broadcasting ops (add, mul, clip's operands, where, ...) of a value
//     held in NHWC compute in NHWC; another operand of theirs is moved too: a constant at compile
//     time (a per-channel [C,1,1] becomes [C]), any other value by a transpose (a reshape when
//     only size-1 dims move);
//   - global_average_pool becomes reduce_mean over axes [1, 2] (keepdims), reduce_* with
//     keepdims=1 reduce the remapped axes, concat joins along the remapped axis;
//   - max_pool and average_pool take channels_last=1; pad pads the remapped axes (Inception's
//     explicit pad before an average pool that leaves the padding out of its counts).
// A value is moved back to NCHW only where something reads it in NCHW: a graph output, or an op
// the pass does not convert. The move is a reshape where it moves only size-1 dims (a global
// pool's [N,C,1,1] before a flatten), else a transpose; each such transpose is listed in the
// refusals with the consumer that needs it and why (--explain-refusals). Graph inputs are moved
// to NHWC by a transpose where an NHWC op first reads them.
//
// Refusals also name the 2-D convs left channels-first (not 16-bit, weights not constant) when
// the graph has convs the pass converts. A graph with no 16-bit 2-D conv is left alone, and so
// is every graph unless --precision is fp16 or bf16 (a graph declared in f16 and compiled in
// fp32 keeps its layout, as its kernels and tests expect).
#pragma once

#include "passes/pass.h"

namespace kiln::passes {

// The channels a conv reading a graph input reads: its own, zero-padded to a multiple of 8 (8
// 16-bit values: 16 bytes). space-to-depth-stem counts a stem's gemm depth with them too.
inline int64_t padded_conv_channels(int64_t channels) {
  constexpr int64_t kMultiple = 8;
  return (channels + kMultiple - 1) / kMultiple * kMultiple;
}

class ChannelsLast : public Pass {
 public:
  static constexpr const char* kName = "channels-last";
  std::string_view name() const override { return kName; }
  bool run(Graph& graph, PassContext& context) override;
};

}  // namespace kiln::passes
