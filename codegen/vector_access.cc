// Vector structs and lane widening (see the header).
#include "codegen/vector_access.h"

#include <fmt/format.h>

#include <algorithm>

#include "codegen/cuda_expr.h"

namespace kiln::codegen {

int vector_width_for(size_t widest_bytes) {
  return std::min<int>(kMaxVectorWidth, static_cast<int>(kVectorBytes / widest_bytes));
}

std::string vector_type(DType dtype, int width) {
  return fmt::format("vec_{}x{}", dtype_name(dtype), width);
}

std::string vector_definition(DType dtype, int width) {
  return fmt::format("struct __align__({}) {} {{\n  {} v[{}];\n}};\n", dtype_size(dtype) * width,
                     vector_type(dtype, width), cuda_storage_type(dtype), width);
}

std::string vector_definitions(const std::set<DType>& dtypes, int width) {
  std::string text;
  for (DType dtype : dtypes) text += vector_definition(dtype, width);
  return text;
}

void declare_result_vectors(CodeWriter& code, const std::vector<const Value*>& values, int width) {
  for (size_t k = 0; k < values.size(); ++k) {
    code.line(fmt::format("{} r{};", vector_type(values[k]->type().dtype, width), k));
  }
}

void store_result_vectors(CodeWriter& code, const std::vector<const Value*>& values,
                          const std::vector<std::string>& outputs, int width,
                          const std::string& vector) {
  for (size_t k = 0; k < values.size(); ++k) {
    const std::string type = vector_type(values[k]->type().dtype, width);
    code.line(fmt::format("*reinterpret_cast<{}*>(&{}[{} * {}]) = r{};", type, outputs[k], vector,
                          width, k));
  }
}

std::string packed_f16_vector_type(int width) {
  return vector_type(DType::kF16, width) + "_packed";
}

std::string packed_f16_vector_definition(int width) {
  return fmt::format("struct __align__({}) {} {{\n  unsigned v[{}];\n}};\n", 2 * width,
                     packed_f16_vector_type(width), width / 2);
}

std::string widened(DType dtype, const std::string& stored) {
  if (dtype == DType::kF16) return "kiln_f16_to_f32(" + stored + ")";
  if (dtype == DType::kBF16) return "kiln_bf16_to_f32(" + stored + ")";
  return stored;
}

}  // namespace kiln::codegen
