// Dtype checks and broadcasting shape logic shared by the elementwise op family.
#include "ir/ops/elementwise_helpers.h"

namespace kiln {
namespace {

constexpr DType kAllDTypes[] = {DType::kF32, DType::kF16, DType::kBF16, DType::kF64, DType::kI64,
                                DType::kI32, DType::kI8,  DType::kU8,   DType::kBool};

// "f32, f16, bf16 or f64".
std::string describe_dtypes(DTypeMask mask) {
  std::vector<std::string_view> names;
  for (DType dtype : kAllDTypes) {
    if (mask & dtype_bit(dtype)) names.push_back(dtype_name(dtype));
  }
  std::string text;
  for (size_t i = 0; i < names.size(); ++i) {
    if (i) text += i + 1 == names.size() ? " or " : ", ";
    text += names[i];
  }
  return text;
}

}  // namespace

void require_dtype_in(const Node& node, size_t i, DTypeMask allowed) {
  const DType dtype = operand_type(node, i).dtype;
  if (!(dtype_bit(dtype) & allowed)) {
    throw InputError("operand " + std::to_string(i) + " (%" + node.operand(i)->name() + ") is " +
                     std::string(dtype_name(dtype)) + ", expected " + describe_dtypes(allowed));
  }
}

void require_all_same_dtype(const Node& node) {
  for (size_t i = 1; i < node.operands().size(); ++i) require_same_dtype(node, 0, i);
}

Shape broadcast_all_operands(const Node& node) {
  Shape shape = operand_type(node, 0).shape;
  for (size_t i = 1; i < node.operands().size(); ++i) {
    shape = broadcast_shapes(shape, operand_type(node, i).shape);
  }
  return shape;
}

}  // namespace kiln
