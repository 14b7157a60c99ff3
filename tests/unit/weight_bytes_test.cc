// Tests of WeightBytes (runtime/program.h): a copied Program shares its weight bytes, writing
// through one copy leaves the other's bytes as they were, and equality compares the bytes.
#include <gtest/gtest.h>

#include <vector>

#include "runtime/program.h"

namespace kiln {
namespace {

TEST(WeightBytes, CopiesShareTheBytesUntilOneIsWritten) {
  Program program;
  program.weights.assign(size_t{1024}, uint8_t{7});
  const Program copy = program;
  EXPECT_TRUE(copy.weights.shares_bytes_with(program.weights));
  EXPECT_EQ(copy.weights.data(), program.weights.data());

  program.weights.mutable_bytes()[3] = 9;
  EXPECT_FALSE(copy.weights.shares_bytes_with(program.weights));
  EXPECT_EQ(copy.weights.bytes()[3], 7);
  EXPECT_EQ(program.weights.bytes()[3], 9);
  EXPECT_NE(copy.weights, program.weights);

  program.weights.mutable_bytes()[3] = 7;  // equal bytes, held apart
  EXPECT_EQ(copy.weights, program.weights);
  EXPECT_FALSE(copy.weights.shares_bytes_with(program.weights));
}

TEST(WeightBytes, EmptyHoldsNothingAndEqualsEmpty) {
  WeightBytes none;
  EXPECT_TRUE(none.empty());
  EXPECT_EQ(none.size(), 0u);
  EXPECT_EQ(none, WeightBytes(std::vector<uint8_t>()));
  EXPECT_FALSE(none.shares_bytes_with(WeightBytes()));
  WeightBytes some(std::vector<uint8_t>{1, 2, 3});
  some.clear();
  EXPECT_EQ(some, none);
}

}  // namespace
}  // namespace kiln
