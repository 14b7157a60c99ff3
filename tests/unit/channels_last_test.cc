// The channels-last pass (passes/channels_last.h) on small conv nets with random weights: the
// reference interpreter's outputs of the rewritten graph equal the original's (bit for bit: a
// channels-last op sums in its channels-first form's order), every conv is channels-last, and
// transposes appear only where the pass says.
#include "passes/channels_last.h"

#include <gtest/gtest.h>

#include <random>

#include "ir/parser.h"
#include "passes/mixed_precision.h"
#include "passes/pipeline.h"
#include "reference/reference_interpreter.h"

namespace kiln::passes {
namespace {

Tensor random_tensor(DType dtype, const Shape& shape, uint32_t seed) {
  std::mt19937 generator(seed);
  std::uniform_real_distribution<double> uniform(-1.0, 1.0);
  Tensor tensor(dtype, shape);
  for (int64_t i = 0; i < tensor.num_elements(); ++i) tensor.set_double(i, uniform(generator));
  return tensor;
}

// Gives every elided constant of `graph` random data.
std::unique_ptr<Graph> with_random_constants(const std::string& text) {
  std::unique_ptr<Graph> parsed = parse_graph(text);
  uint32_t seed = 1;
  const std::vector<Value*> constants = parsed->constants();  // add_constant appends
  for (Value* constant : constants) {
    if (constant->has_data()) continue;
    Value* filled = parsed->add_constant(constant->name() + ".data",
                                         random_tensor(constant->type().dtype,
                                                       constant->type().shape, seed++));
    parsed->replace_all_uses(constant, filled);
  }
  parsed->erase_unused_constants();
  return parsed;
}

int count_ops(const Graph& graph, const std::string& op) {
  int count = 0;
  for (const Node* node : graph.nodes()) count += node->op() == op;
  return count;
}

// Runs mixed precision in fp16 (and channels-last when `layout`) and the reference on `inputs`.
std::vector<Tensor> run_fp16(const std::string& text, bool layout, const std::vector<Tensor>& inputs,
                             Graph** kept = nullptr, PassContext* context_out = nullptr) {
  static std::vector<std::unique_ptr<Graph>> graphs;
  graphs.push_back(with_random_constants(text));
  Graph& graph = *graphs.back();
  PassContext context;
  context.precision = Precision::kFP16;
  context.verify_each = true;
  std::vector<std::unique_ptr<Pass>> passes;
  passes.push_back(make_pass(MixedPrecision::kName));
  if (layout) passes.push_back(make_pass(ChannelsLast::kName));
  run_passes(graph, passes, context);
  if (kept) *kept = &graph;
  if (context_out) *context_out = context;
  return run_reference(graph, inputs);
}

void expect_same_outputs(const std::vector<Tensor>& want, const std::vector<Tensor>& got) {
  ASSERT_EQ(want.size(), got.size());
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_TRUE(want[i].same_contents(got[i])) << "output " << i;
  }
}

// Depthwise and grouped convs, a per-channel scale that is a graph input ([C,1,1], moved by a
// transpose), average pool, concat along channels, a keepdims reduction, and a residual add.
constexpr const char* kNet = R"(
graph @net(%x: f32[2,4,9,9], %scale: f32[4,1,1]) -> (f32[2,12,5,5], f32[2,1,5,5]) {
  %w1 = const f32[4,1,3,3]
  %w2 = const f32[8,2,3,3]
  %w3 = const f32[4,4,1,1]
  %b1 = const f32[4]
  %d = conv(%x, %w1, %b1) {dilations=[1, 1], group=4, pads=[1, 1, 1, 1], strides=[1, 1]} : f32[2,4,9,9]
  %s = mul(%d, %scale) : f32[2,4,9,9]
  %c = clip(%s) {max=6.0, min=0.0} : f32[2,4,9,9]
  %p = average_pool(%c) {kernel_shape=[3, 3], pads=[1, 1, 1, 1], strides=[2, 2]} : f32[2,4,5,5]
  %g = conv(%p, %w2) {dilations=[1, 1], group=2, pads=[1, 1, 1, 1], strides=[1, 1]} : f32[2,8,5,5]
  %q = conv(%p, %w3) {dilations=[1, 1], group=1, pads=[0, 0, 0, 0], strides=[1, 1]} : f32[2,4,5,5]
  %r = add(%q, %p) : f32[2,4,5,5]
  %cat = concat(%g, %r) {axis=1} : f32[2,12,5,5]
  %sum = reduce_sum(%cat) {axes=[1], keepdims=1} : f32[2,1,5,5]
  return %cat, %sum
}
)";

TEST(ChannelsLastTest, SmallNetComputesWhatTheOriginalDoes) {
  const std::vector<Tensor> inputs = {random_tensor(DType::kF32, {2, 4, 9, 9}, 100),
                                      random_tensor(DType::kF32, {4, 1, 1}, 101)};
  Graph* rewritten = nullptr;
  PassContext context;
  const std::vector<Tensor> want = run_fp16(kNet, false, inputs);
  const std::vector<Tensor> got = run_fp16(kNet, true, inputs, &rewritten, &context);
  expect_same_outputs(want, got);
  for (const Node* node : rewritten->nodes()) {
    if (node->op() == "conv" || node->op() == "average_pool") {
      EXPECT_EQ(node->int_attr("channels_last"), 1) << node->describe();
    }
  }
  // x in, %cat out (a graph output, in NCHW); the scale [4,1,1] and %sum [2,1,5,5] move only
  // size-1 dims: reshapes.
  EXPECT_EQ(count_ops(*rewritten, "transpose"), 2);
  EXPECT_EQ(count_ops(*rewritten, "concat"), 1);
  int refusals = 0;
  for (const std::string& refusal : context.refusals) {
    refusals += refusal.starts_with("channels-last: ");
    EXPECT_NE(refusal.find("graph output"), std::string::npos) << refusal;
  }
  EXPECT_EQ(refusals, 1);
}

// The reduction with keepdims=0 and max_pool_with_indices have no channels-last form: each reads
// its operand through a transpose back to NCHW, with a refusal naming it; results stay equal.
TEST(ChannelsLastTest, RefusedConsumersReadThroughATranspose) {
  const std::string net = R"(
graph @refused(%x: f32[1,8,6,6]) -> (f32[1,8,6], f32[1,8,3,3], i64[1,8,3,3]) {
  %w = const f32[8,8,3,3]
  %y = conv(%x, %w) {dilations=[1, 1], group=1, pads=[1, 1, 1, 1], strides=[1, 1]} : f32[1,8,6,6]
  %m = reduce_max(%y) {axes=[3], keepdims=0} : f32[1,8,6]
  %p, %i = max_pool_with_indices(%y) {kernel_shape=[2, 2], strides=[2, 2]} : (f32[1,8,3,3], i64[1,8,3,3])
  return %m, %p, %i
}
)";
  const std::vector<Tensor> inputs = {random_tensor(DType::kF32, {1, 8, 6, 6}, 7)};
  Graph* rewritten = nullptr;
  PassContext context;
  expect_same_outputs(run_fp16(net, false, inputs), run_fp16(net, true, inputs, &rewritten, &context));
  // x in; %y back for max_pool_with_indices; reduce_max (f32) reads %y's cast to f32, which
  // follows the layout, back.
  EXPECT_EQ(count_ops(*rewritten, "transpose"), 3);
  std::string all;
  for (const std::string& refusal : context.refusals) all += refusal + "\n";
  EXPECT_NE(all.find("reduce_max producing %m: reads the result of cast channels-first, so a "
                     "transpose to NCHW is inserted: reduce_max with keepdims=0 drops axes of the "
                     "layout"),
            std::string::npos)
      << all;
  EXPECT_NE(all.find("max_pool_with_indices has no channels-last form"), std::string::npos) << all;
}

}  // namespace
}  // namespace kiln::passes
