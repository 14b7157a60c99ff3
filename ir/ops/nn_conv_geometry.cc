// Conv and conv_transpose geometry from a node's operand shapes and attributes.
#include "ir/ops/nn_conv_geometry.h"

#include <string>

#include "ir/ops/op_helpers.h"

namespace kiln::nn {
namespace {

// Fields common to both ops: batch, channels, spatial sizes and the window attributes.
ConvGeometry common_geometry(const Node& node) {
  require_operand_dtype(node, 0, is_float_dtype, "X", "a float tensor");
  require_same_dtype(node, 0, 1);
  const Shape& x = operand_type(node, 0).shape;
  const Shape& w = operand_type(node, 1).shape;
  if (node.op() == "conv" && node.int_attr("channels_last") != 0 &&
      node.int_attr("channels_last") != 1) {
    throw InputError("attribute 'channels_last' must be 0 or 1, got " +
                     std::to_string(node.int_attr("channels_last")));
  }
  const bool channels_last = is_channels_last_conv(node);
  if (x.size() < 3) {
    throw InputError(std::string(channels_last ? "X must be [N,D1,...,C] (channels_last=1)"
                                               : "X must be [N,C,D1,...]") +
                     " with at least one spatial dim, got [" + shape_to_string(x) + "]");
  }
  if (w.size() != x.size()) {
    throw InputError("W [" + shape_to_string(w) + "] must have the rank of X [" +
                     shape_to_string(x) + "]");
  }
  const size_t spatial = x.size() - 2;
  ConvGeometry geometry;
  geometry.batch = x[0];
  if (channels_last) {
    // X [N, D..., C], W [M, k..., C/group].
    geometry.in_channels = x.back();
    geometry.in_spatial.assign(x.begin() + 1, x.end() - 1);
    geometry.kernel.assign(w.begin() + 1, w.end() - 1);
  } else {
    geometry.in_channels = x[1];
    geometry.in_spatial.assign(x.begin() + 2, x.end());
    geometry.kernel.assign(w.begin() + 2, w.end());
  }
  geometry.group = node.int_attr("group");
  if (geometry.group < 1) throw InputError("attribute 'group' must be at least 1");
  geometry.strides = ints_attr_or_fill(node, "strides", spatial, 1);
  geometry.dilations = ints_attr_or_fill(node, "dilations", spatial, 1);
  const std::vector<int64_t> pads = ints_attr_or_fill(node, "pads", 2 * spatial, 0);
  geometry.pads_begin.assign(pads.begin(), pads.begin() + spatial);
  geometry.pads_end.assign(pads.begin() + spatial, pads.end());
  for (size_t d = 0; d < spatial; ++d) {
    if (geometry.strides[d] < 1 || geometry.dilations[d] < 1) {
      throw InputError("attributes 'strides' and 'dilations' must be positive");
    }
    if (geometry.pads_begin[d] < 0 || geometry.pads_end[d] < 0) {
      throw InputError("attribute 'pads' must not be negative");
    }
  }
  return geometry;
}

// (kernel - 1) · dilation + 1: the extent of the kernel's taps along spatial dim d.
int64_t kernel_extent(const ConvGeometry& geometry, size_t d) {
  const std::string what = "kernel extent in spatial dim " + std::to_string(d);
  if (geometry.kernel[d] < 1) {
    throw InputError("W has an empty kernel in spatial dim " + std::to_string(d));
  }
  return checked_add(checked_mul(geometry.kernel[d] - 1, geometry.dilations[d], what), 1, what);
}

// The shape [channels, kernel..., positions...] of a kernel's im2col / col2im matrix.
Shape matrix_shape(int64_t channels, const Shape& kernel, const Shape& positions) {
  Shape shape{channels};
  shape.insert(shape.end(), kernel.begin(), kernel.end());
  shape.insert(shape.end(), positions.begin(), positions.end());
  return shape;
}

void check_bias(const Node& node, int64_t out_channels) {
  if (node.operands().size() < 3) return;
  require_same_dtype(node, 0, 2);
  const Shape& bias = operand_type(node, 2).shape;
  if (bias != Shape{out_channels}) {
    throw InputError("B must be [" + std::to_string(out_channels) + "], got [" +
                     shape_to_string(bias) + "]");
  }
}

}  // namespace

ConvGeometry conv_geometry(const Node& node) {
  ConvGeometry geometry = common_geometry(node);
  const Shape& w = operand_type(node, 1).shape;
  const bool channels_last = is_channels_last_conv(node);
  geometry.out_channels = w[0];
  const int64_t w_channels = channels_last ? w.back() : w[1];
  if (geometry.in_channels != checked_mul(w_channels, geometry.group, "W channels times 'group'") ||
      geometry.out_channels % geometry.group) {
    throw InputError("W [" + shape_to_string(w) + "] does not fit " +
                     std::to_string(geometry.in_channels) + " input channels in " +
                     std::to_string(geometry.group) + " groups" +
                     (channels_last ? " (channels_last=1: W is [M,k...,C/group])" : ""));
  }
  for (size_t d = 0; d < geometry.kernel.size(); ++d) {
    const int64_t window = kernel_extent(geometry, d);
    const std::string padded_name = "padded input size in spatial dim " + std::to_string(d);
    const int64_t padded =
        checked_add(checked_add(geometry.in_spatial[d], geometry.pads_begin[d], padded_name),
                    geometry.pads_end[d], padded_name);
    if (padded < window) {
      throw InputError("kernel extent " + std::to_string(window) + " exceeds the padded input " +
                       std::to_string(padded) + " in spatial dim " + std::to_string(d));
    }
    geometry.out_spatial.push_back((padded - window) / geometry.strides[d] + 1);
  }
  check_bias(node, geometry.out_channels);
  // run_conv's im2col matrix: (C/group · kernel size) rows by output positions.
  check_element_count(
      matrix_shape(geometry.in_channels / geometry.group, geometry.kernel, geometry.out_spatial),
      "the im2col matrix");
  return geometry;
}

ConvGeometry conv_transpose_geometry(const Node& node) {
  ConvGeometry geometry = common_geometry(node);
  const Shape& w = operand_type(node, 1).shape;
  if (w[0] != geometry.in_channels) {
    throw InputError("W [" + shape_to_string(w) + "] must have " +
                     std::to_string(geometry.in_channels) + " (input channels) rows");
  }
  if (geometry.in_channels % geometry.group) {
    throw InputError(std::to_string(geometry.in_channels) + " input channels do not split into " +
                     std::to_string(geometry.group) + " groups");
  }
  geometry.out_channels = checked_mul(w[1], geometry.group, "output channels (W dim 1 · group)");
  const std::vector<int64_t> output_padding =
      ints_attr_or_fill(node, "output_padding", geometry.kernel.size(), 0);
  for (size_t d = 0; d < geometry.kernel.size(); ++d) {
    const int64_t window = kernel_extent(geometry, d);
    const std::string size_name = "output size in spatial dim " + std::to_string(d);
    // stride · (in - 1) + output_padding + extent - pads, every step checked.
    int64_t size = checked_mul(geometry.strides[d], geometry.in_spatial[d] - 1, size_name);
    size = checked_add(checked_add(size, output_padding[d], size_name), window, size_name);
    size = checked_sub(checked_sub(size, geometry.pads_begin[d], size_name), geometry.pads_end[d],
                       size_name);
    if (size < 0) {
      throw InputError("pads leave a negative output size in spatial dim " + std::to_string(d));
    }
    geometry.out_spatial.push_back(size);
  }
  check_bias(node, geometry.out_channels);
  // run_conv_transpose's column matrix: (M/group · kernel size) rows by input positions.
  check_element_count(
      matrix_shape(geometry.out_channels / geometry.group, geometry.kernel, geometry.in_spatial),
      "the col2im matrix");
  return geometry;
}

}  // namespace kiln::nn
