// hoist-narrowing-casts: moves a cast to a narrower float type (f32 to f16 or bf16, as mixed
// precision inserts before a 16-bit matrix product) above the data movement that feeds it:
// cast(transpose(x)) becomes transpose(cast(x)), likewise through reshape, expand, tile,
// depth_to_space and space_to_depth, repeatedly. Rounding each element commutes with moving it,
// so the values are the same; what changes is where the narrowing lands. Next to the producer,
// fusion folds it into that kernel (which then writes half the bytes), and the consumer reads
// 16-bit values through a pure view: a matrix product's operand that was transpose, reshape and
// cast of a layer norm's f32 output (ViT's attention input) becomes a strided view of a 16-bit
// buffer, which the wgmma kernel reads directly.
#pragma once

#include "passes/pass.h"

namespace kiln::passes {

class HoistNarrowingCasts : public Pass {
 public:
  static constexpr const char* kName = "hoist-narrowing-casts";
  std::string_view name() const override { return kName; }
  bool run(Graph& graph, PassContext& context) override;
};

}  // namespace kiln::passes
