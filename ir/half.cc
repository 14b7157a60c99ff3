// f32 <-> f16 / bf16 and f64 -> f16 / bf16 with round-to-nearest-even.
#include "ir/half.h"

#include <bit>
#include <cmath>
#include <limits>

namespace kiln {
namespace {

// `value` rounded to f32 "to odd": exact when it fits, else whichever f32 neighbour of `value`
// has an odd last mantissa bit. The f32 keeps more than two bits beyond the 16-bit formats'
// mantissas, so rounding it again to nearest even gives what rounding `value` directly would.
float round_to_odd_float(double value) {
  const float nearest = static_cast<float>(value);
  if (static_cast<double>(nearest) == value || std::isnan(value)) return nearest;
  if (std::bit_cast<uint32_t>(nearest) & 1u) return nearest;
  const float toward = value > static_cast<double>(nearest)
                           ? std::numeric_limits<float>::infinity()
                           : -std::numeric_limits<float>::infinity();
  return std::nextafter(nearest, toward);
}

}  // namespace

uint16_t float_to_half_bits(float value) {
  // Without branches, so that whole arrays convert quickly (floats_to_half_bits): each case is
  // computed and the input's range selects one.
  const uint32_t bits = std::bit_cast<uint32_t>(value);
  const uint32_t sign = (bits >> 16) & 0x8000u;
  const uint32_t abs = bits & 0x7fffffffu;
  // Normal: rebias the exponent and round the 13 dropped mantissa bits to nearest even (a carry
  // out of the mantissa correctly bumps the exponent).
  const uint32_t normal = (abs - 0x38000000u + 0xfffu + ((abs >> 13) & 1u)) >> 13;
  // Below the smallest normal half: in 0.5 + |value| one unit in the last place is 2^-24, the
  // smallest half subnormal, so the FPU's addition rounds to nearest even in half subnormal
  // units (reaching 0x400, the smallest normal, when it rounds up from just below it).
  const uint32_t subnormal =
      std::bit_cast<uint32_t>(std::bit_cast<float>(abs) + 0.5f) - std::bit_cast<uint32_t>(0.5f);
  uint32_t half = abs < 0x38800000u ? subnormal : normal;
  half = abs >= 0x477ff000u ? 0x7c00u : half;  // rounds past 65504, or is infinity
  half = abs > 0x7f800000u ? 0x7e00u : half;   // NaN
  return static_cast<uint16_t>(sign | half);
}

float half_bits_to_float(uint16_t bits) {
  const uint32_t sign = static_cast<uint32_t>(bits & 0x8000u) << 16;
  const uint32_t exponent = (bits >> 10) & 0x1fu;
  const uint32_t mantissa = bits & 0x3ffu;
  if (exponent == 0) {
    const float magnitude = std::ldexp(static_cast<float>(mantissa), -24);
    return sign ? -magnitude : magnitude;
  }
  if (exponent == 31) return std::bit_cast<float>(sign | 0x7f800000u | (mantissa << 13));
  return std::bit_cast<float>(sign | ((exponent + 112u) << 23) | (mantissa << 13));
}

uint16_t float_to_bfloat16_bits(float value) {
  const uint32_t bits = std::bit_cast<uint32_t>(value);
  if ((bits & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((bits >> 16) | 0x40u);
  const uint32_t rounding = 0x7fffu + ((bits >> 16) & 1u);
  return static_cast<uint16_t>((bits + rounding) >> 16);
}

float bfloat16_bits_to_float(uint16_t bits) {
  return std::bit_cast<float>(static_cast<uint32_t>(bits) << 16);
}

void floats_to_half_bits(std::span<const float> values, std::span<uint16_t> bits) {
  for (size_t i = 0; i < values.size(); ++i) bits[i] = float_to_half_bits(values[i]);
}

void floats_to_bfloat16_bits(std::span<const float> values, std::span<uint16_t> bits) {
  for (size_t i = 0; i < values.size(); ++i) bits[i] = float_to_bfloat16_bits(values[i]);
}

uint16_t double_to_half_bits(double value) { return float_to_half_bits(round_to_odd_float(value)); }

uint16_t double_to_bfloat16_bits(double value) {
  return float_to_bfloat16_bits(round_to_odd_float(value));
}

}  // namespace kiln
