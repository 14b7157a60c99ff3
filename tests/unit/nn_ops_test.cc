// Tests of the neural-network ops' shape functions and reference kernels (ir/ops/nn_*.cc):
// small graphs run on the reference interpreter against hand-computed values, plus the errors
// bad operands and attributes raise.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "ir/tensor.h"
#include "op_test_util.h"

namespace kiln::op_test {
namespace {

using ::testing::ElementsAre;
using ::testing::FloatNear;
using ::testing::HasSubstr;
using ::testing::Pointwise;

std::vector<int64_t> ints(std::initializer_list<int64_t> values) { return values; }

// ---- conv, conv_transpose ---------------------------------------------------------------------

TEST(NnOpsTest, ConvWithPaddingAndStride) {
  // 1x1x3x3 input 0..8, 2x2 kernel of ones, pads 1 at the beginning only, stride 2.
  const Tensor y = run_op(
      "conv", {iota_tensor(DType::kF32, {1, 1, 3, 3}), f32_tensor({1, 1, 2, 2}, {1, 1, 1, 1})},
      {{"strides", ints({2, 2})}, {"pads", ints({1, 1, 0, 0})}});
  EXPECT_EQ(y.shape(), (Shape{1, 1, 2, 2}));
  EXPECT_EQ(y.to_floats(), (std::vector<float>{0, 1 + 2, 3 + 6, 4 + 5 + 7 + 8}));
}

TEST(NnOpsTest, ConvAddsTheBiasPerChannel) {
  const Tensor y = run_op("conv", {f32_tensor({1, 1, 1, 2}, {1, 2}),
                                   f32_tensor({2, 1, 1, 1}, {1, -1}), f32_tensor({2}, {10, 20})});
  EXPECT_EQ(y.to_floats(), (std::vector<float>{11, 12, 19, 18}));
}

TEST(NnOpsTest, ConvInF16RoundsTheResult) {
  Tensor x(DType::kF16, {1, 1, 1, 1});
  x.set_float(0, 1.0f);
  Tensor w(DType::kF16, {1, 1, 1, 1});
  w.set_float(0, 1.0009765625f);  // 1 + 2^-10, exact in f16
  const Tensor y = run_op("conv", {x, w});
  EXPECT_EQ(y.dtype(), DType::kF16);
  EXPECT_EQ(y.get_float(0), 1.0009765625f);
}

TEST(NnOpsTest, ConvRejectsAChannelMismatch) {
  EXPECT_THAT(add_node_error("conv", {{DType::kF32, {1, 3, 5, 5}}, {DType::kF32, {4, 2, 3, 3}}}),
              HasSubstr("does not fit 3 input channels in 1 groups"));
}

TEST(NnOpsTest, ConvRejectsIntegers) {
  EXPECT_THAT(add_node_error("conv", {{DType::kI32, {1, 1, 5}}, {DType::kI32, {1, 1, 3}}}),
              HasSubstr("operand 0 (X) must be a float tensor, got i32"));
}

TEST(NnOpsTest, ConvRejectsAKernelLargerThanThePaddedInput) {
  EXPECT_THAT(add_node_error("conv", {{DType::kF32, {1, 1, 2}}, {DType::kF32, {1, 1, 3}}}),
              HasSubstr("kernel extent 3 exceeds the padded input 2"));
}

TEST(NnOpsTest, ConvTransposeScattersEachInput) {
  // Stride 2, kernel [1, 10]: each input x lands at 2i (x) and 2i+1 (10x); output_padding 1.
  const Tensor y =
      run_op("conv_transpose", {f32_tensor({1, 1, 3}, {1, 2, 3}), f32_tensor({1, 1, 2}, {1, 10})},
             {{"strides", ints({2})}, {"output_padding", ints({1})}});
  EXPECT_EQ(y.shape(), (Shape{1, 1, 7}));
  EXPECT_EQ(y.to_floats(), (std::vector<float>{1, 10, 2, 20, 3, 30, 0}));
}

TEST(NnOpsTest, ConvTransposeOverlapsAndCropsPads) {
  // Stride 1, kernel [1, 1]: y = [1, 3, 5, 3]; pads [1, 0] drop the first element.
  const Tensor y =
      run_op("conv_transpose", {f32_tensor({1, 1, 3}, {1, 2, 3}), f32_tensor({1, 1, 2}, {1, 1})},
             {{"pads", ints({1, 0})}});
  EXPECT_EQ(y.to_floats(), (std::vector<float>{3, 5, 3}));
}

// ---- gemm, matmul -----------------------------------------------------------------------------

TEST(NnOpsTest, GemmWithTransposesAlphaBetaAndBroadcastBias) {
  // A^T = [[1,2],[3,4]], B^T = [[1,0],[0,1]] -> A^T B^T = A^T; 2·that + 10·[1, 2].
  const Tensor y = run_op(
      "gemm",
      {f32_tensor({2, 2}, {1, 3, 2, 4}), f32_tensor({2, 2}, {1, 0, 0, 1}), f32_tensor({2}, {1, 2})},
      {{"transA", int64_t{1}}, {"transB", int64_t{1}}, {"alpha", 2.0}, {"beta", 10.0}});
  EXPECT_EQ(y.to_floats(), (std::vector<float>{12, 24, 16, 28}));
}

TEST(NnOpsTest, GemmRejectsMismatchedInnerDims) {
  EXPECT_THAT(add_node_error("gemm", {{DType::kF32, {2, 3}}, {DType::kF32, {2, 3}}}),
              HasSubstr("inner dimensions differ"));
}

TEST(NnOpsTest, GemmRejectsABiasThatDoesNotBroadcast) {
  EXPECT_THAT(
      add_node_error("gemm", {{DType::kF32, {2, 3}}, {DType::kF32, {3, 4}}, {DType::kF32, {3}}}),
      HasSubstr("does not broadcast to the result [2,4]"));
}

TEST(NnOpsTest, MatMulBroadcastsBatches) {
  // A [2,1,2,2] (two batches), B [3,2,1]: result [2,3,2,1].
  const Tensor y = run_op(
      "matmul", {iota_tensor(DType::kF32, {2, 1, 2, 2}), iota_tensor(DType::kF32, {3, 2, 1})});
  EXPECT_EQ(y.shape(), (Shape{2, 3, 2, 1}));
  EXPECT_EQ(y.to_floats(), (std::vector<float>{1, 3, 3, 13, 5, 23, 5, 7, 23, 33, 41, 59}));
}

TEST(NnOpsTest, MatMulOneDimensionalOperands) {
  EXPECT_EQ(run_op("matmul", {f32_tensor({3}, {1, 2, 3}), f32_tensor({3}, {4, 5, 6})}).shape(),
            Shape{});
  const Tensor vector_matrix =
      run_op("matmul", {f32_tensor({2}, {1, 2}), iota_tensor(DType::kF32, {2, 3})});
  EXPECT_EQ(vector_matrix.shape(), (Shape{3}));
  EXPECT_EQ(vector_matrix.to_floats(), (std::vector<float>{6, 9, 12}));
  const Tensor matrix_vector =
      run_op("matmul", {iota_tensor(DType::kF32, {2, 2, 3}), f32_tensor({3}, {1, 0, 1})});
  EXPECT_EQ(matrix_vector.shape(), (Shape{2, 2}));
  EXPECT_EQ(matrix_vector.to_floats(), (std::vector<float>{2, 8, 14, 20}));
}

TEST(NnOpsTest, MatMulOfInt32WrapsLikeInt32) {
  const Tensor y =
      run_op("matmul", {Tensor::from_vector(DType::kI32, {1, 1}, std::vector<int64_t>{65536}),
                        Tensor::from_vector(DType::kI32, {1, 1}, std::vector<int64_t>{65537})});
  EXPECT_EQ(y.dtype(), DType::kI32);
  EXPECT_EQ(y.get_int(0), 65536);  // 2^32 + 2^16 wraps to 2^16
}

TEST(NnOpsTest, MatMulRejectsMismatchedInnerDims) {
  EXPECT_THAT(add_node_error("matmul", {{DType::kF32, {2, 3}}, {DType::kF32, {2, 3}}}),
              HasSubstr("inner dimensions differ: A is [2,3], B is [2,3]"));
}

// ---- normalizations ---------------------------------------------------------------------------

TEST(NnOpsTest, BatchNormalizationPerChannel) {
  // Channel 0: (x - 1) / sqrt(4) · 2 + 1; channel 1: (x - 0) / 1 · 1 + 0 (epsilon 0).
  const Tensor y =
      run_op("batch_normalization",
             {f32_tensor({1, 2, 2}, {3, 5, 7, -1}), f32_tensor({2}, {2, 1}),
              f32_tensor({2}, {1, 0}), f32_tensor({2}, {1, 0}), f32_tensor({2}, {4, 1})},
             {{"epsilon", 0.0}});
  EXPECT_EQ(y.to_floats(), (std::vector<float>{3, 5, 7, -1}));
}

TEST(NnOpsTest, BatchNormalizationRejectsWrongStatShapes) {
  const TensorType x{DType::kF32, {1, 3, 4}}, vec{DType::kF32, {3}}, bad{DType::kF32, {2}};
  EXPECT_THAT(add_node_error("batch_normalization", {x, vec, vec, bad, vec}),
              HasSubstr("operand 3 (input_mean) must be [3]"));
}

TEST(NnOpsTest, InstanceNormalizationNormalizesEachPlane) {
  const Tensor y = run_op(
      "instance_normalization",
      {f32_tensor({1, 2, 2}, {1, 3, 10, 10}), f32_tensor({2}, {1, 2}), f32_tensor({2}, {0, 5})},
      {{"epsilon", 0.0}});
  // Plane 0: mean 2, std 1 -> [-1, 1]; plane 1 has zero variance (eps 0) -> NaN.
  EXPECT_FLOAT_EQ(y.get_float(0), -1.0f);
  EXPECT_FLOAT_EQ(y.get_float(1), 1.0f);
  EXPECT_TRUE(std::isnan(y.get_float(2)));
}

TEST(NnOpsTest, LayerNormalizationOverTrailingAxes) {
  const Tensor y =
      run_op("layer_normalization",
             {f32_tensor({2, 2}, {1, 3, 5, 5}), f32_tensor({2}, {2, 2}), f32_tensor({2}, {0, 1})},
             {{"epsilon", 0.0}});
  // Row 0: mean 2, std 1 -> [-1, 1]·2 + [0, 1]; row 1 has zero variance (eps 0) -> NaN.
  EXPECT_FLOAT_EQ(y.get_float(0), -2.0f);
  EXPECT_FLOAT_EQ(y.get_float(1), 3.0f);
  EXPECT_TRUE(std::isnan(y.get_float(2)));
}

TEST(NnOpsTest, LayerNormalizationWithStatsReturnsMeanAndInverseStdDev) {
  const std::vector<Tensor> results = run_op_results(
      "layer_normalization_with_stats", {f32_tensor({2, 2}, {1, 3, 4, 8}), f32_tensor({2}, {1, 1})},
      {{"epsilon", 0.0}});
  ASSERT_EQ(results.size(), 3u);
  EXPECT_EQ(results[1].shape(), (Shape{2, 1}));
  EXPECT_EQ(results[1].to_floats(), (std::vector<float>{2, 6}));
  EXPECT_EQ(results[2].to_floats(), (std::vector<float>{1, 0.5}));
  EXPECT_EQ(results[0].to_floats(), (std::vector<float>{-1, 1, -1, 1}));
}

TEST(NnOpsTest, LayerNormalizationRejectsAScaleThatDoesNotBroadcast) {
  EXPECT_THAT(add_node_error("layer_normalization", {{DType::kF32, {2, 4}}, {DType::kF32, {3}}}),
              HasSubstr("operand 1 (Scale) [3] does not broadcast to X [2,4]"));
}

TEST(NnOpsTest, RmsNormalizationDividesByTheRootMeanSquare) {
  const Tensor y =
      run_op("rms_normalization", {f32_tensor({2, 2}, {3, 4, 0, 0}), f32_tensor({2}, {2, 1})},
             {{"epsilon", 0.5}});
  // Row 0: mean of squares 12.5, + 0.5 -> 1/sqrt(13); row 1 is zero, kept finite by epsilon.
  const float inv_rms = 1 / std::sqrt(13.0f);
  EXPECT_FLOAT_EQ(y.get_float(0), 3 * inv_rms * 2);
  EXPECT_FLOAT_EQ(y.get_float(1), 4 * inv_rms);
  EXPECT_EQ(y.get_float(2), 0.0f);
  EXPECT_EQ(y.get_float(3), 0.0f);
}

TEST(NnOpsTest, RmsNormalizationOverTheLastTwoAxes) {
  const Tensor y =
      run_op("rms_normalization", {f32_tensor({1, 2, 2}, {1, -1, 1, -1}), f32_tensor({1}, {3})},
             {{"axis", int64_t{1}}, {"epsilon", 0.0}});
  EXPECT_EQ(y.to_floats(), (std::vector<float>{3, -3, 3, -3}));
}

TEST(NnOpsTest, RmsNormalizationRejectsAScaleThatDoesNotBroadcast) {
  EXPECT_THAT(add_node_error("rms_normalization", {{DType::kF32, {2, 4}}, {DType::kF32, {3}}}),
              HasSubstr("operand 1 (Scale) [3] does not broadcast to X [2,4]"));
}

// ---- softmax ----------------------------------------------------------------------------------

TEST(NnOpsTest, SoftmaxAndLogSoftmaxAlongAnAxis) {
  const Tensor x = f32_tensor({2, 2}, {0, 1000, std::log(3.0f), 0});
  const Tensor y = run_op("softmax", {x}, {{"axis", int64_t{0}}});
  EXPECT_THAT(y.to_floats(), Pointwise(FloatNear(1e-6), std::vector<float>{0.25, 1, 0.75, 0}));
  const Tensor log_y = run_op("log_softmax", {f32_tensor({2}, {0, 0})});
  EXPECT_THAT(log_y.to_floats(),
              Pointwise(FloatNear(1e-6), std::vector<float>{-std::log(2.0f), -std::log(2.0f)}));
}

TEST(NnOpsTest, SoftmaxRejectsIntegersAndBadAxes) {
  EXPECT_THAT(add_node_error("softmax", {{DType::kI64, {3}}}),
              HasSubstr("must be a float tensor, got i64"));
  EXPECT_THAT(add_node_error("softmax", {{DType::kF32, {3}}}, {{"axis", int64_t{1}}}),
              HasSubstr("axis 1 is out of range for rank 1"));
}

// ---- reductions -------------------------------------------------------------------------------

TEST(NnOpsTest, ReductionsOverChosenAxes) {
  const Tensor x = iota_tensor(DType::kF32, {2, 3}, 1);  // [[1,2,3],[4,5,6]]
  EXPECT_EQ(run_op("reduce_sum", {x}, {{"axes", ints({1})}}).to_floats(),
            (std::vector<float>{6, 15}));
  const Tensor mean = run_op("reduce_mean", {x}, {{"axes", ints({0})}, {"keepdims", int64_t{0}}});
  EXPECT_EQ(mean.shape(), (Shape{3}));
  EXPECT_EQ(mean.to_floats(), (std::vector<float>{2.5, 3.5, 4.5}));
  EXPECT_EQ(run_op("reduce_max", {x}).to_floats(), (std::vector<float>{6}));
  EXPECT_EQ(run_op("reduce_min", {x}).shape(), (Shape{1, 1}));
  EXPECT_EQ(run_op("reduce_prod", {x}, {{"axes", ints({1})}}).to_floats(),
            (std::vector<float>{6, 120}));
  EXPECT_EQ(run_op("reduce_sum_square", {x}, {{"axes", ints({0})}}).to_floats(),
            (std::vector<float>{17, 29, 45}));
  EXPECT_EQ(run_op("reduce_l1", {f32_tensor({2}, {-3, 4})}).to_floats(), (std::vector<float>{7}));
  EXPECT_EQ(run_op("reduce_l2", {f32_tensor({2}, {-3, 4})}).to_floats(), (std::vector<float>{5}));
  EXPECT_THAT(run_op("reduce_log_sum_exp", {f32_tensor({2}, {1000, 1000})}).to_floats(),
              Pointwise(FloatNear(1e-3), std::vector<float>{1000 + std::log(2.0f)}));
}

TEST(NnOpsTest, ReduceWithEmptyAxesAndNoopIsTheIdentity) {
  const Tensor x = iota_tensor(DType::kI64, {2, 2});
  const Tensor y = run_op("reduce_sum", {x}, {{"noop_with_empty_axes", int64_t{1}}});
  EXPECT_EQ(y.shape(), (Shape{2, 2}));
  EXPECT_EQ(y.to_ints(), x.to_ints());
}

TEST(NnOpsTest, ReducingAnEmptySetGivesTheIdentity) {
  const Tensor empty(DType::kF32, {2, 0});
  const AttributeMap axis1 = {{"axes", ints({1})}, {"keepdims", int64_t{0}}};
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(run_op("reduce_sum", {empty}, axis1).to_floats(), (std::vector<float>{0, 0}));
  EXPECT_EQ(run_op("reduce_prod", {empty}, axis1).to_floats(), (std::vector<float>{1, 1}));
  EXPECT_EQ(run_op("reduce_max", {empty}, axis1).to_floats(), (std::vector<float>{-inf, -inf}));
  EXPECT_EQ(run_op("reduce_min", {empty}, axis1).to_floats(), (std::vector<float>{inf, inf}));
  EXPECT_EQ(run_op("reduce_log_sum", {empty}, axis1).to_floats(), (std::vector<float>{-inf, -inf}));
  EXPECT_EQ(run_op("reduce_log_sum_exp", {empty}, axis1).to_floats(),
            (std::vector<float>{-inf, -inf}));
  const Tensor empty_u8(DType::kU8, {0});
  EXPECT_EQ(run_op("reduce_min", {empty_u8}).get_int(0), 255);
}

TEST(NnOpsTest, ReduceRejectsRepeatedAxesAndBool) {
  EXPECT_THAT(add_node_error("reduce_sum", {{DType::kF32, {2, 2}}}, {{"axes", ints({1, -1})}}),
              HasSubstr("repeats axis"));
  EXPECT_THAT(add_node_error("reduce_sum", {{DType::kBool, {2}}}),
              HasSubstr("must be a numeric tensor, got bool"));
}

TEST(NnOpsTest, ArgMaxAndArgMinBreakTies) {
  const Tensor x = f32_tensor({2, 3}, {1, 5, 5, 2, 2, 0});
  EXPECT_EQ(run_op("arg_max", {x}, {{"axis", int64_t{1}}}).to_ints(), (std::vector<int64_t>{1, 0}));
  const Tensor last =
      run_op("arg_max", {x},
             {{"axis", int64_t{1}}, {"select_last_index", int64_t{1}}, {"keepdims", int64_t{0}}});
  EXPECT_EQ(last.shape(), (Shape{2}));
  EXPECT_EQ(last.to_ints(), (std::vector<int64_t>{2, 1}));
  EXPECT_EQ(run_op("arg_min", {x}, {{"axis", int64_t{0}}}).to_ints(),
            (std::vector<int64_t>{0, 1, 1}));
}

// ---- pooling ----------------------------------------------------------------------------------

TEST(NnOpsTest, GlobalPools) {
  const Tensor x = iota_tensor(DType::kF32, {1, 2, 2, 2});
  const Tensor average = run_op("global_average_pool", {x});
  EXPECT_EQ(average.shape(), (Shape{1, 2, 1, 1}));
  EXPECT_EQ(average.to_floats(), (std::vector<float>{1.5, 5.5}));
  EXPECT_EQ(run_op("global_max_pool", {x}).to_floats(), (std::vector<float>{3, 7}));
}

TEST(NnOpsTest, AveragePoolCountsPaddingOnlyWhenAsked) {
  const Tensor x = f32_tensor({1, 1, 3}, {3, 6, 9});
  const AttributeMap attrs = {
      {"kernel_shape", ints({2})}, {"pads", ints({1, 0})}, {"strides", ints({2})}};
  EXPECT_EQ(run_op("average_pool", {x}, attrs).to_floats(), (std::vector<float>{3, 7.5}));
  AttributeMap with_pad = attrs;
  with_pad["count_include_pad"] = int64_t{1};
  EXPECT_EQ(run_op("average_pool", {x}, with_pad).to_floats(), (std::vector<float>{1.5, 7.5}));
}

TEST(NnOpsTest, PoolCeilModeAddsAPartialWindow) {
  const Tensor x = f32_tensor({1, 1, 5}, {1, 2, 3, 4, 5});
  const AttributeMap attrs = {
      {"kernel_shape", ints({2})}, {"strides", ints({2})}, {"ceil_mode", int64_t{1}}};
  EXPECT_EQ(run_op("max_pool", {x}, attrs).to_floats(), (std::vector<float>{2, 4, 5}));
  EXPECT_EQ(run_op("average_pool", {x}, attrs).to_floats(), (std::vector<float>{1.5, 3.5, 5}));
}

TEST(NnOpsTest, MaxPoolWithIndicesInBothStorageOrders) {
  const Tensor x = f32_tensor({1, 1, 2, 3}, {1, 9, 2, 8, 3, 7});
  const AttributeMap attrs = {{"kernel_shape", ints({2, 2})}};
  const std::vector<Tensor> row_major = run_op_results("max_pool_with_indices", {x}, attrs);
  EXPECT_EQ(row_major[0].to_floats(), (std::vector<float>{9, 9}));
  EXPECT_EQ(row_major[1].dtype(), DType::kI64);
  EXPECT_EQ(row_major[1].to_ints(), (std::vector<int64_t>{1, 1}));
  AttributeMap column_attrs = attrs;
  column_attrs["storage_order"] = int64_t{1};
  // Element (h=0, w=1) is at 0 + 1·2 in column-major order.
  EXPECT_EQ(run_op_results("max_pool_with_indices", {x}, column_attrs)[1].to_ints(),
            (std::vector<int64_t>{2, 2}));
}

TEST(NnOpsTest, PoolRejectsAMissingOrMismatchedKernelShape) {
  EXPECT_THAT(add_node_error("max_pool", {{DType::kF32, {1, 1, 4, 4}}}),
              HasSubstr("missing required attribute 'kernel_shape'"));
  EXPECT_THAT(
      add_node_error("max_pool", {{DType::kF32, {1, 1, 4, 4}}}, {{"kernel_shape", ints({2})}}),
      HasSubstr("'kernel_shape' has 1 values for 2 spatial dims"));
  EXPECT_THAT(
      add_node_error("average_pool", {{DType::kU8, {1, 1, 4}}}, {{"kernel_shape", ints({2})}}),
      HasSubstr("must be a float tensor, got u8"));
}

// ---- top_k, cum_sum, cum_prod -----------------------------------------------------------------

TEST(NnOpsTest, TopKOrdersTiesByIndex) {
  const Tensor x = f32_tensor({1, 5}, {3, 1, 3, 2, 3});
  const std::vector<Tensor> largest = run_op_results("top_k", {x}, {{"k", int64_t{3}}});
  EXPECT_EQ(largest[0].to_floats(), (std::vector<float>{3, 3, 3}));
  EXPECT_EQ(largest[1].to_ints(), (std::vector<int64_t>{0, 2, 4}));
  const std::vector<Tensor> smallest =
      run_op_results("top_k", {x}, {{"k", int64_t{2}}, {"largest", int64_t{0}}});
  EXPECT_EQ(smallest[0].to_floats(), (std::vector<float>{1, 2}));
  EXPECT_EQ(smallest[1].to_ints(), (std::vector<int64_t>{1, 3}));
}

TEST(NnOpsTest, TopKRejectsKLargerThanTheAxis) {
  EXPECT_THAT(add_node_error("top_k", {{DType::kF32, {2, 3}}}, {{"k", int64_t{4}}}),
              HasSubstr("k = 4 is outside [0, 3]"));
}

TEST(NnOpsTest, CumProdExclusiveReverseAndWrapping) {
  const Tensor x = Tensor::from_vector(DType::kI32, {2, 3}, std::vector<int64_t>{1, 2, 3, 4, 5, 6});
  EXPECT_EQ(run_op("cum_prod", {x}, {{"axis", int64_t{1}}}).to_ints(),
            (std::vector<int64_t>{1, 2, 6, 4, 20, 120}));
  EXPECT_EQ(run_op("cum_prod", {x},
                   {{"axis", int64_t{1}}, {"exclusive", int64_t{1}}, {"reverse", int64_t{1}}})
                .to_ints(),
            (std::vector<int64_t>{6, 3, 1, 30, 6, 1}));
  // 65536 · 65536 = 2^32 wraps to 0 in i32.
  const Tensor big = Tensor::from_vector(DType::kI32, {2}, std::vector<int64_t>{65536, 65536});
  EXPECT_EQ(run_op("cum_prod", {big}, {{"axis", int64_t{0}}}).to_ints(),
            (std::vector<int64_t>{65536, 0}));
}

TEST(NnOpsTest, CumSumExclusiveAndReverse) {
  const Tensor x = Tensor::from_vector(DType::kI32, {2, 3}, std::vector<int64_t>{1, 2, 3, 4, 5, 6});
  EXPECT_EQ(run_op("cum_sum", {x}, {{"axis", int64_t{1}}}).to_ints(),
            (std::vector<int64_t>{1, 3, 6, 4, 9, 15}));
  EXPECT_EQ(run_op("cum_sum", {x},
                   {{"axis", int64_t{1}}, {"exclusive", int64_t{1}}, {"reverse", int64_t{1}}})
                .to_ints(),
            (std::vector<int64_t>{5, 3, 0, 11, 6, 0}));
  EXPECT_EQ(run_op("cum_sum", {x}, {{"axis", int64_t{0}}}).to_ints(),
            (std::vector<int64_t>{1, 2, 3, 5, 7, 9}));
}

}  // namespace
}  // namespace kiln::op_test
