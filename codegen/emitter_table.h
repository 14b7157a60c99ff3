// Lowering by table: every kind of kernel codegen generates, registered once, in the order
// lowering tries them. The first emitter that takes a kernel body emits it, with the first of
// its variants the target offers; a new kernel kind or a variant for one architecture (sm_90a's
// warpgroup MMA beside mma.sync, say) is one entry here.
//
//   attention     fusion.attention bodies (attention_emitter.h)
//   pool          windowed pools (pool_emitter.h)
//   direct_conv   depthwise/narrow grouped, non-2-D convs and conv_transpose
//                 (direct_conv_emitter.h)
//   cum_sum       cum_sum (cum_sum_emitter.h)
//   top_k         top_k: a thread per element ranks it in its line (top_k_emitter.h)
//   scatter       scatter_elements, scatter_nd: a thread per output element applies the updates
//                 landing on it in order (scatter_emitter.h)
//   einsum        einsum: a thread per output element sums its products (einsum_emitter.h)
//   contraction   gemm, matmul, conv anchors: tensor-core or SIMT, split-K as two kernels
//                 (contraction_emitter.h)
//   reduction     fusion.reduction bodies and single reduction ops (reduction_emitter.h)
//   resize        resize: a loop kernel anchored by the opaque op (resize_element.h)
//   loop          everything else: elementwise, broadcast and injective ops (loop_emitter.h)
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "codegen/kernel_body.h"
#include "codegen/kernel_spec.h"
#include "target/target.h"

namespace kiln::codegen {

struct EmitterVariant {
  std::string_view name;
  // Whether `target` can run this variant's kernels; null: every target.
  bool (*offered)(const Target& target) = nullptr;
  // The body's kernels in launch order (several share workspace parameters), computed the way
  // `tactic` indexes in tactics(body, target) (0 where it has none).
  std::vector<KernelSpec> (*emit)(const KernelBody& body, const Target& target,
                                  int tactic) = nullptr;
  // The names of the ways it can compute `body`, the heuristic's first, for measurement to
  // choose from (kiln/autotune.h); null, or at most one name: one way.
  std::vector<std::string> (*tactics)(const KernelBody& body, const Target& target) = nullptr;
};

struct Emitter {
  std::string_view kind;
  bool (*takes)(const KernelBody& body) = nullptr;
  // Whether it takes bodies of single opaque ops (gemm, conv, cum_sum, ...): lowering refuses
  // an opaque op that no such emitter takes.
  bool anchors_opaque_ops = false;
  std::vector<EmitterVariant> variants;  // in order of preference
  // Whether its kernels write every output by index through the name begin_spec gives it, so
  // that an output may be placed in a concat's buffer (output_placement.h): no pointer
  // arithmetic on an output, no reading one back.
  bool places_outputs = false;
};

// Every emitter, in the order lowering tries them; the last (loop) takes every body.
const std::vector<Emitter>& emitter_table();

// The first emitter that takes `body`.
const Emitter& emitter_for(const KernelBody& body);

// The kernels of `body` for `target` from the first variant of its emitter the target offers,
// computed the way `tactic` indexes in kernel_tactics(body, target) (0: the heuristic's).
// Throws UnsupportedError when no variant is offered, naming the emitter and the target, and
// the emitter's UnsupportedError for what it cannot generate.
std::vector<KernelSpec> emit_kernels(const KernelBody& body, const Target& target,
                                     int tactic = 0);

// The named ways that variant can compute `body`, the heuristic's first; fewer than two: there
// is nothing to choose.
std::vector<std::string> kernel_tactics(const KernelBody& body, const Target& target);

}  // namespace kiln::codegen
