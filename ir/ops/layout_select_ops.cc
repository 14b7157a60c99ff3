// Layout ops that pick elements by index or position: gather, gather_elements, trilu.
#include <cstring>

#include "ir/error.h"
#include "ir/op_registry.h"
#include "ir/ops/layout_helpers.h"
#include "ir/ops/layout_ops.h"
#include "ir/ops/op_helpers.h"

namespace kiln {
namespace {

// --- gather: out = data[:axis] + indices.shape + data[axis+1:] ---------------------------------

std::vector<TensorType> infer_gather(const Node& node) {
  const TensorType& data = operand_type(node, 0);
  require_index_operand(node, 1);
  const int64_t axis = normalize_axis(node.int_attr("axis"), data.rank(), "gather axis");
  Shape shape(data.shape.begin(), data.shape.begin() + axis);
  const Shape& indices = operand_type(node, 1).shape;
  shape.insert(shape.end(), indices.begin(), indices.end());
  shape.insert(shape.end(), data.shape.begin() + axis + 1, data.shape.end());
  return {{data.dtype, shape}};
}

void run_gather(const Node& node, std::span<const Tensor* const> in, std::span<Tensor> out) {
  const Tensor& data = *in[0];
  const int64_t axis = normalize_axis(node.int_attr("axis"), data.rank());
  const int64_t dim = data.shape()[axis];
  const int64_t outer = product(data.shape(), 0, axis);
  const int64_t inner = product(data.shape(), axis + 1, data.shape().size());
  const size_t block = static_cast<size_t>(inner) * dtype_size(data.dtype());
  const std::vector<int64_t> indices = in[1]->to_ints();
  std::byte* dst = out[0].bytes();
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t index : indices) {
      const int64_t row = resolve_index(index, dim);
      if (block != 0) std::memcpy(dst, data.bytes() + (o * dim + row) * block, block);
      dst += block;
    }
  }
}

// --- gather_elements: out[i..] = data[i.. with i_axis replaced by indices[i..]] ---------------

std::vector<TensorType> infer_gather_elements(const Node& node) {
  const TensorType& data = operand_type(node, 0);
  const TensorType& indices = operand_type(node, 1);
  require_index_operand(node, 1);
  const int64_t axis = normalize_axis(node.int_attr("axis"), data.rank(), "gather_elements axis");
  if (indices.rank() != data.rank()) {
    throw InputError("indices " + type_to_string(indices) + " must have the rank of data " +
                     type_to_string(data));
  }
  for (int64_t d = 0; d < data.rank(); ++d) {
    if (d != axis && indices.shape[d] > data.shape[d]) {
      throw InputError("indices " + type_to_string(indices) + " exceed data " +
                       type_to_string(data) + " on axis " + std::to_string(d));
    }
  }
  return {{data.dtype, indices.shape}};
}

void run_gather_elements(const Node& node, std::span<const Tensor* const> in,
                         std::span<Tensor> out) {
  const Tensor& data = *in[0];
  const int64_t rank = data.rank();
  const int64_t axis = normalize_axis(node.int_attr("axis"), rank);
  const Shape& index_shape = in[1]->shape();
  const std::vector<int64_t> indices = in[1]->to_ints();
  const std::vector<int64_t> strides = row_major_strides(data.shape());
  const size_t element_size = dtype_size(data.dtype());
  std::vector<int64_t> position(static_cast<size_t>(rank), 0);
  for (size_t flat = 0; flat < indices.size(); ++flat) {
    int64_t source = 0;
    for (int64_t d = 0; d < rank; ++d) {
      const int64_t i = d == axis ? resolve_index(indices[flat], data.shape()[d]) : position[d];
      source += i * strides[d];
    }
    std::memcpy(out[0].bytes() + flat * element_size, data.bytes() + source * element_size,
                element_size);
    for (int64_t d = rank - 1; d >= 0; --d) {
      if (++position[d] < index_shape[d]) break;
      position[d] = 0;
    }
  }
}

// --- trilu: keeps the upper (j - i >= k) or lower (j - i <= k) triangle of the last two axes ---

std::vector<TensorType> infer_trilu(const Node& node) {
  const TensorType& in = operand_type(node, 0);
  if (in.rank() < 2) throw InputError("operand must have rank >= 2, got " + type_to_string(in));
  return {in};
}

void run_trilu(const Node& node, std::span<const Tensor* const> in, std::span<Tensor> out) {
  const Tensor& src = *in[0];
  const int64_t rows = src.shape()[src.rank() - 2];
  const int64_t cols = src.shape()[src.rank() - 1];
  const bool upper = node.int_attr("upper") != 0;
  const int64_t k = node.int_attr("k");
  const size_t element_size = dtype_size(src.dtype());
  // Zero bits are the zero value of every kiln dtype.
  if (out[0].num_bytes() != 0) std::memset(out[0].bytes(), 0, out[0].num_bytes());
  for (int64_t flat = 0; flat < src.num_elements(); ++flat) {
    const int64_t col = flat % cols;
    const int64_t row = (flat / cols) % rows;
    if (upper ? col - row >= k : col - row <= k) {
      std::memcpy(out[0].bytes() + flat * element_size, src.bytes() + flat * element_size,
                  element_size);
    }
  }
}

}  // namespace

void register_select_ops(OpRegistry& registry) {
  registry.add({.name = "gather",
                .category = OpCategory::kInjective,
                .attrs = {{"axis", AttrKind::kInt, Attribute(0)}},
                .min_operands = 2,
                .max_operands = 2,
                .infer = infer_gather,
                .reference = run_gather});
  registry.add({.name = "gather_elements",
                .category = OpCategory::kInjective,
                .attrs = {{"axis", AttrKind::kInt, Attribute(0)}},
                .min_operands = 2,
                .max_operands = 2,
                .infer = infer_gather_elements,
                .reference = run_gather_elements});
  registry.add(
      {.name = "trilu",
       .category = OpCategory::kInjective,
       .attrs = {{"upper", AttrKind::kInt, Attribute(1)}, {"k", AttrKind::kInt, Attribute(0)}},
       .infer = infer_trilu,
       .reference = run_trilu});
}

}  // namespace kiln
