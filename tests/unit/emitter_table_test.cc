// Tests of the emitter table (codegen/emitter_table.h): the order lowering tries the emitters in,
// that every emitter has a variant on each architecture kiln compiles for by default, and that
// bodies go to the emitter of their kind.
#include "codegen/emitter_table.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>

#include "codegen/kernel_body.h"
#include "ir/parser.h"

namespace kiln::codegen {
namespace {

TEST(EmitterTableTest, OrderEndsWithTheLoopEmitterThatTakesEverything) {
  std::vector<std::string> kinds;
  for (const Emitter& emitter : emitter_table()) kinds.emplace_back(emitter.kind);
  EXPECT_THAT(kinds, ::testing::ElementsAre("attention", "pool", "direct_conv", "cum_sum", "top_k",
                                            "scatter", "einsum", "contraction", "reduction",
                                            "resize", "loop"));
}

TEST(EmitterTableTest, EveryEmitterHasAVariantOnEveryDefaultArch) {
  for (const std::string arch : {"sm_80", "sm_86", "sm_89", "sm_90", "sm_90a"}) {
    const Target target = target_for_arch(arch);
    for (const Emitter& emitter : emitter_table()) {
      const bool offered = std::any_of(emitter.variants.begin(), emitter.variants.end(),
                                       [&](const EmitterVariant& variant) {
                                         return !variant.offered || variant.offered(target);
                                       });
      EXPECT_TRUE(offered) << emitter.kind << " has no variant for " << arch;
    }
  }
}

TEST(EmitterTableTest, BodiesGoToTheEmitterOfTheirKind) {
  const std::unique_ptr<Graph> graph = parse_graph(R"(
graph @g(%x: f32[2,8], %w: f32[8,4]) -> (f32[2,4], f32[2,8], f32[2,1], f32[2,2]) {
  %m = matmul(%x, %w) : f32[2,4]
  %r = relu(%x) : f32[2,8]
  %s = reduce_sum(%x) {axes=[1]} : f32[2,1]
  %v, %i = top_k(%x) {axis=-1, k=2} : (f32[2,2], i64[2,2])
  return %m, %r, %s, %v
}
)");
  std::vector<std::string> kinds;
  for (const Node* node : graph->nodes()) {
    const KernelBody body = kernel_body_of(*node);
    const Emitter& emitter = emitter_for(body);
    kinds.push_back(std::string(emitter.kind) + (emitter.anchors_opaque_ops ? "+" : ""));
  }
  EXPECT_THAT(kinds, ::testing::ElementsAre("contraction+", "loop", "reduction", "top_k+"));
}

}  // namespace
}  // namespace kiln::codegen
