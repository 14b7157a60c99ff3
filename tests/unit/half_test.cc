// Tests of the f32 -> f16 / bf16 conversions (ir/half.h): round to nearest even checked against
// the neighbouring 16-bit values over a sweep of f32 bit patterns, the edge cases (subnormals,
// the overflow threshold, infinity, NaN), and the bulk forms against the single-value ones.
#include "ir/half.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <vector>

namespace kiln {
namespace {

// Every 65521st f32 bit pattern (a prime step, so every exponent and many mantissas appear).
std::vector<float> swept_floats() {
  std::vector<float> values;
  for (uint64_t bits = 0; bits <= 0xffffffffull; bits += 65521) {
    values.push_back(std::bit_cast<float>(static_cast<uint32_t>(bits)));
  }
  return values;
}

// Whether `bits` is what rounding `value` to nearest even gives, judged by the distances (in
// double, exact here) to the two neighbouring values of the format.
template <class ToFloat>
bool rounds_to_nearest_even(float value, uint16_t bits, ToFloat to_float) {
  const double got = to_float(bits);
  const double distance = std::fabs(got - value);
  for (const int step : {-1, 1}) {
    const uint16_t neighbour_bits = static_cast<uint16_t>(bits + step);
    const double neighbour = to_float(neighbour_bits);
    if (std::isnan(neighbour)) continue;  // past the largest or below zero's bit patterns
    const double neighbour_distance = std::fabs(neighbour - value);
    if (neighbour_distance < distance) return false;
    if (neighbour_distance == distance && (bits & 1u)) return false;
  }
  return true;
}

TEST(HalfTest, RoundsFiniteFloatsToNearestEven) {
  int checked = 0;
  for (const float value : swept_floats()) {
    if (!std::isfinite(value) || std::fabs(value) >= 65520.0f) continue;
    const uint16_t bits = float_to_half_bits(value);
    ASSERT_TRUE(rounds_to_nearest_even(value, bits, half_bits_to_float))
        << value << " gave 0x" << std::hex << bits;
    ++checked;
  }
  EXPECT_GT(checked, 20000);
}

TEST(HalfTest, BreaksTiesToEvenAndHandlesSubnormalsOverflowInfinityAndNaN) {
  const float half_ulp_of_one = std::ldexp(1.0f, -11);
  EXPECT_EQ(float_to_half_bits(1 + half_ulp_of_one), 0x3c00);      // a tie: to even (1)
  EXPECT_EQ(float_to_half_bits(1 + 3 * half_ulp_of_one), 0x3c02);  // a tie: to even, up
  EXPECT_EQ(float_to_half_bits(-(1 + 3 * half_ulp_of_one)), 0xbc02);
  const float smallest_subnormal = std::ldexp(1.0f, -24);
  EXPECT_EQ(float_to_half_bits(smallest_subnormal), 0x0001);
  EXPECT_EQ(float_to_half_bits(smallest_subnormal / 2), 0x0000);      // a tie: to even (zero)
  EXPECT_EQ(float_to_half_bits(smallest_subnormal * 1.5f), 0x0002);   // a tie: to even (2)
  EXPECT_EQ(float_to_half_bits(-smallest_subnormal * 2.5f), 0x8002);  // a tie: to even (2)
  EXPECT_EQ(float_to_half_bits(std::ldexp(1.0f, -14) * (1 - 1.0f / 4096)), 0x0400);  // to normal
  EXPECT_EQ(float_to_half_bits(-0.0f), 0x8000);
  EXPECT_EQ(float_to_half_bits(65504.0f), 0x7bff);
  EXPECT_EQ(float_to_half_bits(65519.996f), 0x7bff);
  EXPECT_EQ(float_to_half_bits(65520.0f), 0x7c00);  // a tie between 65504 and 2^16: infinity
  EXPECT_EQ(float_to_half_bits(-1e30f), 0xfc00);
  EXPECT_EQ(float_to_half_bits(-INFINITY), 0xfc00);
  EXPECT_EQ(float_to_half_bits(std::bit_cast<float>(0x7f800001u)), 0x7e00);  // NaN: quiet
  EXPECT_EQ(float_to_half_bits(std::bit_cast<float>(0xffc12345u)), 0xfe00);  // keeps the sign
}

TEST(HalfTest, RoundsFiniteFloatsToNearestEvenBFloat16) {
  for (const float value : swept_floats()) {
    if (!std::isfinite(value) || std::fabs(value) >= 0x1.ffp127f) continue;
    const uint16_t bits = float_to_bfloat16_bits(value);
    ASSERT_TRUE(rounds_to_nearest_even(value, bits, bfloat16_bits_to_float))
        << value << " gave 0x" << std::hex << bits;
  }
  EXPECT_EQ(float_to_bfloat16_bits(std::bit_cast<float>(0x7f800001u)), 0x7fc0);  // NaN: quiet
}

TEST(HalfTest, BulkConversionsMatchSingleValues) {
  const std::vector<float> values = swept_floats();
  std::vector<uint16_t> half(values.size()), bfloat16(values.size());
  floats_to_half_bits(values, half);
  floats_to_bfloat16_bits(values, bfloat16);
  for (size_t i = 0; i < values.size(); ++i) {
    ASSERT_EQ(half[i], float_to_half_bits(values[i])) << i;
    ASSERT_EQ(bfloat16[i], float_to_bfloat16_bits(values[i])) << i;
  }
}

}  // namespace
}  // namespace kiln
