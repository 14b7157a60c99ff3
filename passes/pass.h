// A graph pass and the context every pass runs with.
//
// A pass has a kebab-case name and rewrites a graph in place; run() returns whether it changed
// anything and throws kiln::InputError when the graph is invalid for it. The pipeline
// (passes/pipeline.cc) owns the order, printing after a pass, disabling by name, timing, and
// verification between passes.
#pragma once

#include <iosfwd>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "ir/graph.h"
#include "passes/precision_policy.h"

namespace kiln::passes {

struct PassContext {
  // Passes named here are skipped (--disable-pass).
  std::set<std::string> disabled;
  // Print the graph after these passes to `dump` (--print-after); "all": after every pass that
  // changed it, and "unchanged" after the others.
  std::set<std::string> print_after;
  // Report each pass's wall time to `dump` (--time-passes).
  bool time_passes = false;
  // Run the verifier after every pass (on by default in debug builds).
  bool verify_each = false;
  std::ostream* dump = nullptr;
  // Why a rewrite was refused, one line each, "pass: node: reason" (--explain-fusion).
  std::vector<std::string> refusals;

  // Mixed precision (passes/precision_policy.h): the precision of the mixed-precision pass
  // (--precision; fp32 leaves the graph alone), the dtype of float graph inputs and outputs
  // (--io-precision; unset: as declared), and ops kept in f32 beyond the policy (--keep-fp32).
  Precision precision = Precision::kFP32;
  std::optional<DType> io_dtype;
  std::set<std::string> keep_fp32;
};

class Pass {
 public:
  virtual ~Pass() = default;
  virtual std::string_view name() const = 0;
  // Rewrites `graph`; returns whether it changed.
  virtual bool run(Graph& graph, PassContext& context) = 0;
};

}  // namespace kiln::passes
