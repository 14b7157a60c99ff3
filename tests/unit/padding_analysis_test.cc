// The padding analysis (passes/padding_analysis.h) on small graphs: rows carried through
// elementwise ops, matrix products, convolutions, reshapes and transposes; refused where a
// softmax, a sum or a product along K mixes them, or where an unpadded operand has the padded
// size; varying dims that meet made one class; a sequence padded under an additive attention
// mask (passes/padding_values.h), merged with the batch, its first token read.
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

// BERT's attention: an additive mask (1 - mask) * -10000, padded with zeros, masks the padded
// keys; the softmax gives them exactly 0 and P·V adds nothing from them. Batch and sequence both
// vary, merged into one axis for the projection.
std::string masked_attention(const std::string& mask_scale, const std::string& first_token) {
  return R"(
graph @g(%x: f32[2,5,8], %mask: i64[2,5], %wq: f32[8,8], %wk: f32[8,8], %wv: f32[8,8]) -> (f32[2,5,8], f32[2,8]) {
  %one = const f32[] 1.0
  %big = const f32[] )" +
         mask_scale + R"(
  %first = const i64[] )" +
         first_token + R"(
  %flat = reshape(%x) {shape=[10, 8]} : f32[10,8]
  %qf = matmul(%flat, %wq) : f32[10,8]
  %kf = matmul(%flat, %wk) : f32[10,8]
  %vf = matmul(%flat, %wv) : f32[10,8]
  %q = reshape(%qf) {shape=[2, 5, 8]} : f32[2,5,8]
  %k = reshape(%kf) {shape=[2, 5, 8]} : f32[2,5,8]
  %v = reshape(%vf) {shape=[2, 5, 8]} : f32[2,5,8]
  %kt = transpose(%k) {perm=[0, 2, 1]} : f32[2,8,5]
  %s = matmul(%q, %kt) : f32[2,5,5]
  %m4 = reshape(%mask) {shape=[2, 1, 5]} : i64[2,1,5]
  %mf = cast(%m4) {to=f32} : f32[2,1,5]
  %inv = sub(%one, %mf) : f32[2,1,5]
  %add = mul(%inv, %big) : f32[2,1,5]
  %masked = add(%s, %add) : f32[2,5,5]
  %p = softmax(%masked) {axis=-1} : f32[2,5,5]
  %o = matmul(%p, %v) : f32[2,5,8]
  %cls = gather(%o, %first) {axis=1} : f32[2,8]
  return %o, %cls
})";
}

TEST(PaddingAnalysis, ASequenceUnderAnAdditiveMaskIsPadded) {
  const PaddingAnalysis analysis =
      analyze(masked_attention("-10000.0", "0"), {{0, 0}, {0, 1}, {1, 0}, {1, 1}});
  ASSERT_EQ(analysis.refusal.size(), 2u);
  const int batch = analysis.dim_class[0];
  const int sequence = analysis.dim_class[1];
  EXPECT_EQ(analysis.dim_class, (std::vector<int>{batch, sequence, batch, sequence}));
  EXPECT_EQ(analysis.refusal[batch], "");
  EXPECT_EQ(analysis.refusal[sequence], "") << analysis.refusal[sequence];
  ASSERT_EQ(analysis.output_rows.size(), 2u);
  EXPECT_EQ(analysis.output_rows[0], (std::vector<RowAxis>{{0, 1, batch}, {1, 1, sequence}}));
  EXPECT_EQ(analysis.output_rows[1], (std::vector<RowAxis>{{0, 1, batch}}));  // the first token
  // What the sequence's padding relies on, for kiln inspect; the batch relies on nothing more.
  EXPECT_EQ(analysis.relies_on[batch], "");
  EXPECT_NE(analysis.relies_on[sequence].find(
                "1 × a softmax over padded elements masked by -1e4 or less (the first: node "
                "softmax producing %p)"),
            std::string::npos)
      << analysis.relies_on[sequence];
  EXPECT_NE(analysis.relies_on[sequence].find("1 × a gather of rows below the range's minimum"),
            std::string::npos)
      << analysis.relies_on[sequence];
}

TEST(PaddingAnalysis, AMaskTooSmallOrAPaddedTokenReadIsRefused) {
  // -100 does not make exp underflow: the padded keys would keep some weight.
  const PaddingAnalysis weak =
      analyze(masked_attention("-100.0", "0"), {{0, 0}, {0, 1}, {1, 0}, {1, 1}});
  EXPECT_NE(weak.refusal[weak.dim_class[1]].find("softmax"), std::string::npos)
      << weak.refusal[weak.dim_class[1]];
  EXPECT_NE(weak.refusal[weak.dim_class[1]].find("not masked"), std::string::npos);
  // The last token (-1) is a padded one whenever the sequence is padded; token 2 is real only
  // for runs of at least 3 tokens.
  for (const char* token : {"-1", "2"}) {
    const PaddingAnalysis last =
        analyze(masked_attention("-10000.0", token), {{0, 0}, {0, 1}, {1, 0}, {1, 1}});
    EXPECT_NE(last.refusal[last.dim_class[1]].find("gathers along the padded axis"),
              std::string::npos)
        << token << ": " << last.refusal[last.dim_class[1]];
  }
  std::vector<VaryingDim> at_least_three = {{0, 0}, {0, 1, 3}, {1, 0}, {1, 1, 3}};
  const PaddingAnalysis third = analyze(masked_attention("-10000.0", "2"), at_least_three);
  EXPECT_EQ(third.refusal[third.dim_class[1]], "");
}

TEST(PaddingAnalysis, AMaskFilledWithTheLowestValueIsPadded) {
  // transformers' newer form: where(bool(1 - mask), lowest, 0) added to the scores, in f16.
  const PaddingAnalysis analysis = analyze(R"(
graph @g(%s: f16[2,5,5], %mask: i64[2,5]) -> (f16[2,5,5]) {
  %one = const f16[] 1.0
  %lowest = const f16[] -65504.0
  %zero = const f16[] 0.0
  %m3 = reshape(%mask) {shape=[2, 1, 5]} : i64[2,1,5]
  %mf = cast(%m3) {to=f16} : f16[2,1,5]
  %inv = sub(%one, %mf) : f16[2,1,5]
  %b = cast(%inv) {to=bool} : bool[2,1,5]
  %add = where(%b, %lowest, %zero) : f16[2,1,5]
  %masked = add(%s, %add) : f16[2,5,5]
  %p = softmax(%masked) {axis=-1} : f16[2,5,5]
  return %p
})",
                                           {{0, 1}, {0, 2}, {1, 1}});
  // The scores' queries (axis 1) and keys (axis 2) vary; the mask's tokens are the keys.
  EXPECT_EQ(analysis.dim_class, (std::vector<int>{0, 1, 1}));
  EXPECT_EQ(analysis.refusal[1], "") << analysis.refusal[1];
  EXPECT_EQ(analysis.output_rows[0], (std::vector<RowAxis>{{1, 1, 0}, {2, 1, 1}}));
}

TEST(PaddingAnalysis, ACausalMaskAndedWithAPaddedMaskIsPadded) {
  // A decoder's mask: a constant causal mask (its size changes with the sequence) and-ed with the
  // attention mask; where false, the lowest value. The padded keys are false whatever the
  // causal mask says there.
  const PaddingAnalysis analysis = analyze(R"(
graph @g(%s: f32[2,4,4], %mask: i64[2,4]) -> (f32[2,4,4]) {
  %causal = const bool[1,4,4] [true, false, false, false, true, true, false, false, true, true, true, false, true, true, true, true]
  %zero = const f32[] 0.0
  %lowest = const f32[] -3.4028235e+38
  %m3 = reshape(%mask) {shape=[2, 1, 4]} : i64[2,1,4]
  %mb = cast(%m3) {to=bool} : bool[2,1,4]
  %both = and(%causal, %mb) : bool[2,4,4]
  %add = where(%both, %zero, %lowest) : f32[2,4,4]
  %masked = add(%s, %add) : f32[2,4,4]
  %p = softmax(%masked) {axis=-1} : f32[2,4,4]
  return %p
})",
                                           {{0, 1}, {0, 2}, {1, 1}});
  EXPECT_EQ(analysis.refusal[analysis.dim_class[2]], "") << analysis.refusal[analysis.dim_class[2]];
  // Without the attention mask, the causal mask alone (computed from constants, not read) is
  // refused — unless the caller says the constant holds the sequence's rows (next test).
  const PaddingAnalysis causal_only = analyze(R"(
graph @g(%s: f32[2,4,4]) -> (f32[2,4,4]) {
  %causal = const bool[1,4,4] [true, false, false, false, true, true, false, false, true, true, true, false, true, true, true, true]
  %zero = const f32[] 0.0
  %lowest = const f32[] -3.4028235e+38
  %add = where(%causal, %zero, %lowest) : f32[1,4,4]
  %masked = add(%s, %add) : f32[2,4,4]
  %p = softmax(%masked) {axis=-1} : f32[2,4,4]
  return %p
})",
                                              {{0, 1}, {0, 2}});
  EXPECT_NE(causal_only.refusal[causal_only.dim_class[1]], "");
}

TEST(PaddingAnalysis, TransformersMaskViewAndAConstantOfSequenceRowsArePadded) {
  // transformers 5 exports mask[:, None, None, :] as a gather_nd of constant indices (each
  // position's own coordinates) and and-s it with a constant of the sequence's length folded at
  // import ([1, 1, S, 1], all true): the constant holds the sequence's rows on axis 2
  // (ConstantRows, which kiln/dynamic_compile.cc finds at two sizes).
  const std::string text = R"(
graph @g(%s: f32[2,1,3,3], %mask: i64[2,3]) -> (f32[2,1,3,3]) {
  %view = const i64[2,1,1,3,2] [0, 0, 0, 1, 0, 2, 1, 0, 1, 1, 1, 2]
  %all = const bool[1,1,3,1] [true, true, true]
  %zero = const f32[] 0.0
  %lowest = const f32[] -3.4028235e+38
  %mb = cast(%mask) {to=bool} : bool[2,3]
  %m4 = gather_nd(%mb, %view) {batch_dims=0} : bool[2,1,1,3]
  %both = and(%all, %m4) : bool[2,1,3,3]
  %add = where(%both, %zero, %lowest) : f32[2,1,3,3]
  %masked = add(%s, %add) : f32[2,1,3,3]
  %p = softmax(%masked) {axis=-1} : f32[2,1,3,3]
  return %p
})";
  // dims: the scores' batch, queries and keys; the mask's batch and tokens.
  const std::vector<VaryingDim> dims = {{0, 0}, {0, 2}, {0, 3}, {1, 0}, {1, 1}};
  const std::unique_ptr<Graph> graph = parse_graph(text);
  size_t all = 0;
  while (graph->constants()[all]->name() != "all") ++all;
  size_t view = 0;
  while (graph->constants()[view]->name() != "view") ++view;
  // The queries' class reaches %all; the view's indices hold the batch's and the tokens' rows.
  const std::vector<ConstantRows> constants = {{all, 2, 1, 1}, {view, 0, 0, 1}, {view, 3, 4, 1}};
  const PaddingAnalysis analysis = analyze_padding(*graph, dims, constants);
  EXPECT_EQ(analysis.dim_class[3], analysis.dim_class[0]);  // the batches meet
  EXPECT_EQ(analysis.dim_class[4], analysis.dim_class[2]);  // the tokens are the keys
  for (const std::string& refusal : analysis.refusal) EXPECT_EQ(refusal, "");
  // Without the constant's rows, the queries' axis meets a value of their size without rows.
  const PaddingAnalysis without = analyze_padding(*graph, dims, {{view, 0, 0, 1}, {view, 3, 4, 1}});
  EXPECT_NE(without.refusal[without.dim_class[1]].find("has the padded size"), std::string::npos)
      << without.refusal[without.dim_class[1]];
}

TEST(PaddingAnalysis, ACausalMaskConstantMasksARealQuerysPaddedKeys) {
  // A decoder without an attention mask: its causal mask, folded at each sequence length into a
  // constant [1, S, S] of the sequence's rows on both axes, masks every key past the query:
  // a real query's padded keys are all past it.
  const auto causal = [](const std::string& past) {
    return R"(
graph @g(%s: f32[2,3,3], %v: f32[2,3,4]) -> (f32[2,3,4]) {
  %causal = const f32[1,3,3] [0.0, PAST, PAST, 0.0, 0.0, PAST, 0.0, 0.0, 0.0]
  %masked = add(%s, %causal) : f32[2,3,3]
  %p = softmax(%masked) {axis=-1} : f32[2,3,3]
  %o = matmul(%p, %v) : f32[2,3,4]
  return %o
})";
  };
  const auto analyze_with = [&](std::string past) {
    std::string text = causal("");
    for (size_t at; (at = text.find("PAST")) != std::string::npos;) text.replace(at, 4, past);
    const std::unique_ptr<Graph> graph = parse_graph(text);
    // dims: the scores' queries and keys, the values' keys; the constant's rows of the
    // queries' on both axes.
    return analyze_padding(*graph, {{0, 1}, {0, 2}, {1, 1}}, {{0, 1, 0, 1}, {0, 2, 0, 1}});
  };
  const PaddingAnalysis masked = analyze_with("-3.4028235e+38");
  EXPECT_EQ(masked.dim_class, (std::vector<int>{0, 0, 0}));
  EXPECT_EQ(masked.refusal[0], "") << masked.refusal[0];
  EXPECT_EQ(masked.output_rows[0], (std::vector<RowAxis>{{1, 1, 0}}));
  // -100 past the diagonal does not mask.
  const PaddingAnalysis weak = analyze_with("-100.0");
  EXPECT_NE(weak.refusal[weak.dim_class[1]].find("not masked"), std::string::npos)
      << weak.refusal[weak.dim_class[1]];
}

TEST(PaddingAnalysis, MergedBatchAndSequenceAreSeparateDigits) {
  const PaddingAnalysis analysis = analyze(R"(
graph @g(%x: f32[2,5,8], %w: f32[8,4]) -> (f32[10,4]) {
  %flat = reshape(%x) {shape=[10, 8]} : f32[10,8]
  %y = matmul(%flat, %w) : f32[10,4]
  return %y
})",
                                           {{0, 0}, {0, 1}});
  ASSERT_EQ(analysis.refusal.size(), 2u);
  // Both classes' rows lie on axis 0 ([B·S]); the sequence's inside the batch's (outer 2), which
  // an output cannot be cut back along.
  EXPECT_EQ(analysis.refusal[analysis.dim_class[0]], "");
  EXPECT_NE(analysis.refusal[analysis.dim_class[1]].find("inside a merged axis"), std::string::npos)
      << analysis.refusal[analysis.dim_class[1]];
  const std::vector<RowAxis>& rows = analysis.output_rows[0];
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0], (RowAxis{0, 5, analysis.dim_class[0], 1}));
  EXPECT_EQ(rows[1], (RowAxis{0, 1, analysis.dim_class[1], 2}));
}

TEST(PaddingAnalysis, ASumOverPaddedNonzerosIsRefused) {
  // Summing the padded input adds its zeros: allowed. Summing x + 1 over the tokens would add 1
  // for each padded token: refused.
  const std::string graph = R"(
graph @g(%x: f32[2,5,8]) -> (f32[2,8]) {
  %one = const f32[] 1.0
  %h = add(%x, %one) : f32[2,5,8]
  %y = reduce_sum(%SUMMED) {axes=[1], keepdims=0} : f32[2,8]
  return %y
})";
  const auto with = [&](const std::string& summed) {
    std::string text = graph;
    text.replace(text.find("SUMMED"), 6, summed);
    return analyze(text, {{0, 1}});
  };
  EXPECT_EQ(with("x").refusal[0], "");
  const PaddingAnalysis analysis = with("h");
  EXPECT_NE(analysis.refusal[0].find("combines elements along axis 1"), std::string::npos)
      << analysis.refusal[0];
}

}  // namespace
}  // namespace kiln::passes
