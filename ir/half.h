// Conversions between f32 / f64 and the 16-bit float formats (IEEE half and bfloat16), rounding
// to nearest even as the GPU does on every store. NaN stays NaN; overflow becomes infinity.
#pragma once

#include <cstdint>
#include <span>

namespace kiln {

uint16_t float_to_half_bits(float value);
float half_bits_to_float(uint16_t bits);
uint16_t float_to_bfloat16_bits(float value);
float bfloat16_bits_to_float(uint16_t bits);

// Rounded from f64 once, straight to the 16-bit format (not f64 -> f32 -> 16 bits, which can
// round a value just off a halfway point the wrong way).
uint16_t double_to_half_bits(double value);
uint16_t double_to_bfloat16_bits(double value);

// Whole arrays at once (`bits` as long as `values`), each element as the functions above round
// it: how weight tensors are converted.
void floats_to_half_bits(std::span<const float> values, std::span<uint16_t> bits);
void floats_to_bfloat16_bits(std::span<const float> values, std::span<uint16_t> bits);

}  // namespace kiln
