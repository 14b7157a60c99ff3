// Regression tests for bugs found reviewing ir/ and ir/ops/: f64 values rounded to f16/bf16 in
// one step, defined float -> integer reads, NaN handling of the max/min reductions, arg_max /
// arg_min, global_max_pool and top_k (as numpy and the ONNX reference have it), and the fusion
// category of batch_normalization.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>

#include "ir/op_registry.h"
#include "ir/tensor.h"
#include "op_test_util.h"

namespace kiln::op_test {
namespace {

// 1 + 2^-11 is halfway between the f16 values 1 and 1 + 2^-10; a hair above it must round up.
// Through f32 the hair is lost and the tie rounds to even (down).
constexpr double kJustAboveHalfTie = 1 + 0x1p-11 + 0x1p-40;

TEST(ReviewIrTest, F64ToF16RoundsOnce) {
  Tensor half(DType::kF16, {1});
  half.set_double(0, kJustAboveHalfTie);
  EXPECT_EQ(half.data<uint16_t>()[0], 0x3c01);  // 1 + 2^-10
  half.set_double(0, -kJustAboveHalfTie);
  EXPECT_EQ(half.data<uint16_t>()[0], 0xbc01);
  half.set_double(0, 1 + 0x1p-11);  // the exact tie still rounds to even
  EXPECT_EQ(half.data<uint16_t>()[0], 0x3c00);
}

TEST(ReviewIrTest, F64ToBF16RoundsOnce) {
  Tensor bf16(DType::kBF16, {1});
  bf16.set_double(0, 1 + 0x1p-8 + 0x1p-40);  // just above the tie between 1 and 1 + 2^-7
  EXPECT_EQ(bf16.data<uint16_t>()[0], 0x3f81);
}

TEST(ReviewIrTest, CastF64ToF16RoundsOnce) {
  const Tensor x = Tensor::from_vector<double>(DType::kF64, {1}, {kJustAboveHalfTie});
  const Tensor y = run_op("cast", {x}, {{"to", DType::kF16}});
  EXPECT_EQ(y.data<uint16_t>()[0], 0x3c01);
}

TEST(ReviewIrTest, FloatReadAsIntegerSaturates) {
  const Tensor x = f32_tensor({4}, {1e30f, -1e30f, kNaN, -2.5f});
  EXPECT_EQ(x.to_ints(), (std::vector<int64_t>{std::numeric_limits<int64_t>::max(),
                                               std::numeric_limits<int64_t>::min(), 0, -2}));
}

TEST(ReviewIrTest, ReduceMaxAndMinPropagateNaN) {
  const Tensor x = f32_tensor({2, 4}, {1, kNaN, 3, kNaN, 2, 5, 5, 1});
  const AttributeMap axis1 = {{"axes", std::vector<int64_t>{1}}, {"keepdims", int64_t{0}}};
  expect_floats_near(run_op("reduce_max", {x}, axis1), {kNaN, 5});
  expect_floats_near(run_op("reduce_min", {x}, axis1), {kNaN, 1});
  // A NaN first in the slice, then numbers.
  expect_floats_near(run_op("reduce_max", {f32_tensor({3}, {kNaN, 1, 2})}), {kNaN});
}

TEST(ReviewIrTest, ArgMaxAndArgMinPickNaN) {
  const Tensor x = f32_tensor({2, 4}, {1, kNaN, 3, kNaN, 2, 5, 5, 1});
  const AttributeMap first = {{"axis", int64_t{1}}, {"keepdims", int64_t{0}}};
  EXPECT_EQ(run_op("arg_max", {x}, first).to_ints(), (std::vector<int64_t>{1, 1}));
  EXPECT_EQ(run_op("arg_min", {x}, first).to_ints(), (std::vector<int64_t>{1, 3}));
  AttributeMap last = first;
  last["select_last_index"] = int64_t{1};
  EXPECT_EQ(run_op("arg_max", {x}, last).to_ints(), (std::vector<int64_t>{3, 2}));
  EXPECT_EQ(run_op("arg_min", {x}, last).to_ints(), (std::vector<int64_t>{3, 3}));
}

TEST(ReviewIrTest, GlobalMaxPoolPropagatesNaN) {
  expect_floats_near(run_op("global_max_pool", {f32_tensor({1, 2, 2}, {1, kNaN, 3, 2})}),
                     {kNaN, 3});
}

TEST(ReviewIrTest, TopKRanksNaNAboveEveryNumber) {
  const Tensor x = f32_tensor({1, 4}, {1, kNaN, 3, 2});
  const std::vector<Tensor> largest = run_op_results("top_k", {x}, {{"k", int64_t{2}}});
  expect_floats_near(largest[0], {kNaN, 3});
  EXPECT_EQ(largest[1].to_ints(), (std::vector<int64_t>{1, 2}));
  const std::vector<Tensor> smallest =
      run_op_results("top_k", {x}, {{"k", int64_t{4}}, {"largest", int64_t{0}}});
  expect_floats_near(smallest[0], {1, 2, 3, kNaN});
  EXPECT_EQ(smallest[1].to_ints(), (std::vector<int64_t>{0, 3, 2, 1}));
}

TEST(ReviewIrTest, BatchNormalizationFusesAsBroadcast) {
  // Inference batch norm maps each element through its channel's affine transform.
  EXPECT_EQ(OpRegistry::global().find("batch_normalization")->category, OpCategory::kBroadcast);
}

}  // namespace
}  // namespace kiln::op_test
