// Concats as views: instead of a copy kernel gathering a concat's operands into its buffer, each
// operand's producing kernel writes its result straight into its slice of that buffer.
//
// An operand of shape d concatenated along axis a into a result of shape D lies in the result's
// buffer as runs of block = d[a] · inner contiguous elements, stride = D[a] · inner apart, the
// first at offset = (the earlier operands' d[a]) · inner, where inner = D[a+1] · ... · D[r-1].
// So the operand's element at flat index f sits at (f / block) · stride + offset + f % block:
// in a channels-last conv net (concat along the innermost axis) each pixel's channels, in a
// batch-1 NCHW one a single run. The producer's kernel writes through that map (kiln_placed,
// device_functions.h) and states the region in its header ("// output regions: ...",
// runtime/kernel_header.h), so the runtime knows two producers write disjoint parts of one
// buffer and may run them at once (runtime/step_dependencies.h).
//
// A concat becomes a view when
//   - it is a kernel node of its own (a concat fused into a pool or loop kernel stays there),
//     its result no graph output;
//   - every operand is the result of a kernel node that no other node or graph output reads,
//     appearing once, and not itself a concat that became a view;
//   - every producer's emitter writes its outputs by index (emitter_table.h: places_outputs);
//   - each operand's block, stride and offset are whole 16-byte vectors, so that the producers'
//     vector stores stay aligned and inside one run.
// Otherwise the concat stays a copy kernel, and the refusal says why.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "ir/graph.h"

namespace kiln::codegen {

struct OutputPlacement {
  const Value* concat = nullptr;  // the concat's result, whose buffer the producer writes
  int64_t block = 0;              // contiguous elements a run
  int64_t stride = 0;             // elements from one run's start to the next
  int64_t offset = 0;             // where the first run starts

  // The index in the concat's buffer of the operand's element at flat index `flat`.
  int64_t placed_index(int64_t flat) const { return flat / block * stride + offset + flat % block; }
};

struct ConcatViews {
  std::map<const Value*, OutputPlacement> placements;  // by the producer's result
  std::set<const Node*> concats;                       // the concat nodes that launch nothing
  std::vector<std::string> refusals;                   // "concat-views: <concat>: <why>"
};

// The concats of a fused graph that become views, and where their operands then lie.
ConcatViews concat_views(const Graph& fused_graph);

}  // namespace kiln::codegen
