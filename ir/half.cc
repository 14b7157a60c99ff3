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
  const uint32_t bits = std::bit_cast<uint32_t>(value);
  const uint32_t sign = (bits >> 16) & 0x8000u;
  const uint32_t abs = bits & 0x7fffffffu;
  if (abs >= 0x7f800000u) {  // inf or NaN
    return static_cast<uint16_t>(sign | 0x7c00u | (abs > 0x7f800000u ? 0x200u : 0u));
  }
  if (abs >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // rounds past 65504
  if (abs < 0x38800000u) {  // below the smallest normal half: a subnormal or zero
    // Scale so the subnormal bits land in the integer part, then round to nearest even.
    const float magnitude = std::bit_cast<float>(abs);
    const float scaled = magnitude * 16777216.0f;  // 2^24: one unit = smallest half subnormal
    const float rounded = std::nearbyint(scaled);  // default rounding mode: nearest even
    return static_cast<uint16_t>(sign | static_cast<uint32_t>(rounded));
  }
  // Normal: rebias the exponent and round the 13 dropped mantissa bits to nearest even.
  uint32_t half = ((abs - 0x38000000u) >> 13);
  const uint32_t dropped = abs & 0x1fffu;
  if (dropped > 0x1000u || (dropped == 0x1000u && (half & 1u))) ++half;
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

uint16_t double_to_half_bits(double value) { return float_to_half_bits(round_to_odd_float(value)); }

uint16_t double_to_bfloat16_bits(double value) {
  return float_to_bfloat16_bits(round_to_odd_float(value));
}

}  // namespace kiln
