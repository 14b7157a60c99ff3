// Tests of the later additions to the op families: trigonometric and hyperbolic math, softsign,
// celu, mish, thresholded_relu, shrink, the bitwise ops and bit_shift (ir/ops/elementwise_*.cc),
// hardmax (ir/ops/nn_softmax.cc), group_normalization, mean_variance_normalization and lrn
// (ir/ops/nn_channel_norm.cc), and einsum (ir/ops/nn_einsum.cc): small graphs on the reference
// interpreter against hand-computed values, and the errors bad operands and attributes raise.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>

#include "ir/tensor.h"
#include "op_test_util.h"

namespace kiln::op_test {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

// ---- Unary float math ---------------------------------------------------------------------------

TEST(ExtraOpsTest, TrigonometricAndHyperbolicFunctions) {
  const float pi = 3.14159265358979f;
  expect_floats_near(run_op("tan", {f32_tensor({2}, {0, pi / 4})}), {0, 1});
  expect_floats_near(run_op("atan", {f32_tensor({2}, {0, 1})}), {0, pi / 4});
  expect_floats_near(run_op("asin", {f32_tensor({2}, {0, 1})}), {0, pi / 2});
  expect_floats_near(run_op("acos", {f32_tensor({2}, {1, 0})}), {0, pi / 2});
  expect_floats_near(run_op("sinh", {f32_tensor({2}, {0, 1})}), {0, 1.17520119f});
  expect_floats_near(run_op("cosh", {f32_tensor({2}, {0, 1})}), {1, 1.54308063f});
  expect_floats_near(run_op("asinh", {f32_tensor({2}, {0, 1})}), {0, 0.88137359f});
  expect_floats_near(run_op("acosh", {f32_tensor({2}, {1, 2})}), {0, 1.31695790f});
  expect_floats_near(run_op("atanh", {f32_tensor({2}, {0, 0.5f})}), {0, 0.54930614f});
  EXPECT_TRUE(std::isnan(run_op("asin", {f32_tensor({1}, {2})}).get_float(0)));
}

TEST(ExtraOpsTest, Activations) {
  expect_floats_near(run_op("softsign", {f32_tensor({3}, {-3, 0, 1})}), {-0.75f, 0, 0.5f});
  expect_floats_near(run_op("mish", {f32_tensor({2}, {0, 1})}), {0, 0.86509838f});
  expect_floats_near(run_op("celu", {f32_tensor({2}, {-2, 3})}, {{"alpha", 2.0}}),
                     {-1.26424112f, 3});
  EXPECT_TRUE(std::isnan(run_op("celu", {f32_tensor({1}, {kNaN})}).get_float(0)));
  expect_floats_near(run_op("thresholded_relu", {f32_tensor({3}, {0.5f, 1, 2})}), {0, 0, 2});
  expect_floats_near(run_op("thresholded_relu", {f32_tensor({2}, {-1, 0.5f})}, {{"alpha", -2.0}}),
                     {-1, 0.5f});
}

TEST(ExtraOpsTest, ShrinkOnFloatsAndIntegers) {
  const AttributeMap attrs = {{"lambd", 1.5}, {"bias", 0.5}};
  expect_floats_near(run_op("shrink", {f32_tensor({5}, {-2, -1, 0, 1, 2})}, attrs),
                     {-1.5f, 0, 0, 0, 1.5f});
  // x +- bias is computed in floating point and truncated toward zero.
  const Tensor out = run_op("shrink", {int_tensor(DType::kI32, {5}, {-3, -1, 0, 1, 3})}, attrs);
  EXPECT_THAT(out.to_ints(), ElementsAre(-2, 0, 0, 0, 2));
}

TEST(ExtraOpsTest, FloatMathRejectsIntegers) {
  EXPECT_THAT(add_node_error("tan", {{DType::kI32, {2}}}), HasSubstr("expected f32"));
  EXPECT_THAT(add_node_error("mish", {{DType::kI64, {2}}}), HasSubstr("operand 0"));
}

// ---- Bitwise ------------------------------------------------------------------------------------

TEST(ExtraOpsTest, BitwiseLogicBroadcasts) {
  const Tensor a = int_tensor(DType::kU8, {2, 2}, {12, 255, 0, 7});
  const Tensor b = int_tensor(DType::kU8, {2}, {10, 15});
  EXPECT_THAT(run_op("bitwise_and", {a, b}).to_ints(), ElementsAre(8, 15, 0, 7));
  EXPECT_THAT(run_op("bitwise_or", {a, b}).to_ints(), ElementsAre(14, 255, 10, 15));
  EXPECT_THAT(run_op("bitwise_xor", {a, b}).to_ints(), ElementsAre(6, 240, 10, 8));
}

TEST(ExtraOpsTest, BitwiseNotKeepsTheWidth) {
  EXPECT_THAT(run_op("bitwise_not", {int_tensor(DType::kU8, {2}, {0, 5})}).to_ints(),
              ElementsAre(255, 250));
  EXPECT_THAT(run_op("bitwise_not", {int_tensor(DType::kI8, {2}, {0, -1})}).to_ints(),
              ElementsAre(-1, 0));
}

TEST(ExtraOpsTest, BitwiseRejectsFloatsAndBool) {
  EXPECT_THAT(add_node_error("bitwise_and", {{DType::kF32, {2}}, {DType::kF32, {2}}}),
              HasSubstr("operand 0"));
  EXPECT_THAT(add_node_error("bitwise_not", {{DType::kBool, {2}}}), HasSubstr("operand 0"));
}

TEST(ExtraOpsTest, BitShiftLeftDiscardsHighBits) {
  const Tensor out = run_op(
      "bit_shift",
      {int_tensor(DType::kI8, {4}, {64, 1, 3, 5}), int_tensor(DType::kI8, {4}, {1, 8, -1, 2})},
      {{"direction", "LEFT"}});
  EXPECT_THAT(out.to_ints(), ElementsAre(-128, 0, 0, 20));
}

TEST(ExtraOpsTest, BitShiftRightExtendsTheSign) {
  const Tensor out = run_op("bit_shift",
                            {int_tensor(DType::kI8, {4}, {-128, -1, 16, -16}),
                             int_tensor(DType::kI8, {4}, {7, 9, -1, 100})},
                            {{"direction", "RIGHT"}});
  EXPECT_THAT(out.to_ints(), ElementsAre(-1, -1, 0, -1));
  const Tensor unsigned_out = run_op(
      "bit_shift", {int_tensor(DType::kU8, {2}, {255, 255}), int_tensor(DType::kU8, {1}, {4})},
      {{"direction", "RIGHT"}});
  EXPECT_THAT(unsigned_out.to_ints(), ElementsAre(15, 15));
}

TEST(ExtraOpsTest, BitShiftRejectsAnUnknownDirection) {
  EXPECT_THAT(
      add_node_error("bit_shift", {{DType::kI32, {2}}, {DType::kI32, {2}}}, {{"direction", "UP"}}),
      HasSubstr("'direction'"));
}

// ---- hardmax ------------------------------------------------------------------------------------

TEST(ExtraOpsTest, HardmaxMarksTheFirstMaximum) {
  const Tensor x = f32_tensor({2, 3}, {1, 3, 3, 2, kNaN, 5});
  EXPECT_THAT(run_op("hardmax", {x}).to_floats(), ElementsAre(0, 1, 0, 0, 1, 0));
  EXPECT_THAT(run_op("hardmax", {x}, {{"axis", 0}}).to_floats(), ElementsAre(0, 0, 0, 1, 1, 1));
}

TEST(ExtraOpsTest, HardmaxRejectsABadAxis) {
  EXPECT_THAT(add_node_error("hardmax", {{DType::kF32, {2, 3}}}, {{"axis", 2}}), HasSubstr("axis"));
}

// ---- group_normalization ------------------------------------------------------------------------

TEST(ExtraOpsTest, GroupNormalizationNormalizesEachGroup) {
  const Tensor x = f32_tensor({1, 4, 1, 2}, {0, 2, 4, 6, 1, 1, 3, 5});
  const Tensor scale = f32_tensor({4}, {1, 1, 2, 2});
  const Tensor bias = f32_tensor({4}, {0, 0, 1, 1});
  const Tensor out =
      run_op("group_normalization", {x, scale, bias}, {{"num_groups", 2}, {"epsilon", 0.0}});
  const float s0 = 1 / std::sqrt(5.0f);   // group 0: mean 3, variance 5
  const float s1 = 2 / std::sqrt(2.75f);  // group 1: mean 2.5, variance 2.75; scale 2
  expect_floats_near(out,
                     {-3 * s0, -1 * s0, 1 * s0, 3 * s0, -1.5f * s1 + 1, -1.5f * s1 + 1,
                      0.5f * s1 + 1, 2.5f * s1 + 1},
                     1e-5f);
}

TEST(ExtraOpsTest, GroupNormalizationWithAnF64Stash) {
  const Tensor x = Tensor::from_vector(DType::kF16, {1, 2, 2}, std::vector<float>{1, 3, 5, 9});
  const Tensor one = Tensor::from_vector(DType::kF16, {2}, std::vector<float>{1, 1});
  const Tensor zero = Tensor::from_vector(DType::kF16, {2}, std::vector<float>{0, 0});
  const Tensor out = run_op("group_normalization", {x, one, zero},
                            {{"num_groups", 2}, {"epsilon", 0.0}, {"stash_type", DType::kF64}});
  EXPECT_EQ(out.dtype(), DType::kF16);
  expect_floats_near(out, {-1, 1, -1, 1}, 1e-3f);
}

TEST(ExtraOpsTest, GroupNormalizationRejectsBadGroupsAndScale) {
  const TensorType x{DType::kF32, {1, 4, 2}};
  const TensorType channel{DType::kF32, {4}};
  EXPECT_THAT(add_node_error("group_normalization", {x, channel, channel}, {{"num_groups", 3}}),
              HasSubstr("'num_groups'"));
  EXPECT_THAT(
      add_node_error("group_normalization", {x, {DType::kF32, {2}}, channel}, {{"num_groups", 2}}),
      HasSubstr("scale"));
}

// ---- mean_variance_normalization ----------------------------------------------------------------

TEST(ExtraOpsTest, MeanVarianceNormalizationOverDefaultAxes) {
  // Axes 0, 2, 3: channel 0 holds {1, 3} (mean 2, deviation 1); channel 1 is constant.
  const Tensor out =
      run_op("mean_variance_normalization", {f32_tensor({1, 2, 1, 2}, {1, 3, 5, 5})});
  expect_floats_near(out, {-1, 1, 0, 0});
}

TEST(ExtraOpsTest, MeanVarianceNormalizationOverChosenAxes) {
  const Tensor out = run_op("mean_variance_normalization", {f32_tensor({2, 2}, {1, 3, 2, 6})},
                            {{"axes", std::vector<int64_t>{1}}});
  expect_floats_near(out, {-1, 1, -1, 1});
}

TEST(ExtraOpsTest, MeanVarianceNormalizationRejectsBadAxes) {
  EXPECT_THAT(add_node_error("mean_variance_normalization", {{DType::kF32, {2, 3}}}),
              HasSubstr("'axes'"));
  EXPECT_THAT(add_node_error("mean_variance_normalization", {{DType::kF32, {2, 3}}},
                             {{"axes", std::vector<int64_t>{1, -1}}}),
              HasSubstr("repeats"));
}

// ---- lrn ----------------------------------------------------------------------------------------

TEST(ExtraOpsTest, LrnSumsSquaresOverTheChannelWindow) {
  // size 2: channel c's window is [c, c + 1]; alpha / size = 1.5.
  const Tensor out = run_op("lrn", {f32_tensor({1, 3, 1, 1}, {1, 2, 3})},
                            {{"size", 2}, {"alpha", 3.0}, {"beta", 1.0}, {"bias", 1.0}});
  expect_floats_near(out, {1 / 8.5f, 2 / 20.5f, 3 / 14.5f});
}

TEST(ExtraOpsTest, LrnRejectsANonPositiveSize) {
  EXPECT_THAT(add_node_error("lrn", {{DType::kF32, {1, 3, 2, 2}}}, {{"size", 0}}),
              HasSubstr("'size'"));
}

// ---- einsum -------------------------------------------------------------------------------------

TEST(ExtraOpsTest, EinsumBatchMatmul) {
  const Tensor a = f32_tensor({1, 2, 2}, {1, 2, 3, 4});
  const Tensor b = f32_tensor({1, 2, 1}, {5, 6});
  EXPECT_THAT(run_op("einsum", {a, b}, {{"equation", "bij,bjk->bik"}}).to_floats(),
              ElementsAre(17, 39));
}

TEST(ExtraOpsTest, EinsumImplicitOutputSortsLabelsByCharacterCode) {
  // "Ba" has no "->": the output is the labels used once, in character-code order ('B' < 'a').
  const Tensor out =
      run_op("einsum", {f32_tensor({2, 3}, {1, 2, 3, 4, 5, 6})}, {{"equation", "Ba"}});
  EXPECT_EQ(out.shape(), (Shape{2, 3}));
  const Tensor transposed =
      run_op("einsum", {f32_tensor({2, 3}, {1, 2, 3, 4, 5, 6})}, {{"equation", "ba"}});
  EXPECT_EQ(transposed.shape(), (Shape{3, 2}));
  EXPECT_THAT(transposed.to_floats(), ElementsAre(1, 4, 2, 5, 3, 6));
}

TEST(ExtraOpsTest, EinsumDiagonalTraceAndSum) {
  const Tensor x = f32_tensor({2, 2}, {1, 2, 3, 4});
  EXPECT_THAT(run_op("einsum", {x}, {{"equation", "ii->i"}}).to_floats(), ElementsAre(1, 4));
  EXPECT_THAT(run_op("einsum", {x}, {{"equation", "ii"}}).to_floats(), ElementsAre(5));
  EXPECT_THAT(run_op("einsum", {x}, {{"equation", "ij->"}}).to_floats(), ElementsAre(10));
}

TEST(ExtraOpsTest, EinsumBroadcastsEllipsisAndSizeOneDims) {
  const Tensor a = f32_tensor({2, 1, 2}, {1, 2, 3, 4});
  const Tensor b = f32_tensor({3, 2}, {1, 0, 0, 1, 1, 1});
  const Tensor out = run_op("einsum", {a, b}, {{"equation", "...i,...i->..."}});
  EXPECT_EQ(out.shape(), (Shape{2, 3}));
  EXPECT_THAT(out.to_floats(), ElementsAre(1, 2, 3, 3, 4, 7));
}

TEST(ExtraOpsTest, EinsumOnIntegers) {
  const Tensor a = int_tensor(DType::kI32, {3}, {1, 2, 3});
  EXPECT_THAT(run_op("einsum", {a, a}, {{"equation", "i,i"}}).to_ints(), ElementsAre(14));
}

TEST(ExtraOpsTest, EinsumRejectsBadEquations) {
  const TensorType matrix{DType::kF32, {2, 3}};
  EXPECT_THAT(add_node_error("einsum", {matrix}, {{"equation", "ijk"}}), HasSubstr("rank 2"));
  EXPECT_THAT(add_node_error("einsum", {matrix, matrix}, {{"equation", "ij->i"}}),
              HasSubstr("1 input terms for 2 operands"));
  EXPECT_THAT(add_node_error("einsum", {matrix}, {{"equation", "ij->k"}}),
              HasSubstr("'k' is in no input term"));
  EXPECT_THAT(add_node_error("einsum", {matrix, matrix}, {{"equation", "ij,jk->ik"}}),
              HasSubstr("has size 2"));
  EXPECT_THAT(add_node_error("einsum", {matrix}, {{"equation", "i-j"}}),
              HasSubstr("unexpected character"));
}

}  // namespace
}  // namespace kiln::op_test
