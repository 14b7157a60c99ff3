// Index-tuple gathers and scatters: gather_nd, scatter_nd and scatter_elements (with the ONNX
// reductions none, add, mul, max, min applied in index order, as the ONNX reference does).
#include <algorithm>
#include <cstring>

#include "ir/error.h"
#include "ir/op_registry.h"
#include "ir/ops/layout_copy.h"
#include "ir/ops/layout_helpers.h"
#include "ir/ops/layout_ops.h"
#include "ir/ops/op_helpers.h"

namespace kiln {
namespace {

// --- gather_nd -------------------------------------------------------------------------------

std::vector<TensorType> infer_gather_nd(const Node& node) {
  const TensorType& data = operand_type(node, 0);
  const TensorType& indices = operand_type(node, 1);
  require_index_operand(node, 1);
  const int64_t batch_dims = node.int_attr("batch_dims");
  if (indices.rank() < 1 || batch_dims < 0 || batch_dims >= std::min(data.rank(), indices.rank())) {
    throw InputError("batch_dims " + std::to_string(batch_dims) + " must be below the ranks of " +
                     type_to_string(data) + " and indices " + type_to_string(indices));
  }
  const int64_t depth = indices.shape.back();
  if (depth < 1 || depth > data.rank() - batch_dims) {
    throw InputError("the last axis of indices " + type_to_string(indices) +
                     " must be 1 to rank - batch_dims of data " + type_to_string(data));
  }
  for (int64_t d = 0; d < batch_dims; ++d) {
    if (indices.shape[d] != data.shape[d]) {
      throw InputError("batch axis " + std::to_string(d) + " differs between data " +
                       type_to_string(data) + " and indices " + type_to_string(indices));
    }
  }
  Shape shape(indices.shape.begin(), indices.shape.end() - 1);
  shape.insert(shape.end(), data.shape.begin() + batch_dims + depth, data.shape.end());
  return {{data.dtype, shape}};
}

void run_gather_nd(const Node& node, std::span<const Tensor* const> in, std::span<Tensor> out) {
  const Tensor& data = *in[0];
  const Shape& data_shape = data.shape();
  const Shape& index_shape = in[1]->shape();
  const size_t batch_dims = static_cast<size_t>(node.int_attr("batch_dims"));
  const size_t depth = static_cast<size_t>(index_shape.back());
  const std::vector<int64_t> strides = row_major_strides(data_shape);
  const int64_t batches = product(data_shape, 0, batch_dims);
  const int64_t batch_stride = product(data_shape, batch_dims, data_shape.size());
  const int64_t tuples_per_batch = product(index_shape, batch_dims, index_shape.size() - 1);
  const size_t block =
      static_cast<size_t>(product(data_shape, batch_dims + depth, data_shape.size())) *
      dtype_size(data.dtype());
  const std::vector<int64_t> indices = in[1]->to_ints();
  std::byte* dst = out[0].bytes();
  for (int64_t b = 0; b < batches; ++b) {
    for (int64_t t = 0; t < tuples_per_batch; ++t) {
      const int64_t* tuple = &indices[(b * tuples_per_batch + t) * depth];
      int64_t offset = b * batch_stride;
      for (size_t j = 0; j < depth; ++j) {
        offset += resolve_index(tuple[j], data_shape[batch_dims + j]) * strides[batch_dims + j];
      }
      if (block != 0) std::memcpy(dst, data.bytes() + offset * dtype_size(data.dtype()), block);
      dst += block;
    }
  }
}

// --- scatter reductions ----------------------------------------------------------------------

// Writes `update` element `from` into `out` element `to`, combined per `reduction`.
class ScatterWriter {
 public:
  ScatterWriter(const Node& node, Tensor& out, const Tensor& updates)
      : reduction_(node.string_attr("reduction")),
        out_(out),
        updates_(updates),
        element_size_(dtype_size(out.dtype())) {}

  void write(int64_t to, int64_t from) {
    if (reduction_ == "none") {
      std::memcpy(out_.bytes() + to * element_size_, updates_.bytes() + from * element_size_,
                  element_size_);
    } else if (is_float(out_.dtype())) {
      out_.set_double(to, combine(out_.get_double(to), updates_.get_double(from)));
    } else {
      out_.set_int(to, combine(out_.get_int(to), updates_.get_int(from)));
    }
  }

 private:
  template <class T>
  T combine(T current, T update) const {
    if (reduction_ == "add") return current + update;
    if (reduction_ == "mul") return current * update;
    if (reduction_ == "max") return std::max(current, update);
    return std::min(current, update);
  }

  const std::string& reduction_;
  Tensor& out_;
  const Tensor& updates_;
  size_t element_size_;
};

void check_reduction(const Node& node) {
  const std::string& reduction = node.string_attr("reduction");
  if (reduction != "none" && reduction != "add" && reduction != "mul" && reduction != "max" &&
      reduction != "min") {
    throw InputError("reduction must be none, add, mul, max or min, got '" + reduction + "'");
  }
}

// --- scatter_nd: out = data; out[indices[i..]] (reduction)= updates[i..] ----------------------

std::vector<TensorType> infer_scatter_nd(const Node& node) {
  const TensorType& data = operand_type(node, 0);
  const TensorType& indices = operand_type(node, 1);
  const TensorType& updates = operand_type(node, 2);
  require_index_operand(node, 1);
  require_same_dtype(node, 0, 2);
  check_reduction(node);
  const int64_t depth = indices.rank() == 0 ? 0 : indices.shape.back();
  if (depth < 1 || depth > data.rank()) {
    throw InputError("the last axis of indices " + type_to_string(indices) +
                     " must be 1 to the rank of data " + type_to_string(data));
  }
  Shape expected(indices.shape.begin(), indices.shape.end() - 1);
  expected.insert(expected.end(), data.shape.begin() + depth, data.shape.end());
  if (updates.shape != expected) {
    throw InputError("updates " + type_to_string(updates) + " must have shape [" +
                     shape_to_string(expected) + "]");
  }
  return {data};
}

void run_scatter_nd(const Node& node, std::span<const Tensor* const> in, std::span<Tensor> out) {
  copy_elements(*in[0], out[0]);
  const Shape& data_shape = in[0]->shape();
  const size_t depth = static_cast<size_t>(in[1]->shape().back());
  const std::vector<int64_t> strides = row_major_strides(data_shape);
  const int64_t block = product(data_shape, depth, data_shape.size());
  const std::vector<int64_t> indices = in[1]->to_ints();
  const int64_t tuples = static_cast<int64_t>(indices.size() / depth);
  ScatterWriter writer(node, out[0], *in[2]);
  for (int64_t t = 0; t < tuples; ++t) {
    int64_t offset = 0;
    for (size_t j = 0; j < depth; ++j) {
      offset += resolve_index(indices[t * depth + j], data_shape[j]) * strides[j];
    }
    for (int64_t e = 0; e < block; ++e) writer.write(offset + e, t * block + e);
  }
}

// --- scatter_elements: out = data; out[i.. with i_axis = indices[i..]] (reduction)= updates[i..]

std::vector<TensorType> infer_scatter_elements(const Node& node) {
  const TensorType& data = operand_type(node, 0);
  const TensorType& indices = operand_type(node, 1);
  require_index_operand(node, 1);
  require_same_dtype(node, 0, 2);
  check_reduction(node);
  const int64_t axis = normalize_axis(node.int_attr("axis"), data.rank(), "scatter axis");
  if (operand_type(node, 2).shape != indices.shape) {
    throw InputError("updates " + type_to_string(operand_type(node, 2)) +
                     " must have the shape of indices " + type_to_string(indices));
  }
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
  return {data};
}

void run_scatter_elements(const Node& node, std::span<const Tensor* const> in,
                          std::span<Tensor> out) {
  copy_elements(*in[0], out[0]);
  const Shape& data_shape = in[0]->shape();
  const int64_t rank = static_cast<int64_t>(data_shape.size());
  const int64_t axis = normalize_axis(node.int_attr("axis"), rank);
  const Shape& index_shape = in[1]->shape();
  const std::vector<int64_t> indices = in[1]->to_ints();
  const std::vector<int64_t> strides = row_major_strides(data_shape);
  ScatterWriter writer(node, out[0], *in[2]);
  std::vector<int64_t> position(static_cast<size_t>(rank), 0);
  for (size_t flat = 0; flat < indices.size(); ++flat) {
    int64_t target = 0;
    for (int64_t d = 0; d < rank; ++d) {
      const int64_t i = d == axis ? resolve_index(indices[flat], data_shape[d]) : position[d];
      target += i * strides[d];
    }
    writer.write(target, static_cast<int64_t>(flat));
    for (int64_t d = rank - 1; d >= 0; --d) {
      if (++position[d] < index_shape[d]) break;
      position[d] = 0;
    }
  }
}

}  // namespace

void register_scatter_ops(OpRegistry& registry) {
  registry.add({.name = "gather_nd",
                .category = OpCategory::kInjective,
                .attrs = {{"batch_dims", AttrKind::kInt, Attribute(0)}},
                .min_operands = 2,
                .max_operands = 2,
                .infer = infer_gather_nd,
                .reference = run_gather_nd});
  registry.add({.name = "scatter_nd",
                .category = OpCategory::kOpaque,
                .attrs = {{"reduction", AttrKind::kString, Attribute("none")}},
                .min_operands = 3,
                .max_operands = 3,
                .infer = infer_scatter_nd,
                .reference = run_scatter_nd});
  registry.add({.name = "scatter_elements",
                .category = OpCategory::kOpaque,
                .attrs = {{"axis", AttrKind::kInt, Attribute(0)},
                          {"reduction", AttrKind::kString, Attribute("none")}},
                .min_operands = 3,
                .max_operands = 3,
                .infer = infer_scatter_elements,
                .reference = run_scatter_elements});
}

}  // namespace kiln
