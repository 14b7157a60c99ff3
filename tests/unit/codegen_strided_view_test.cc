// Tests of strided views (codegen/strided_view.h): the strides of BERT's packed-QKV slice,
// reshape and transpose (also as the key operand's transpose), torchvision's unbind by a constant
// gather with batch and heads merged and split again, a strided axis split by a reshape,
// a transpose that leaves the last axis strided, and reshapes that are no view (merging axes a
// transpose or slice made non-contiguous) rejected; the flat form of views whose axes are not one
// progression each (BERT's attention output and ViT's sequence-first tokens, as gemm operands). Every view found is checked element by element
// against the reference interpreter run on a source holding its own flat indices.
#include <gtest/gtest.h>

#include <numeric>

#include "codegen/strided_view.h"
#include "ir/parser.h"
#include "reference/reference_interpreter.h"

namespace kiln::codegen {
namespace {

std::optional<StridedView> view_of_output(const Graph& graph) {
  const Value* source = graph.inputs()[0];
  return strided_view(graph.outputs()[0], [&](const Value* v) { return v == source; });
}

// The graph's one output, run by the reference on a source whose elements are their own flat
// indices: each output element is the source index it reads.
Tensor source_indices(const Graph& graph) {
  const Value* source = graph.inputs()[0];
  std::vector<float> iota(static_cast<size_t>(source->type().num_elements()));
  std::iota(iota.begin(), iota.end(), 0.0f);
  std::vector<Tensor> out =
      run_reference(graph, {Tensor::from_vector(DType::kF32, source->type().shape, iota)});
  EXPECT_EQ(out.size(), 1u);
  return std::move(out.at(0));
}

// Checks that every output element equals offset + Σ strides · coordinates.
void expect_view_matches_reference(const Graph& graph, const StridedView& view) {
  const Tensor out = source_indices(graph);
  const Shape& shape = view.shape;
  ASSERT_EQ(out.type().shape, shape);
  for (int64_t i = 0; i < out.num_elements(); ++i) {
    int64_t rest = i, at = view.offset;
    for (size_t d = shape.size(); d-- > 0;) {
      at += rest % shape[d] * view.strides[d];
      rest /= shape[d];
    }
    ASSERT_EQ(static_cast<int64_t>(out.get_double(i)), at) << "element " << i;
  }
}

TEST(StridedView, BertPackedQkvSliceReshapeTranspose) {
  // Keys of a packed [batch, seq, 3 · hidden] projection: the second third, split into 12 heads of
  // 64, heads before positions; then transposed as the key operand of Q·Kᵀ.
  const auto graph = parse_graph(R"(
graph @g(%x: f32[2,16,2304]) -> (f32[2,12,64,16]) {
  %k = slice(%x) {axes=[2], ends=[1536], starts=[768], steps=[1]} : f32[2,16,768]
  %r = reshape(%k) {shape=[2, 16, 12, 64]} : f32[2,16,12,64]
  %t = transpose(%r) {perm=[0, 2, 1, 3]} : f32[2,12,16,64]
  %kt = transpose(%t) {perm=[0, 1, 3, 2]} : f32[2,12,64,16]
  return %kt
})");
  const std::optional<StridedView> view = view_of_output(*graph);
  ASSERT_TRUE(view);
  EXPECT_EQ(view->source, graph->inputs()[0]);
  EXPECT_EQ(view->offset, 768);
  EXPECT_EQ(view->strides, (std::vector<int64_t>{16 * 2304, 64, 1, 2304}));
  expect_view_matches_reference(*graph, *view);
}

TEST(StridedView, SeparateProjectionsAndSqueezeLikeReshapes) {
  // BERT's separate projections: [batch, seq, hidden] viewed as heads, with a size-1 axis added
  // and removed again on the way.
  const auto graph = parse_graph(R"(
graph @g(%x: f32[3,10,128]) -> (f32[3,2,10,64]) {
  %u = reshape(%x) {shape=[3, 1, 10, 2, 64]} : f32[3,1,10,2,64]
  %r = reshape(%u) {shape=[3, 10, 2, 64]} : f32[3,10,2,64]
  %t = transpose(%r) {perm=[0, 2, 1, 3]} : f32[3,2,10,64]
  %i = identity(%t) : f32[3,2,10,64]
  return %i
})");
  const std::optional<StridedView> view = view_of_output(*graph);
  ASSERT_TRUE(view);
  EXPECT_EQ(view->offset, 0);
  EXPECT_EQ(view->strides, (std::vector<int64_t>{1280, 64, 128, 1}));
  expect_view_matches_reference(*graph, *view);
}

TEST(StridedView, TorchvisionUnbindMergesAndSplitsHeads) {
  // torchvision's multi-head attention (sequence-first): the packed [seq, batch, 3 · hidden]
  // projection unflattened, q/k/v moved to the front and taken by a constant gather, batch and
  // heads merged into one axis (not contiguous: strides 3 · hidden and 8), transposed, and split
  // again into [batch, heads, seq, head].
  const auto graph = parse_graph(R"(
graph @g(%x: f32[5,2,96]) -> (f32[2,4,5,8]) {
  %u = reshape(%x) {shape=[5, 2, 3, 32]} : f32[5,2,3,32]
  %w = reshape(%u) {shape=[1, 5, 2, 3, 32]} : f32[1,5,2,3,32]
  %t = transpose(%w) {perm=[3, 1, 2, 0, 4]} : f32[3,5,2,1,32]
  %q = reshape(%t) {shape=[3, 5, 2, 32]} : f32[3,5,2,32]
  %i = const i64[] 1
  %k = gather(%q, %i) {axis=0} : f32[5,2,32]
  %m = reshape(%k) {shape=[5, 8, 8]} : f32[5,8,8]
  %n = transpose(%m) {perm=[1, 0, 2]} : f32[8,5,8]
  %h = reshape(%n) {shape=[2, 4, 5, 8]} : f32[2,4,5,8]
  return %h
})");
  const std::optional<StridedView> view = view_of_output(*graph);
  ASSERT_TRUE(view);
  EXPECT_EQ(view->offset, 32);
  EXPECT_EQ(view->strides, (std::vector<int64_t>{96, 8, 192, 1}));
  expect_view_matches_reference(*graph, *view);
}

TEST(StridedView, ReshapeSplitsAStridedAxis) {
  // Every other column, split: a part is cut where the new sizes divide it.
  const auto graph = parse_graph(R"(
graph @g(%x: f32[4,12]) -> (f32[2,2,3,2]) {
  %s = slice(%x) {axes=[1], ends=[12], starts=[0], steps=[2]} : f32[4,6]
  %r = reshape(%s) {shape=[2, 2, 3, 2]} : f32[2,2,3,2]
  return %r
})");
  const std::optional<StridedView> view = view_of_output(*graph);
  ASSERT_TRUE(view);
  EXPECT_EQ(view->strides, (std::vector<int64_t>{24, 12, 4, 2}));
  expect_view_matches_reference(*graph, *view);
}

TEST(StridedView, TransposeThatBreaksUnitStrideIsStillAView) {
  // The last axis moves: a strided view whose last stride is not 1 (a kernel that needs
  // contiguous rows must check strides.back()).
  const auto graph = parse_graph(R"(
graph @g(%x: f32[2,64,16]) -> (f32[2,16,64]) {
  %t = transpose(%x) {perm=[0, 2, 1]} : f32[2,16,64]
  return %t
})");
  const std::optional<StridedView> view = view_of_output(*graph);
  ASSERT_TRUE(view);
  EXPECT_EQ(view->strides, (std::vector<int64_t>{1024, 1, 16}));
  expect_view_matches_reference(*graph, *view);
}

TEST(StridedView, ReshapeMergingTransposedAxesIsNoView) {
  const auto graph = parse_graph(R"(
graph @g(%x: f32[4,6,8]) -> (f32[24,8]) {
  %t = transpose(%x) {perm=[1, 0, 2]} : f32[6,4,8]
  %r = reshape(%t) {shape=[24, 8]} : f32[24,8]
  return %r
})");
  EXPECT_FALSE(view_of_output(*graph));
}

TEST(StridedView, ReshapeMergingSlicedAxesIsNoView) {
  const auto graph = parse_graph(R"(
graph @g(%x: f32[4,8]) -> (f32[16]) {
  %s = slice(%x) {axes=[1], ends=[4], starts=[0], steps=[1]} : f32[4,4]
  %r = reshape(%s) {shape=[16]} : f32[16]
  return %r
})");
  EXPECT_FALSE(view_of_output(*graph));
}

TEST(StridedView, ComputeOpsAreNoView) {
  const auto graph = parse_graph(R"(
graph @g(%x: f32[4,8]) -> (f32[8,4]) {
  %c = const f32[] 2.0
  %m = mul(%x, %c) : f32[4,8]
  %t = transpose(%m) {perm=[1, 0]} : f32[8,4]
  return %t
})");
  EXPECT_FALSE(view_of_output(*graph));
}

// Checks every element of the graph's output against the flat view's digits.
void expect_flat_view_matches_reference(const Graph& graph, const FlatStridedView& view) {
  const Tensor out = source_indices(graph);
  for (int64_t i = 0; i < out.num_elements(); ++i) {
    int64_t at = view.offset;
    for (const FlatStridedView::Digit& digit : view.digits) {
      at += i / digit.inner % digit.size * digit.stride;
    }
    ASSERT_EQ(static_cast<int64_t>(out.get_double(i)), at) << "element " << i;
  }
}

TEST(StridedView, FlatViewOfMergedTransposedAxes) {
  // BERT's attention output [batch, heads, seq, head] read by the output projection as
  // [batch · seq, heads · head]: no axis is one progression, the flat form has four digits.
  const auto bert = parse_graph(R"(
graph @g(%o: f32[2,3,5,8]) -> (f32[10,24]) {
  %t = transpose(%o) {perm=[0, 2, 1, 3]} : f32[2,5,3,8]
  %r = reshape(%t) {shape=[10, 24]} : f32[10,24]
  return %r
})");
  const Value* o = bert->inputs()[0];
  EXPECT_FALSE(strided_view(bert->outputs()[0], [&](const Value* v) { return v == o; }));
  const std::optional<FlatStridedView> flat =
      flat_strided_view(bert->outputs()[0], [&](const Value* v) { return v == o; });
  ASSERT_TRUE(flat);
  ASSERT_EQ(flat->digits.size(), 4u);
  EXPECT_EQ(flat->digits.back().stride, 1);
  EXPECT_EQ(flat->digits.back().size, 8);
  expect_flat_view_matches_reference(*bert, *flat);
  // ViT's sequence-first tokens: [batch, seq, hidden] transposed to [seq, batch, hidden] and
  // merged to [seq · batch, hidden].
  const auto vit = parse_graph(R"(
graph @g(%x: f32[4,7,16]) -> (f32[28,16]) {
  %t = transpose(%x) {perm=[1, 0, 2]} : f32[7,4,16]
  %r = reshape(%t) {shape=[28, 16]} : f32[28,16]
  return %r
})");
  const Value* x = vit->inputs()[0];
  const std::optional<FlatStridedView> tokens =
      flat_strided_view(vit->outputs()[0], [&](const Value* v) { return v == x; });
  ASSERT_TRUE(tokens);
  expect_flat_view_matches_reference(*vit, *tokens);
}

}  // namespace
}  // namespace kiln::codegen
