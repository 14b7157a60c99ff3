// Layout ops that rearrange a whole tensor without choosing elements: reshape, transpose,
// expand, tile, depth_to_space, space_to_depth.

#include "ir/error.h"
#include "ir/op_registry.h"
#include "ir/ops/layout_copy.h"
#include "ir/ops/layout_helpers.h"
#include "ir/ops/layout_ops.h"
#include "ir/ops/op_helpers.h"

namespace kiln {
namespace {

// --- reshape: `shape` is the final shape (the importer resolves ONNX's 0 and -1). -------------

std::vector<TensorType> infer_reshape(const Node& node) {
  const TensorType& in = operand_type(node, 0);
  const Shape& shape = node.ints_attr("shape");
  for (int64_t dim : shape) {
    if (dim < 0) throw InputError("shape " + ints_to_string(shape) + " has a negative dimension");
  }
  check_element_count(shape, "shape");
  if (num_elements(shape) != in.num_elements()) {
    throw InputError("cannot reshape " + type_to_string(in) + " (" +
                     std::to_string(in.num_elements()) + " elements) to shape " +
                     ints_to_string(shape));
  }
  return {{in.dtype, shape}};
}

void run_reshape(const Node&, std::span<const Tensor* const> in, std::span<Tensor> out) {
  copy_elements(*in[0], out[0]);
}

// --- transpose -------------------------------------------------------------------------------

std::vector<TensorType> infer_transpose(const Node& node) {
  const TensorType& in = operand_type(node, 0);
  const std::vector<int64_t>& perm = node.ints_attr("perm");
  std::vector<bool> seen(in.shape.size(), false);
  if (static_cast<int64_t>(perm.size()) != in.rank()) {
    throw InputError("perm " + ints_to_string(perm) + " does not match operand rank " +
                     std::to_string(in.rank()));
  }
  Shape shape;
  for (int64_t axis : perm) {
    if (axis < 0 || axis >= in.rank() || seen[axis]) {
      throw InputError("perm " + ints_to_string(perm) + " is not a permutation of the axes");
    }
    seen[axis] = true;
    shape.push_back(in.shape[axis]);
  }
  return {{in.dtype, shape}};
}

void run_transpose(const Node& node, std::span<const Tensor* const> in, std::span<Tensor> out) {
  permute_copy(*in[0], in[0]->shape(), node.ints_attr("perm"), out[0]);
}

// --- expand: numpy broadcast of the operand with `shape` -------------------------------------

std::vector<TensorType> infer_expand(const Node& node) {
  const TensorType& in = operand_type(node, 0);
  return {{in.dtype, broadcast_shapes(in.shape, node.ints_attr("shape"))}};
}

void run_expand(const Node&, std::span<const Tensor* const> in, std::span<Tensor> out) {
  const Shape& in_shape = in[0]->shape();
  const Shape& out_shape = out[0].shape();
  const std::vector<int64_t> strides = row_major_strides(in_shape);
  const size_t lead = out_shape.size() - in_shape.size();
  AxisOffsets offsets;
  for (size_t d = 0; d < out_shape.size(); ++d) {
    const bool broadcast = d < lead || in_shape[d - lead] == 1;
    offsets.push_back(strided_offsets(out_shape[d], 0, broadcast ? 0 : strides[d - lead]));
  }
  copy_by_axis_offsets(*in[0], offsets, out[0]);
}

// --- tile --------------------------------------------------------------------------------------

std::vector<TensorType> infer_tile(const Node& node) {
  const TensorType& in = operand_type(node, 0);
  const std::vector<int64_t>& repeats = node.ints_attr("repeats");
  if (static_cast<int64_t>(repeats.size()) != in.rank()) {
    throw InputError("repeats " + ints_to_string(repeats) + " must have one entry per axis of " +
                     type_to_string(in));
  }
  Shape shape = in.shape;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (repeats[d] < 0) throw InputError("repeats " + ints_to_string(repeats) + " is negative");
    shape[d] = checked_mul(shape[d], repeats[d],
                           "output dimension " + std::to_string(d) + " (repeats too large)");
  }
  return {{in.dtype, shape}};
}

void run_tile(const Node&, std::span<const Tensor* const> in, std::span<Tensor> out) {
  const Shape& in_shape = in[0]->shape();
  const std::vector<int64_t> strides = row_major_strides(in_shape);
  AxisOffsets offsets(in_shape.size());
  for (size_t d = 0; d < in_shape.size(); ++d) {
    for (int64_t i = 0; i < out[0].shape()[d]; ++i) {
      offsets[d].push_back((i % in_shape[d]) * strides[d]);
    }
  }
  copy_by_axis_offsets(*in[0], offsets, out[0]);
}

// --- depth_to_space / space_to_depth: NCHW, mode DCR or CRD (space_to_depth's since opset 28) --

int64_t checked_blocksize(const Node& node, const TensorType& in) {
  if (in.rank() != 4) {
    throw InputError("operand must be 4-D (N,C,H,W), got " + type_to_string(in));
  }
  const int64_t blocksize = node.int_attr("blocksize");
  if (blocksize <= 0) throw InputError("blocksize must be positive");
  const std::string& mode = node.string_attr("mode");
  if (mode != "DCR" && mode != "CRD") {
    throw InputError("mode must be DCR or CRD, got '" + mode + "'");
  }
  return blocksize;
}

std::vector<TensorType> infer_depth_to_space(const Node& node) {
  const TensorType& in = operand_type(node, 0);
  const int64_t b = checked_blocksize(node, in);
  const int64_t block = checked_mul(b, b, "blocksize^2");
  if (in.shape[1] % block != 0) {
    throw InputError("channels " + std::to_string(in.shape[1]) +
                     " are not divisible by blocksize^2 = " + std::to_string(block));
  }
  return {{in.dtype,
           {in.shape[0], in.shape[1] / block, checked_mul(in.shape[2], b, "output height"),
            checked_mul(in.shape[3], b, "output width")}}};
}

void run_depth_to_space(const Node& node, std::span<const Tensor* const> in,
                        std::span<Tensor> out) {
  const Shape& s = in[0]->shape();
  const int64_t b = node.int_attr("blocksize");
  const int64_t c = s[1] / (b * b);
  if (node.string_attr("mode") == "DCR") {
    permute_copy(*in[0], {s[0], b, b, c, s[2], s[3]}, {0, 3, 4, 1, 5, 2}, out[0]);
  } else {
    permute_copy(*in[0], {s[0], c, b, b, s[2], s[3]}, {0, 1, 4, 2, 5, 3}, out[0]);
  }
}

std::vector<TensorType> infer_space_to_depth(const Node& node) {
  const TensorType& in = operand_type(node, 0);
  const int64_t b = checked_blocksize(node, in);
  if (in.shape[2] % b != 0 || in.shape[3] % b != 0) {
    throw InputError("spatial dims of " + type_to_string(in) + " are not divisible by blocksize " +
                     std::to_string(b));
  }
  const int64_t channels = checked_mul(in.shape[1], checked_mul(b, b, "blocksize^2"),
                                       "output channels (blocksize too large)");
  return {{in.dtype, {in.shape[0], channels, in.shape[2] / b, in.shape[3] / b}}};
}

void run_space_to_depth(const Node& node, std::span<const Tensor* const> in,
                        std::span<Tensor> out) {
  const Shape& s = in[0]->shape();
  const int64_t b = node.int_attr("blocksize");
  const Shape view = {s[0], s[1], s[2] / b, b, s[3] / b, b};
  if (node.string_attr("mode") == "DCR") {
    permute_copy(*in[0], view, {0, 3, 5, 1, 2, 4}, out[0]);
  } else {
    permute_copy(*in[0], view, {0, 1, 3, 5, 2, 4}, out[0]);
  }
}

}  // namespace

void register_view_ops(OpRegistry& registry) {
  registry.add({.name = "reshape",
                .category = OpCategory::kInjective,
                .attrs = {{"shape", AttrKind::kInts, std::nullopt}},
                .infer = infer_reshape,
                .reference = run_reshape});
  registry.add({.name = "transpose",
                .category = OpCategory::kInjective,
                .attrs = {{"perm", AttrKind::kInts, std::nullopt}},
                .infer = infer_transpose,
                .reference = run_transpose});
  registry.add({.name = "expand",
                .category = OpCategory::kInjective,
                .attrs = {{"shape", AttrKind::kInts, std::nullopt}},
                .infer = infer_expand,
                .reference = run_expand});
  registry.add({.name = "tile",
                .category = OpCategory::kInjective,
                .attrs = {{"repeats", AttrKind::kInts, std::nullopt}},
                .infer = infer_tile,
                .reference = run_tile});
  registry.add({.name = "depth_to_space",
                .category = OpCategory::kInjective,
                .attrs = {{"blocksize", AttrKind::kInt, std::nullopt},
                          {"mode", AttrKind::kString, Attribute("DCR")}},
                .infer = infer_depth_to_space,
                .reference = run_depth_to_space});
  registry.add({.name = "space_to_depth",
                .category = OpCategory::kInjective,
                .attrs = {{"blocksize", AttrKind::kInt, std::nullopt},
                          {"mode", AttrKind::kString, Attribute("DCR")}},
                .infer = infer_space_to_depth,
                .reference = run_space_to_depth});
}

}  // namespace kiln
