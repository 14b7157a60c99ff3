// Tests of attribute equality (used by common-subexpression-elimination).
#include "ir/attribute.h"

#include <gtest/gtest.h>

#include <cmath>

namespace kiln {
namespace {

TEST(AttributeTest, EqualityComparesKindAndValue) {
  EXPECT_EQ(Attribute(int64_t{3}), Attribute(int64_t{3}));
  EXPECT_FALSE(Attribute(int64_t{3}) == Attribute(3.0));  // int vs float
  EXPECT_EQ(Attribute(std::vector<int64_t>{1, 2}), Attribute(std::vector<int64_t>{1, 2}));
  EXPECT_FALSE(Attribute(std::vector<int64_t>{1, 2}) == Attribute(std::vector<int64_t>{2, 1}));
  EXPECT_EQ(Attribute("tanh"), Attribute("tanh"));
  EXPECT_EQ(Attribute(DType::kF16), Attribute(DType::kF16));
  EXPECT_FALSE(Attribute(DType::kF16) == Attribute(DType::kBF16));
  EXPECT_FALSE(Attribute(std::nan("")) == Attribute(std::nan("")));  // floats compare with ==
}

TEST(AttributeTest, TensorsCompareByTypeAndBytes) {
  const Tensor a = Tensor::from_vector(DType::kF32, {2}, std::vector<double>{1.0, 2.0});
  EXPECT_EQ(Attribute(a), Attribute(a.clone()));
  EXPECT_FALSE(Attribute(a) == Attribute(a.reshaped({2, 1})));
  EXPECT_FALSE(Attribute(a) ==
               Attribute(Tensor::from_vector(DType::kF32, {2}, std::vector<double>{1.0, 3.0})));
  const Tensor nan = Tensor::from_vector(DType::kF32, {1}, std::vector<double>{std::nan("")});
  EXPECT_EQ(Attribute(nan), Attribute(nan.clone()));  // same bits
}

}  // namespace
}  // namespace kiln
