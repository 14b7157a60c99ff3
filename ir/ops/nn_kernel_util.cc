// Operand checks, small shape helpers and the normalization statistics shared by the
// neural-network op family.
#include "ir/ops/nn_kernel_util.h"

#include <cmath>

#include "ir/ops/op_helpers.h"

namespace kiln::nn {

void require_operand_dtype(const Node& node, size_t index, bool (*accepts)(DType),
                           const std::string& role, const std::string& expected) {
  const DType dtype = operand_type(node, index).dtype;
  if (!accepts(dtype)) {
    throw InputError("operand " + std::to_string(index) + " (" + role + ") must be " + expected +
                     ", got " + std::string(dtype_name(dtype)));
  }
}

void require_operand_rank(const Node& node, size_t index, int64_t rank, const std::string& role) {
  const TensorType& type = operand_type(node, index);
  if (type.rank() != rank) {
    throw InputError("operand " + std::to_string(index) + " (" + role + ") must have rank " +
                     std::to_string(rank) + ", got " + type_to_string(type));
  }
}

std::vector<int64_t> ints_attr_or_fill(const Node& node, const std::string& name, size_t count,
                                       int64_t fill) {
  std::vector<int64_t> values = node.ints_attr(name);
  if (values.empty()) return std::vector<int64_t>(count, fill);
  if (values.size() != count) {
    throw InputError("attribute '" + name + "' has " + std::to_string(values.size()) +
                     " values, expected " + std::to_string(count));
  }
  return values;
}

std::pair<double, double> mean_and_inv_std(const double* values, int64_t count, double epsilon) {
  double sum = 0;
  for (int64_t i = 0; i < count; ++i) sum += values[i];
  const double mean = sum / static_cast<double>(count);
  double squares = 0;
  for (int64_t i = 0; i < count; ++i) squares += (values[i] - mean) * (values[i] - mean);
  const double variance = squares / static_cast<double>(count);
  return {mean, 1 / std::sqrt(variance + epsilon)};
}

bool broadcasts_to(const Shape& from, const Shape& to) {
  if (from.size() > to.size()) return false;
  const size_t offset = to.size() - from.size();
  for (size_t d = 0; d < from.size(); ++d) {
    if (from[d] != 1 && from[d] != to[d + offset]) return false;
  }
  return true;
}

}  // namespace kiln::nn
