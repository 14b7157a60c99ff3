// Layout ops that cut or join along axes: slice, concat, pad.
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

// --- slice: ONNX Slice with starts/ends/axes/steps as attributes, clamped per the spec. -------

// The elements one axis keeps: `count` of them, from `start` every `step`.
struct AxisRange {
  int64_t start = 0;
  int64_t step = 1;
  int64_t count = 0;
};

AxisRange clamp_axis_range(int64_t start, int64_t end, int64_t step, int64_t dim) {
  if (start < 0) start = std::max<int64_t>(start, -dim) + dim;  // avoids overflow at INT64_MIN
  if (end < 0) end = std::max<int64_t>(end, -dim - 1) + dim;
  // A step longer than the axis keeps at most one element either way; clamping it keeps the
  // count arithmetic below and the kernel's step * stride in range.
  const int64_t longest = std::max<int64_t>(dim, 1);
  step = std::clamp<int64_t>(step, -longest, longest);
  AxisRange range{.step = step};
  if (step > 0) {
    range.start = std::clamp<int64_t>(start, 0, dim);
    end = std::clamp<int64_t>(end, 0, dim);
    range.count = end > range.start ? (end - range.start + step - 1) / step : 0;
  } else {
    range.start = std::clamp<int64_t>(start, 0, dim - 1);
    end = std::clamp<int64_t>(end, -1, dim - 1);
    range.count = range.start > end ? (range.start - end - step - 1) / -step : 0;
  }
  return range;
}

std::vector<AxisRange> slice_ranges(const Node& node, const Shape& in_shape) {
  const std::vector<int64_t>& starts = node.ints_attr("starts");
  const std::vector<int64_t>& ends = node.ints_attr("ends");
  const std::vector<int64_t>& axes = node.ints_attr("axes");
  const std::vector<int64_t>& steps = node.ints_attr("steps");
  if (ends.size() != starts.size() || axes.size() != starts.size() ||
      steps.size() != starts.size()) {
    throw InputError("starts, ends, axes and steps must have the same length");
  }
  const int64_t rank = static_cast<int64_t>(in_shape.size());
  std::vector<AxisRange> ranges;
  for (int64_t dim : in_shape) ranges.push_back({.start = 0, .step = 1, .count = dim});
  std::vector<bool> seen(in_shape.size(), false);
  for (size_t i = 0; i < axes.size(); ++i) {
    const int64_t axis = normalize_axis(axes[i], rank, "slice axis");
    if (seen[axis]) throw InputError("axes " + ints_to_string(axes) + " repeat an axis");
    seen[axis] = true;
    if (steps[i] == 0) throw InputError("steps " + ints_to_string(steps) + " contain 0");
    ranges[axis] = clamp_axis_range(starts[i], ends[i], steps[i], in_shape[axis]);
  }
  return ranges;
}

std::vector<TensorType> infer_slice(const Node& node) {
  const TensorType& in = operand_type(node, 0);
  Shape shape;
  for (const AxisRange& range : slice_ranges(node, in.shape)) shape.push_back(range.count);
  return {{in.dtype, shape}};
}

void run_slice(const Node& node, std::span<const Tensor* const> in, std::span<Tensor> out) {
  const Shape& in_shape = in[0]->shape();
  const std::vector<int64_t> strides = row_major_strides(in_shape);
  const std::vector<AxisRange> ranges = slice_ranges(node, in_shape);
  AxisOffsets offsets;
  for (size_t d = 0; d < ranges.size(); ++d) {
    offsets.push_back(strided_offsets(ranges[d].count, ranges[d].start * strides[d],
                                      ranges[d].step * strides[d]));
  }
  copy_by_axis_offsets(*in[0], offsets, out[0]);
}

// --- concat -------------------------------------------------------------------------------------

std::vector<TensorType> infer_concat(const Node& node) {
  const TensorType& first = operand_type(node, 0);
  const int64_t axis = normalize_axis(node.int_attr("axis"), first.rank(), "concat axis");
  Shape shape = first.shape;
  for (size_t i = 1; i < node.operands().size(); ++i) {
    require_same_dtype(node, 0, i);
    const Shape& other = operand_type(node, i).shape;
    bool compatible = other.size() == shape.size();
    for (size_t d = 0; compatible && d < shape.size(); ++d) {
      compatible = static_cast<int64_t>(d) == axis || other[d] == shape[d];
    }
    if (!compatible) {
      throw InputError("operand " + std::to_string(i) + " " +
                       type_to_string(operand_type(node, i)) + " does not match operand 0 " +
                       type_to_string(first) + " off concat axis " + std::to_string(axis));
    }
    shape[axis] = checked_add(shape[axis], other[axis], "concat axis size");
  }
  return {{first.dtype, shape}};
}

void run_concat(const Node& node, std::span<const Tensor* const> in, std::span<Tensor> out) {
  const Shape& out_shape = out[0].shape();
  const int64_t axis = normalize_axis(node.int_attr("axis"), out[0].rank());
  const size_t element_size = dtype_size(out[0].dtype());
  const int64_t outer = product(out_shape, 0, axis);
  std::byte* dst = out[0].bytes();
  for (int64_t o = 0; o < outer; ++o) {
    for (const Tensor* operand : in) {
      if (operand->num_elements() == 0) continue;
      const size_t block = static_cast<size_t>(operand->num_elements() / outer) * element_size;
      std::memcpy(dst, operand->bytes() + o * block, block);
      dst += block;
    }
  }
}

// --- pad: `pads` = [begin_0.., end_0..] over every axis (negative pads crop) --------------------

std::vector<TensorType> infer_pad(const Node& node) {
  const TensorType& in = operand_type(node, 0);
  const std::vector<int64_t>& pads = node.ints_attr("pads");
  const std::string& mode = node.string_attr("mode");
  if (mode != "constant" && mode != "reflect" && mode != "edge" && mode != "wrap") {
    throw InputError("mode must be constant, reflect, edge or wrap, got '" + mode + "'");
  }
  if (static_cast<int64_t>(pads.size()) != 2 * in.rank()) {
    throw InputError("pads " + ints_to_string(pads) + " must have 2 entries per axis of " +
                     type_to_string(in));
  }
  for (int64_t pad : pads) {
    // Larger pads give results beyond kMaxResultElements anyway; bounding them keeps the
    // kernel's index arithmetic in range.
    if (pad < -kMaxResultElements || pad > kMaxResultElements) {
      throw InputError("pads " + ints_to_string(pads) + " has a value beyond +-2^40");
    }
  }
  Shape shape = in.shape;
  for (size_t d = 0; d < shape.size(); ++d) {
    shape[d] = checked_add(shape[d], pads[d] + pads[d + shape.size()],
                           "output dimension " + std::to_string(d) + " (pads too large)");
    if (shape[d] < 0) {
      throw InputError("pads " + ints_to_string(pads) + " crop axis " + std::to_string(d) +
                       " below zero");
    }
    if (mode != "constant" && in.shape[d] == 0 && shape[d] > 0) {
      throw InputError("cannot pad empty axis " + std::to_string(d) + " in " + mode + " mode");
    }
  }
  return {{in.dtype, shape}};
}

// The source index along an axis of size `dim` for padded position `j` (may be outside [0, dim)),
// or -1 for the constant value.
int64_t pad_source_index(int64_t j, int64_t dim, const std::string& mode) {
  if (j >= 0 && j < dim) return j;
  if (mode == "constant") return -1;
  if (mode == "edge") return std::clamp<int64_t>(j, 0, dim - 1);
  if (mode == "wrap") return ((j % dim) + dim) % dim;
  // reflect, repeating the reflection as numpy does when the pad exceeds the axis
  if (dim == 1) return 0;
  const int64_t period = 2 * (dim - 1);
  const int64_t k = ((j % period) + period) % period;
  return k < dim ? k : period - k;
}

void run_pad(const Node& node, std::span<const Tensor* const> in, std::span<Tensor> out) {
  const Shape& in_shape = in[0]->shape();
  const std::vector<int64_t>& pads = node.ints_attr("pads");
  const std::string& mode = node.string_attr("mode");
  const std::vector<int64_t> strides = row_major_strides(in_shape);
  AxisOffsets offsets(in_shape.size());
  for (size_t d = 0; d < in_shape.size(); ++d) {
    for (int64_t i = 0; i < out[0].shape()[d]; ++i) {
      const int64_t source = pad_source_index(i - pads[d], in_shape[d], mode);
      offsets[d].push_back(source < 0 ? kFillOffset : source * strides[d]);
    }
  }
  Tensor fill(out[0].dtype(), {});
  const double value = node.float_attr("constant_value");
  if (is_float(fill.dtype())) {
    fill.set_double(0, value);
  } else {
    fill.set_int(0, static_cast<int64_t>(value));
  }
  copy_by_axis_offsets(*in[0], offsets, out[0], &fill);
}

}  // namespace

void register_slice_ops(OpRegistry& registry) {
  registry.add({.name = "slice",
                .category = OpCategory::kInjective,
                .attrs = {{"starts", AttrKind::kInts, std::nullopt},
                          {"ends", AttrKind::kInts, std::nullopt},
                          {"axes", AttrKind::kInts, std::nullopt},
                          {"steps", AttrKind::kInts, std::nullopt}},
                .infer = infer_slice,
                .reference = run_slice});
  registry.add({.name = "concat",
                .category = OpCategory::kInjective,
                .attrs = {{"axis", AttrKind::kInt, std::nullopt}},
                .max_operands = OpInfo::kVariadic,
                .infer = infer_concat,
                .reference = run_concat});
  registry.add({.name = "pad",
                .category = OpCategory::kInjective,
                .attrs = {{"pads", AttrKind::kInts, std::nullopt},
                          {"mode", AttrKind::kString, Attribute("constant")},
                          {"constant_value", AttrKind::kFloat, Attribute(0.0)}},
                .infer = infer_pad,
                .reference = run_pad});
}

}  // namespace kiln
