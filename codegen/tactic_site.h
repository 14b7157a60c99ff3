// Kernel nodes that can be computed more than one way (a contraction's tilings: block width,
// stages, split-K, wgmma or mma.sync), as lowering shows them to measurement (kiln/autotune.h)
// and asks it which way to take (CodegenOptions::choose_tactic).
#pragma once

#include <string>
#include <vector>

namespace kiln::codegen {

// The tactic of an epilogue fusion (a contraction with the ops fused around it) that lowers its
// body op by op, each a kernel of its own as the unfused pipeline would give it, the values
// between them in intermediates: measurement keeps fusion honest, taking it where the fused
// kernel runs slower than the kernels it replaces (codegen/lower.cc, kiln/autotune.h). Always
// the site's last tactic; the fused kernel's tactics come first ("fused" alone where its emitter
// has one way).
inline constexpr const char* kUnfusedTactic = "unfused";

struct TacticSite {
  // The heuristic's kernels' code hashed with the tactics' names: nodes of equal keys compute
  // the same problem (shape, dtypes, layouts, prologue and epilogue) with the same choices.
  std::string key;
  std::vector<std::string> tactics;  // names ("wgmma 128x192 4 stages"), the heuristic's first
  std::string label;                 // for people: the node's first ONNX node, or its kernel
  // For people: why a tactic a user may look for is not among them ("cuBLASLt not offered: gelu
  // in the epilogue (...)"; kiln compile --explain-tactics).
  std::vector<std::string> notes;
};

// Where lowering placed a site's kernels: the tactic it took and its steps in the Program.
struct TacticUse {
  TacticSite site;
  int tactic = 0;
  int first_step = 0;
  int step_count = 0;
};

}  // namespace kiln::codegen
