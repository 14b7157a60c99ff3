// What each reduction op computes over a row (the elements one output element reduces) and
// what its results are, for the reduction emitter (codegen/reduction_emitter.h).
//
// A plan is a list of passes over the row. Each pass folds one term per element into an
// accumulator (a sum, product, max, min, or the best (value, index) of arg_max/arg_min),
// combines the accumulators of the threads sharing the row, and finishes with statements that
// define the row's statistics, which later passes and the results use. Softmax, for instance:
//   pass 1  row_max = max x
//   pass 2  row_sum = sum exp(x - row_max)
//   result  exp(x - row_max) / row_sum, per element
// Reduce ops, arg_max/arg_min and global pools have one result per row; softmax, log_softmax,
// hardmax and the normalizations (layer, rms, instance, group, mean-variance) one per element
// (layer_normalization_with_stats adds its mean and inverse deviation per row).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "codegen/element_emitter.h"

namespace kiln::codegen {

enum class Combine { kSum, kProd, kMax, kMin, kArgMax, kArgMin };

struct ReductionPass {
  std::string accumulator;  // variable name; kArgMax/kArgMin also use "<accumulator>_index"
  std::string type;         // C type of the accumulator
  std::string initial;      // its value before the first element
  Combine combine = Combine::kSum;
  // The term of element `x` (a variable of the accumulator's type).
  std::function<std::string(const std::string& x)> term;
  // Statements after the pass, once every thread of the row holds the combined accumulator.
  std::vector<std::string> finish = {};
};

struct ReductionPlan {
  std::vector<ReductionPass> passes;
  bool select_last = false;  // arg_max/arg_min: ties go to the last index
  // Makes the emitter compute the op's results from the row's statistics.
  std::function<void(ElementEmitter&)> install_results;
  // Where set, the last pass may replace each element of X it reads from registers with its
  // term (softmax: exp(x − max)), and these results then read the terms where they would read
  // X; the emitter does so when X feeds nothing else.
  std::function<void(ElementEmitter&)> install_results_from_terms = {};
};

// The shape the op sees its operand 0 as: that operand's own, except [N, groups, channels /
// groups · spatial] for ReducedAxes::kWithinGroups (group_normalization; the same elements in the
// same order).
Shape reduction_view(const Node& reduction);

// Which axes of reduction_view(reduction) the op reduces, as its OpInfo::reduced_axes says. Throws
// UnsupportedError for an op with ReducedAxes::kNone (the message names the node).
std::vector<bool> reduced_axes(const Node& reduction);

// The plan of `reduction` over rows of `columns` elements.
ReductionPlan plan_reduction(const Node& reduction, int64_t columns);

}  // namespace kiln::codegen
