// Tests that the reference kernels, the oracle every GPU test is judged by, sum many terms in
// double for float inputs (ir/ops/nn_*.cc): sums and statistics that lose their low bits in an
// f32 running sum (issue 14's measured failures) must match a double computation rounded once.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "ir/tensor.h"
#include "op_test_util.h"

namespace kiln::op_test {
namespace {

// From 2^24 on, f32 values are 2 apart: an f32 running sum of ones stops growing there.
constexpr float kTwoTo24 = 16777216.0f;

std::vector<float> uniform_values(size_t count, uint32_t seed) {
  std::mt19937 generator(seed);
  std::uniform_real_distribution<float> unit(0.0f, 1.0f);
  std::vector<float> values(count);
  for (float& value : values) value = unit(generator);
  return values;
}

double sum_in_double(const std::vector<float>& values) {
  double sum = 0;
  for (float value : values) sum += value;
  return sum;
}

// (x - mean) / sqrt(variance + epsilon) of every value, all in double.
std::vector<double> normalized_in_double(const std::vector<float>& values, double epsilon) {
  const double mean = sum_in_double(values) / static_cast<double>(values.size());
  double squares = 0;
  for (float value : values) squares += (value - mean) * (value - mean);
  const double inv_std = 1 / std::sqrt(squares / static_cast<double>(values.size()) + epsilon);
  std::vector<double> result;
  for (float value : values) result.push_back((value - mean) * inv_std);
  return result;
}

// The largest |actual - expected| over the elements.
double max_error(const Tensor& actual, const std::vector<double>& expected) {
  double error = 0;
  for (size_t i = 0; i < expected.size(); ++i) {
    error = std::max(error, std::abs(actual.get_double(static_cast<int64_t>(i)) - expected[i]));
  }
  return error;
}

TEST(ReferenceAccuracyTest, ReduceSumCountsOnesPastTwoToThe24) {
  const int64_t count = (int64_t{1} << 24) + 16;
  const Tensor ones = f32_tensor({count}, std::vector<float>(static_cast<size_t>(count), 1.0f));
  EXPECT_DOUBLE_EQ(run_op("reduce_sum", {ones}).get_double(0), static_cast<double>(count));
}

TEST(ReferenceAccuracyTest, ReduceSumAndMeanOfTwoToThe25UniformValues) {
  const std::vector<float> values = uniform_values(size_t{1} << 25, 14);
  const Tensor x = f32_tensor({static_cast<int64_t>(values.size())}, values);
  const double sum = sum_in_double(values);
  // Within half an f32 ulp of the double sum (ulp 2 near 2^24): rounded once.
  EXPECT_NEAR(run_op("reduce_sum", {x}).get_float(0), sum, 1.0);
  EXPECT_NEAR(run_op("reduce_mean", {x}).get_float(0), sum / static_cast<double>(values.size()),
              1e-7);
}

// Data with mean 1e4 and standard deviation 1e-2: an f32 mean is off by a sizable part of the
// deviation, and every normalized value with it.
TEST(ReferenceAccuracyTest, NormalizationsOfDataFarFromZero) {
  constexpr int64_t kCount = 4096;
  std::mt19937 generator(14);
  std::normal_distribution<float> noise(0.0f, 1e-2f);
  std::vector<float> values(kCount);
  for (float& value : values) value = 1e4f + noise(generator);
  const double epsilon = 1e-5;
  const std::vector<double> expected = normalized_in_double(values, epsilon);
  const Tensor x = f32_tensor({1, 1, kCount}, values);
  const Tensor one = f32_tensor({1}, {1}), zero = f32_tensor({1}, {0});
  const Tensor scale = f32_tensor({kCount}, std::vector<float>(kCount, 1));
  EXPECT_LT(max_error(run_op("layer_normalization", {x, scale}, {{"epsilon", epsilon}}), expected),
            1e-3);
  EXPECT_LT(
      max_error(run_op("instance_normalization", {x, one, zero}, {{"epsilon", epsilon}}), expected),
      1e-3);
  EXPECT_LT(max_error(run_op("group_normalization", {x, one, zero},
                             {{"num_groups", int64_t{1}}, {"epsilon", epsilon}}),
                      expected),
            1e-3);
  // mean_variance_normalization divides by sqrt(variance) + 1e-9: no epsilon under the root.
  EXPECT_LT(max_error(run_op("mean_variance_normalization", {x},
                             {{"axes", std::vector<int64_t>{0, 1, 2}}}),
                      normalized_in_double(values, 0)),
            1e-3);
}

// exp(-17) is below half an f32 ulp of 1: an f32 sum of 1 and 2^20 of them stays 1.
TEST(ReferenceAccuracyTest, SoftmaxSumsManySmallExponentials) {
  std::vector<float> values(size_t{1} << 20, -17.0f);
  values[0] = 0;
  const double sum = 1 + static_cast<double>(values.size() - 1) * std::exp(-17.0);
  EXPECT_NEAR(
      run_op("softmax", {f32_tensor({static_cast<int64_t>(values.size())}, values)}).get_float(0),
      1 / sum, 1e-6);
}

// Every op that sums, on the three terms 2^24 + 1 + 1: an f32 running sum gives 2^24.
TEST(ReferenceAccuracyTest, EverySummingOpKeepsTheOnesAnF32SumDrops) {
  const std::vector<float> terms = {kTwoTo24, 1, 1}, ones = {1, 1, 1};
  const double exact = kTwoTo24 + 2.0;
  const Tensor row = f32_tensor({1, 3}, terms), column = f32_tensor({3, 1}, ones);
  const Tensor signal = f32_tensor({1, 1, 3}, terms);
  EXPECT_DOUBLE_EQ(run_op("reduce_sum", {row}).get_double(0), exact);
  EXPECT_DOUBLE_EQ(run_op("cum_sum", {row}, {{"axis", int64_t{1}}}).get_double(2), exact);
  EXPECT_DOUBLE_EQ(run_op("matmul", {row, column}).get_double(0), exact);
  EXPECT_DOUBLE_EQ(run_op("gemm", {row, column}).get_double(0), exact);
  EXPECT_DOUBLE_EQ(run_op("einsum", {f32_tensor({3}, terms), f32_tensor({3}, ones)},
                          {{"equation", std::string("i,i->")}})
                       .get_double(0),
                   exact);
  EXPECT_DOUBLE_EQ(run_op("conv", {signal, f32_tensor({1, 1, 3}, ones)}).get_double(0), exact);
  EXPECT_DOUBLE_EQ(
      run_op("conv_transpose", {f32_tensor({1, 3, 1}, terms), f32_tensor({3, 1, 1}, ones)})
          .get_double(0),
      exact);
  EXPECT_DOUBLE_EQ(run_op("global_average_pool", {signal}).get_double(0), exact / 3);
  EXPECT_DOUBLE_EQ(
      run_op("average_pool", {signal}, {{"kernel_shape", std::vector<int64_t>{3}}}).get_double(0),
      exact / 3);
}

}  // namespace
}  // namespace kiln::op_test
