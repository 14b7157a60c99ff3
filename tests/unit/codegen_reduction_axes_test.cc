// The reduction emitter's reading of the op table (codegen/reduction_ops.h): every reduction op
// it computes says which axes it reduces (OpInfo::reduced_axes), and reduced_axes() reads each
// kind of ReducedAxes as its ops mean it.
#include <gtest/gtest.h>

#include <memory>
#include <set>

#include "codegen/reduction_ops.h"
#include "ir/error.h"
#include "ir/op_registry.h"
#include "ir/parser.h"

namespace kiln::codegen {
namespace {

// Reductions by category that other emitters compute: lrn (codegen/lrn_emitter.h) and the
// windowed pools (codegen/pool_emitter.h).
const std::set<std::string> kOwnEmitterReductions = {"lrn", "average_pool", "max_pool",
                                                     "max_pool_with_indices"};

TEST(ReducedAxesTest, EveryReductionOfTheReductionEmitterNamesItsAxes) {
  for (const OpInfo* op : OpRegistry::global().all()) {
    const bool reduction_emitter =
        op->category == OpCategory::kReduction && !kOwnEmitterReductions.count(op->name);
    EXPECT_EQ(op->reduced_axes != ReducedAxes::kNone, reduction_emitter) << op->name;
  }
}

// reduced_axes() of each node of `text`'s graph, in order.
std::vector<std::vector<bool>> reduced_axes_of(const std::string& text) {
  const std::unique_ptr<Graph> graph = parse_graph(text);
  std::vector<std::vector<bool>> axes;
  for (const Node* node : graph->nodes()) axes.push_back(reduced_axes(*node));
  return axes;
}

TEST(ReducedAxesTest, ReadsEachKindOfAxes) {
  const std::vector<std::vector<bool>> axes = reduced_axes_of(R"(
graph @g(%x: f32[2,4,3,3], %s: f32[4], %b: f32[4], %t: f32[3,3]) -> (f32[2,4,1,3], f32[], f32[2,4,3,3], f32[2,4,3,3], f32[2,4,3,3], f32[2,4,3,3], f32[2,4,1,1], f32[2,4,3,3], f32[2,4,3,3]) {
  %0 = reduce_sum(%x) {axes=[-2]} : f32[2,4,1,3]
  %1 = reduce_max(%x) {keepdims=0} : f32[]
  %2 = reduce_mean(%x) {noop_with_empty_axes=1} : f32[2,4,3,3]
  %3 = mean_variance_normalization(%x) : f32[2,4,3,3]
  %4 = softmax(%x) {axis=1} : f32[2,4,3,3]
  %5 = layer_normalization(%x, %t) {axis=-2} : f32[2,4,3,3]
  %6 = global_average_pool(%x) : f32[2,4,1,1]
  %7 = instance_normalization(%x, %s, %b) : f32[2,4,3,3]
  %8 = group_normalization(%x, %s, %b) {num_groups=2} : f32[2,4,3,3]
  return %0, %1, %2, %3, %4, %5, %6, %7, %8
}
)");
  using Axes = std::vector<bool>;
  EXPECT_EQ(axes[0], (Axes{false, false, true, false}));  // reduce_sum: axes
  EXPECT_EQ(axes[1], (Axes{true, true, true, true}));     // reduce_max: no axes, all
  EXPECT_EQ(axes[2], (Axes{false, false, false, false}));  // noop_with_empty_axes: none
  EXPECT_EQ(axes[3], (Axes{true, false, true, true}));    // mean_variance_normalization: [0, 2, 3]
  EXPECT_EQ(axes[4], (Axes{false, true, false, false}));  // softmax: axis
  EXPECT_EQ(axes[5], (Axes{false, false, true, true}));   // layer_normalization: from axis
  EXPECT_EQ(axes[6], (Axes{false, false, true, true}));   // global_average_pool: spatial
  EXPECT_EQ(axes[7], (Axes{false, false, true, true}));   // instance_normalization: spatial
  EXPECT_EQ(axes[8], (Axes{false, false, true}));         // group_normalization: [2, 2, 18]
}

TEST(ReducedAxesTest, RefusesAReductionWithoutAxes) {
  const std::unique_ptr<Graph> graph = parse_graph(R"(
graph @g(%x: f32[1,5,4,4]) -> (f32[1,5,4,4]) {
  %0 = lrn(%x) {size=3} : f32[1,5,4,4]
  return %0
}
)");
  EXPECT_THROW(reduced_axes(*graph->nodes()[0]), UnsupportedError);
}

}  // namespace
}  // namespace kiln::codegen
