// ONNX Resize (opsets 11, 13, 18, 19) -> kiln resize: the output sizes, per-axis scales and roi
// are resolved here over every axis (axes, keep_aspect_ratio_policy), so the kernel sees one
// form. Resize 10 and Upsample (7, 9), which take only scales, become the same op: their
// coordinates are asymmetric (an output pixel y reads input y / scale) and nearest rounds down,
// as ONNX's Resize 10 -> 11 adapter states them.
#include <cmath>

#include "frontend/converters/layout_converters.h"

namespace kiln::onnx_import {
namespace {

// The values of an optional constant input; empty when absent or given as an empty tensor.
std::vector<double> optional_doubles(const NodeImporter& node, size_t input,
                                     const std::string& what) {
  const std::optional<Tensor> tensor = node.optional_constant_input(input, what);
  return tensor ? tensor->to_doubles() : std::vector<double>{};
}

// Output sizes and per-axis scales over all axes, following the ONNX reference: from `scales`,
// size = floor(in * scale); from `sizes`, scale = out / in, adjusted by keep_aspect_ratio_policy.
struct ResizeTarget {
  std::vector<int64_t> sizes;
  std::vector<double> scales;
};

ResizeTarget resolve_target(const NodeImporter& node, const Shape& in_shape,
                            const std::vector<int64_t>& axes) {
  const size_t rank = in_shape.size();
  const std::vector<double> scales = optional_doubles(node, 2, "the scales");
  const std::vector<double> sizes = optional_doubles(node, 3, "the sizes");
  if (scales.empty() == sizes.empty()) node.fail("exactly one of scales and sizes must be given");
  const std::vector<double>& given = scales.empty() ? sizes : scales;
  if (given.size() != axes.size()) {
    node.fail(std::string(scales.empty() ? "sizes" : "scales") + " has " +
              std::to_string(given.size()) + " entries for " + std::to_string(axes.size()) +
              " axes");
  }
  ResizeTarget target{in_shape, std::vector<double>(rank, 1.0)};
  if (!scales.empty()) {
    for (size_t i = 0; i < axes.size(); ++i) {
      if (scales[i] <= 0) node.fail("scales must be positive");
      target.scales[axes[i]] = scales[i];
      target.sizes[axes[i]] =
          static_cast<int64_t>(std::floor(scales[i] * static_cast<double>(in_shape[axes[i]])));
    }
    return target;
  }
  for (size_t i = 0; i < axes.size(); ++i) {
    if (sizes[i] < 0) node.fail("sizes must not be negative");
    target.sizes[axes[i]] = static_cast<int64_t>(sizes[i]);
    target.scales[axes[i]] = sizes[i] / static_cast<double>(in_shape[axes[i]]);
  }
  const std::string policy = node.attr_string("keep_aspect_ratio_policy", "stretch");
  if (policy == "stretch") return target;
  if (policy != "not_larger" && policy != "not_smaller") {
    node.fail("keep_aspect_ratio_policy '" + policy +
              "' is not stretch, not_larger or not_smaller");
  }
  double scale = target.scales[axes[0]];
  for (int64_t axis : axes) {
    scale = policy == "not_larger" ? std::min(scale, target.scales[axis])
                                   : std::max(scale, target.scales[axis]);
  }
  for (int64_t axis : axes) {
    target.scales[axis] = scale;
    target.sizes[axis] = static_cast<int64_t>(scale * static_cast<double>(in_shape[axis]) + 0.5);
  }
  return target;
}

std::vector<Value*> convert_resize(NodeImporter& node) {
  Value* data = node.input(0);
  const Shape& in_shape = data->type().shape;
  const int64_t rank = static_cast<int64_t>(in_shape.size());
  std::vector<int64_t> all_axes(static_cast<size_t>(rank));
  for (int64_t d = 0; d < rank; ++d) all_axes[d] = d;
  const std::vector<int64_t> axes = normalized_axes(node, node.attr_ints("axes", all_axes), rank);
  const ResizeTarget target = resolve_target(node, in_shape, axes);

  const std::string mode = node.attr_string("mode", "nearest");
  const std::string coordinate_mode =
      node.attr_string("coordinate_transformation_mode", "half_pixel");
  const int64_t antialias = node.attr_int("antialias", 0);
  if (antialias != 0 && mode == "nearest") node.fail("antialias is not defined for nearest mode");

  AttributeMap attrs = {{"sizes", target.sizes},
                        {"scales", target.scales},
                        {"mode", mode},
                        {"coordinate_transformation_mode", coordinate_mode}};
  if (coordinate_mode == "tf_crop_and_resize") {
    const std::vector<double> roi = optional_doubles(node, 1, "the roi");
    if (roi.size() != 2 * axes.size()) {
      node.fail("tf_crop_and_resize needs a roi of " + std::to_string(2 * axes.size()) +
                " values, got " + std::to_string(roi.size()));
    }
    std::vector<double> full_roi(static_cast<size_t>(rank), 0.0);
    full_roi.resize(static_cast<size_t>(2 * rank), 1.0);
    for (size_t i = 0; i < axes.size(); ++i) {
      full_roi[axes[i]] = roi[i];
      full_roi[axes[i] + rank] = roi[i + axes.size()];
    }
    attrs["roi"] = full_roi;
    attrs["extrapolation_value"] = node.attr_float("extrapolation_value", 0.0);
  }
  if (mode == "nearest") {
    attrs["nearest_mode"] = node.attr_string("nearest_mode", "round_prefer_floor");
  } else {
    attrs["antialias"] = antialias;
  }
  if (mode == "cubic") {
    attrs["cubic_coeff_a"] = node.attr_float("cubic_coeff_a", -0.75);
    attrs["exclude_outside"] = node.attr_int("exclude_outside", 0);
  }
  return {node.emit1("resize", {data}, attrs)};
}

// Resize 10 and Upsample: `scales` over every axis, floor(in · scale) outputs; mode nearest or
// linear.
Value* resize_by_scales(NodeImporter& node, const std::vector<double>& scales) {
  Value* data = node.input(0);
  const Shape& in_shape = data->type().shape;
  if (scales.size() != in_shape.size()) {
    node.fail("scales has " + std::to_string(scales.size()) + " entries for an input of rank " +
              std::to_string(in_shape.size()));
  }
  std::vector<int64_t> sizes(in_shape.size());
  for (size_t i = 0; i < scales.size(); ++i) {
    if (!(scales[i] > 0)) node.fail("scales must be positive");
    sizes[i] = static_cast<int64_t>(std::floor(scales[i] * static_cast<double>(in_shape[i])));
  }
  const std::string mode = node.attr_string("mode", "nearest");
  if (mode != "nearest" && mode != "linear") {
    node.fail("mode '" + mode + "' is not nearest or linear");
  }
  AttributeMap attrs = {{"sizes", sizes},
                        {"scales", scales},
                        {"mode", mode},
                        {"coordinate_transformation_mode", std::string("asymmetric")}};
  if (mode == "nearest") {
    attrs["nearest_mode"] = std::string("floor");
  } else {
    attrs["antialias"] = int64_t{0};
  }
  return node.emit1("resize", {data}, attrs);
}

std::vector<Value*> convert_resize_10(NodeImporter& node) {
  return {resize_by_scales(node, optional_doubles(node, 1, "the scales"))};
}

std::vector<Value*> convert_upsample_7(NodeImporter& node) {
  return {resize_by_scales(node, node.attr_floats("scales"))};
}

std::vector<Value*> convert_upsample_9(NodeImporter& node) {
  return {resize_by_scales(node, optional_doubles(node, 1, "the scales"))};
}

}  // namespace

void register_resize_converters(ConverterTable& table) {
  table.add("Resize", 10, convert_resize_10);
  // Resize 11 reads the inputs 13 does (roi, scales and sizes, the first two required but maybe
  // empty); its tf_half_pixel_for_nn mode, dropped in 13, is refused by the op.
  table.add("Resize", 11, convert_resize);
  table.add("Resize", 13, convert_resize);
  table.add("Upsample", 7, convert_upsample_7);
  table.add("Upsample", 9, convert_upsample_9);
  table.add("Resize", 18, convert_resize);  // antialias, axes, keep_aspect_ratio_policy
}

}  // namespace kiln::onnx_import
