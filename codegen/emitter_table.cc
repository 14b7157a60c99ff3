// The emitter table (see the header).
#include "codegen/emitter_table.h"

#include "codegen/attention_emitter.h"
#include "codegen/contraction_emitter.h"
#include "codegen/cum_sum_emitter.h"
#include "codegen/direct_conv_emitter.h"
#include "codegen/einsum_emitter.h"
#include "codegen/loop_emitter.h"
#include "codegen/pool_emitter.h"
#include "codegen/reduction_emitter.h"
#include "codegen/resize_element.h"
#include "codegen/scatter_emitter.h"
#include "codegen/top_k_emitter.h"
#include "ir/error.h"
#include "ir/fusion.h"
#include "ir/op_registry.h"

namespace kiln::codegen {
namespace {

// An emitter of one kernel per body, as a variant's emit function.
template <KernelSpec (*kEmit)(const KernelBody&)>
std::vector<KernelSpec> one_kernel(const KernelBody& body, const Target&, int) {
  std::vector<KernelSpec> kernels;
  kernels.push_back(kEmit(body));
  return kernels;
}

std::vector<KernelSpec> direct_conv_kernels(const KernelBody& body, const Target&, int tactic) {
  std::vector<KernelSpec> kernels;
  kernels.push_back(emit_direct_conv_kernel(body, tactic));
  return kernels;
}

std::vector<std::string> direct_conv_tactic_names(const KernelBody& body, const Target&) {
  return direct_conv_tactics(body);
}

std::vector<KernelSpec> attention_kernels(const KernelBody& body, const Target& target,
                                          int tactic) {
  std::vector<KernelSpec> kernels;
  kernels.push_back(emit_attention_kernel(body, target, tactic));
  return kernels;
}

// A single reduction op, or a fusion.reduction.
bool is_reduction_body(const KernelBody& body) {
  const bool single_op = body.nodes.size() == 1 && body.kind == body.nodes[0]->op();
  return single_op ? body.nodes[0]->info().category == OpCategory::kReduction
                   : body.kind == fusion_kind_name(FusionKind::kReduction);
}

bool takes_any(const KernelBody&) { return true; }

std::vector<Emitter> make_table() {
  return {
      {"attention",
       &is_attention_body,
       false,
       {{"tiled or row", nullptr, &attention_kernels, &attention_tactics}}},
      {"pool", &is_pool_body, false, {{"window", nullptr, &one_kernel<&emit_pool_kernel>}}, true},
      {"direct_conv",
       &is_direct_conv_body,
       true,
       {{"window", nullptr, &direct_conv_kernels, &direct_conv_tactic_names}},
       true},
      {"cum_sum", &is_cum_sum_body, true, {{"line", nullptr, &one_kernel<&emit_cum_sum_kernel>}}},
      {"top_k", &is_top_k_body, true, {{"rank", nullptr, &one_kernel<&emit_top_k_kernel>}}},
      {"scatter",
       &is_scatter_body,
       true,
       {{"by output element", nullptr, &one_kernel<&emit_scatter_kernel>}}},
      {"einsum", &is_einsum_body, true, {{"direct", nullptr, &one_kernel<&emit_einsum_kernel>}}},
      {"contraction",
       &is_contraction_body,
       true,
       {{"wgmma, mma.sync or SIMT", nullptr, &emit_contraction_kernels, &contraction_tactics}},
       true},
      {"reduction",
       &is_reduction_body,
       false,
       {{"rows", nullptr, &one_kernel<&emit_reduction_kernel>}}},
      {"resize",
       &is_resize_body,
       true,
       {{"grid-stride", nullptr, &one_kernel<&emit_loop_kernel>}},
       true},
      {"loop", &takes_any, false, {{"grid-stride", nullptr, &one_kernel<&emit_loop_kernel>}}, true},
  };
}

}  // namespace

const std::vector<Emitter>& emitter_table() {
  static const std::vector<Emitter> table = make_table();
  return table;
}

const Emitter& emitter_for(const KernelBody& body) {
  for (const Emitter& emitter : emitter_table()) {
    if (emitter.takes(body)) return emitter;
  }
  throw InternalError("no emitter takes kernel body '" + body.kind + "'");
}

namespace {

// The first variant of `body`'s emitter that `target` offers; throws UnsupportedError when none.
const EmitterVariant& variant_for(const KernelBody& body, const Target& target) {
  const Emitter& emitter = emitter_for(body);
  for (const EmitterVariant& variant : emitter.variants) {
    if (!variant.offered || variant.offered(target)) return variant;
  }
  std::string variants;
  for (const EmitterVariant& variant : emitter.variants) {
    variants += (variants.empty() ? "" : ", ") + std::string(variant.name);
  }
  throw UnsupportedError("the " + std::string(emitter.kind) + " emitter has no kernel for " +
                         target.arch + " (its variants: " + variants + ")");
}

}  // namespace

std::vector<KernelSpec> emit_kernels(const KernelBody& body, const Target& target, int tactic) {
  return variant_for(body, target).emit(body, target, tactic);
}

std::vector<std::string> kernel_tactics(const KernelBody& body, const Target& target) {
  const EmitterVariant& variant = variant_for(body, target);
  return variant.tactics ? variant.tactics(body, target) : std::vector<std::string>{};
}

}  // namespace kiln::codegen
