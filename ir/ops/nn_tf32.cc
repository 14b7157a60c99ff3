// TF32 rounding and the tf32 attribute of the matrix-product ops (see nn_tf32.h).
#include "ir/ops/nn_tf32.h"

#include <bit>
#include <cmath>
#include <cstdint>

#include "ir/error.h"
#include "ir/ops/op_helpers.h"

namespace kiln::nn {

float round_to_tf32(float value) {
  if (!std::isfinite(value)) return value;
  // Adding half of the last kept bit's weight to the magnitude and truncating rounds to nearest,
  // ties away from zero; a carry out of the mantissa steps the exponent (to infinity at the top).
  constexpr uint32_t kDroppedBits = 13;
  constexpr uint32_t kHalf = uint32_t{1} << (kDroppedBits - 1);
  constexpr uint32_t kKeptMask = ~((uint32_t{1} << kDroppedBits) - 1);
  return std::bit_cast<float>((std::bit_cast<uint32_t>(value) + kHalf) & kKeptMask);
}

AttrSpec tf32_attr() { return {"tf32", AttrKind::kInt, Attribute(0)}; }

void check_tf32_attr(const Node& node) {
  const int64_t tf32 = node.int_attr("tf32");
  if (tf32 != 0 && tf32 != 1) {
    throw InputError("tf32 must be 0 or 1, got " + std::to_string(tf32));
  }
  if (tf32 == 1 && operand_type(node, 0).dtype != DType::kF32) {
    throw InputError("tf32=1 needs f32 operands, got " +
                     std::string(dtype_name(operand_type(node, 0).dtype)));
  }
}

}  // namespace kiln::nn
