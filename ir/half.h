// Conversions between f32 and the 16-bit float formats (IEEE half and bfloat16), rounding to
// nearest even as the GPU does on every store. NaN stays NaN; overflow becomes infinity.
#pragma once

#include <cstdint>

namespace kiln {

uint16_t float_to_half_bits(float value);
float half_bits_to_float(uint16_t bits);
uint16_t float_to_bfloat16_bits(float value);
float bfloat16_bits_to_float(uint16_t bits);

}  // namespace kiln
