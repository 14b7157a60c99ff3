// The padding analysis (passes/padding_analysis.h) on small graphs: rows carried through
// elementwise ops, matrix products, convolutions, reshapes and transposes; refused where a
// softmax, a sum or a product along K mixes them, or where an unpadded operand has the padded
// size; varying dims that meet made one class.
#include "passes/padding_analysis.h"

#include <gtest/gtest.h>

#include "ir/parser.h"

namespace kiln::passes {
namespace {

PaddingAnalysis analyze(const std::string& text, const std::vector<VaryingDim>& dims) {
  const std::unique_ptr<Graph> graph = parse_graph(text);
  return analyze_padding(*graph, dims);
}

TEST(PaddingAnalysis, RowsOfAnMlpStayApart) {
  const PaddingAnalysis analysis = analyze(R"(
graph @mlp(%x: f32[4,8], %w: f32[8,16], %b: f32[16]) -> (f32[4,16]) {
  %h = matmul(%x, %w) : f32[4,16]
  %a = add(%h, %b) : f32[4,16]
  %r = relu(%a) : f32[4,16]
  %y = softmax(%r) {axis=1} : f32[4,16]
  return %y
})",
                                           {{0, 0}});
  ASSERT_EQ(analysis.refusal.size(), 1u);
  EXPECT_EQ(analysis.refusal[0], "");
  ASSERT_EQ(analysis.output_rows.size(), 1u);
  EXPECT_EQ(analysis.output_rows[0], (std::vector<RowAxis>{{0, 1, 0}}));
}

TEST(PaddingAnalysis, SoftmaxAlongTheRowsIsRefused) {
  const PaddingAnalysis analysis = analyze(R"(
graph @g(%x: f32[4,8]) -> (f32[4,8]) {
  %y = softmax(%x) {axis=0} : f32[4,8]
  return %y
})",
                                           {{0, 0}});
  EXPECT_NE(analysis.refusal[0].find("combines elements along axis 0"), std::string::npos)
      << analysis.refusal[0];
}

TEST(PaddingAnalysis, MergedRowsAreFollowedThroughReshapes) {
  const PaddingAnalysis analysis = analyze(R"(
graph @g(%x: f32[4,3,8], %w: f32[8,16]) -> (f32[4,3,16], f32[3,4,16]) {
  %flat = reshape(%x) {shape=[12, 8]} : f32[12,8]
  %h = matmul(%flat, %w) : f32[12,16]
  %y = reshape(%h) {shape=[4, 3, 16]} : f32[4,3,16]
  %t = transpose(%y) {perm=[1, 0, 2]} : f32[3,4,16]
  return %y, %t
})",
                                           {{0, 0}});
  EXPECT_EQ(analysis.refusal[0], "");
  EXPECT_EQ(analysis.output_rows[0], (std::vector<RowAxis>{{0, 1, 0}}));
  EXPECT_EQ(analysis.output_rows[1], (std::vector<RowAxis>{{1, 1, 0}}));
}

TEST(PaddingAnalysis, AReshapeMixingRowsIsRefused) {
  const PaddingAnalysis analysis = analyze(R"(
graph @g(%x: f32[4,6]) -> (f32[8,3]) {
  %y = reshape(%x) {shape=[8, 3]} : f32[8,3]
  return %y
})",
                                           {{0, 0}});
  // 8 rows of 3 would split each of x's rows in two: still whole rows of x (inner 2) — kept.
  EXPECT_EQ(analysis.refusal[0], "");
  EXPECT_EQ(analysis.output_rows[0], (std::vector<RowAxis>{{0, 2, 0}}));
  const PaddingAnalysis mixed = analyze(R"(
graph @g(%x: f32[4,6]) -> (f32[2,12]) {
  %y = reshape(%x) {shape=[2, 12]} : f32[2,12]
  return %y
})",
                                        {{0, 0}});
  EXPECT_NE(mixed.refusal[0].find("merges the padded rows"), std::string::npos);
}

TEST(PaddingAnalysis, AttentionOverAPaddedSequenceIsRefused) {
  const PaddingAnalysis analysis = analyze(R"(
graph @g(%x: f32[2,5,8], %wq: f32[8,8], %wk: f32[8,8]) -> (f32[2,5,5]) {
  %q = matmul(%x, %wq) : f32[2,5,8]
  %k = matmul(%x, %wk) : f32[2,5,8]
  %kt = transpose(%k) {perm=[0, 2, 1]} : f32[2,8,5]
  %s = matmul(%q, %kt) : f32[2,5,5]
  %p = softmax(%s) {axis=-1} : f32[2,5,5]
  return %p
})",
                                           {{0, 0}, {0, 1}});
  ASSERT_EQ(analysis.refusal.size(), 2u);
  EXPECT_EQ(analysis.refusal[analysis.dim_class[0]], "");  // the batch
  EXPECT_NE(analysis.refusal[analysis.dim_class[1]].find("combines elements along axis 2"),
            std::string::npos)
      << analysis.refusal[analysis.dim_class[1]];
}

TEST(PaddingAnalysis, InputsMeetingOnAnAxisAreOneClass) {
  const PaddingAnalysis analysis = analyze(R"(
graph @g(%x: f32[4,8], %m: f32[4,8], %c: f32[4,8]) -> (f32[4,8], f32[4,8]) {
  %y = add(%x, %m) : f32[4,8]
  %z = mul(%x, %c) : f32[4,8]
  return %y, %z
})",
                                           {{0, 0}, {1, 0}});
  EXPECT_EQ(analysis.dim_class, (std::vector<int>{0, 0}));
  // %c has the padded size along axis 0 but is not padded (a constant of batch rows).
  EXPECT_NE(analysis.refusal[0].find("reads operand 1 (c)"), std::string::npos)
      << analysis.refusal[0];
}

TEST(PaddingAnalysis, AConstantOfThePaddedSizeIsReadAsRows) {
  // Zeros expanded to [batch, 8] (token-type ids, say): taken as rows; whether it is the same at
  // every size is the caller's two-size comparison to check.
  const PaddingAnalysis analysis = analyze(R"(
graph @g(%x: f32[4,8]) -> (f32[4,8]) {
  %zeros = const f32[4,8] [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]
  %y = add(%x, %zeros) : f32[4,8]
  return %y
})",
                                           {{0, 0}});
  EXPECT_EQ(analysis.refusal[0], "");
  EXPECT_EQ(analysis.output_rows[0], (std::vector<RowAxis>{{0, 1, 0}}));
}

TEST(PaddingAnalysis, ACroppingResizeIsRefusedEvenAtScaleOne) {
  const PaddingAnalysis analysis = analyze(R"(
graph @g(%x: f32[4,1,4,4]) -> (f32[4,1,4,4]) {
  %y = resize(%x) {coordinate_transformation_mode="tf_crop_and_resize", mode="linear", roi=[0.5, 0.0, 0.0, 0.0, 1.0, 1.0, 1.0, 1.0], scales=[1.0, 1.0, 1.0, 1.0], sizes=[4, 1, 4, 4]} : f32[4,1,4,4]
  return %y
})",
                                           {{0, 0}});
  EXPECT_NE(analysis.refusal[0].find("moves elements along the padded axis 0"), std::string::npos)
      << analysis.refusal[0];
}

TEST(PaddingAnalysis, ConvolutionsKeepImagesApart) {
  const PaddingAnalysis analysis = analyze(R"(
graph @g(%x: f32[4,3,8,8], %w: f32[6,3,3,3]) -> (f32[4,6,1,1], f32[1,6,8,8]) {
  %c = conv(%x, %w) {pads=[1, 1, 1, 1]} : f32[4,6,8,8]
  %p = global_average_pool(%c) : f32[4,6,1,1]
  %s = reduce_mean(%c) {axes=[0], keepdims=1} : f32[1,6,8,8]
  return %p, %s
})",
                                           {{0, 0}});
  EXPECT_NE(analysis.refusal[0].find("combines elements along axis 0"), std::string::npos);
  EXPECT_EQ(analysis.output_rows[0], (std::vector<RowAxis>{{0, 1, 0}}));
}

}  // namespace
}  // namespace kiln::passes
