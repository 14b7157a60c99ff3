// ONNX converters that cut, join, select or scatter: Slice, Split (one kiln slice per output),
// Concat, Pad, CenterCropPad (slice + pad), Gather, GatherElements, GatherND, ScatterND,
// ScatterElements (and Scatter, its deprecated name), Trilu.
#include <algorithm>
#include <cstdlib>

#include "frontend/converters/layout_converters.h"

namespace kiln::onnx_import {
namespace {

int64_t input_rank(const NodeImporter& node, size_t i) { return node.input(i)->type().rank(); }

int64_t normalized_axis(const NodeImporter& node, int64_t axis, int64_t rank) {
  return normalized_axes(node, {axis}, rank)[0];
}

std::vector<Value*> convert_slice(NodeImporter& node) {
  const int64_t rank = input_rank(node, 0);
  const std::vector<int64_t> starts = constant_ints(node, 1, "the starts");
  const std::vector<int64_t> ends = constant_ints(node, 2, "the ends");
  std::vector<int64_t> axes(starts.size());
  for (size_t i = 0; i < axes.size(); ++i) axes[i] = static_cast<int64_t>(i);
  if (node.has_input(3)) axes = normalized_axes(node, constant_ints(node, 3, "the axes"), rank);
  std::vector<int64_t> steps(starts.size(), 1);
  if (node.has_input(4)) steps = constant_ints(node, 4, "the steps");
  if (ends.size() != starts.size() || axes.size() != starts.size() ||
      steps.size() != starts.size()) {
    node.fail("starts, ends, axes and steps must have the same length");
  }
  return {node.emit1("slice", {node.input(0)},
                     {{"starts", starts}, {"ends", ends}, {"axes", axes}, {"steps", steps}})};
}

// The lengths of Split's pieces: the `split` input, else `num_outputs` (opset 18) pieces of
// ceil(dim / n) with a smaller last one, else equal pieces, one per output.
std::vector<int64_t> split_lengths(const NodeImporter& node, int64_t dim) {
  if (node.has_input(1)) {
    std::vector<int64_t> lengths = constant_ints(node, 1, "the split lengths");
    int64_t total = 0;
    for (int64_t length : lengths) {
      if (length < 0) node.fail("split lengths must not be negative");
      total += length;
    }
    if (total != dim || lengths.size() != node.num_outputs()) {
      node.fail("split lengths sum to " + std::to_string(total) + " over " +
                std::to_string(lengths.size()) + " pieces, but the axis has " +
                std::to_string(dim) + " elements and the node " +
                std::to_string(node.num_outputs()) + " outputs");
    }
    return lengths;
  }
  const int64_t pieces = static_cast<int64_t>(node.num_outputs());
  if (pieces == 0) node.fail("the node has no outputs");
  if (node.has_attr("num_outputs")) {
    if (node.attr_int("num_outputs") != pieces) {
      node.fail("num_outputs differs from the node's number of outputs");
    }
    const int64_t chunk = (dim + pieces - 1) / pieces;
    std::vector<int64_t> lengths;
    for (int64_t i = 0, left = dim; i < pieces; ++i, left -= chunk) {
      lengths.push_back(std::max<int64_t>(0, std::min(chunk, left)));
    }
    return lengths;
  }
  if (dim % pieces != 0) {
    node.fail("axis of size " + std::to_string(dim) + " does not split evenly into " +
              std::to_string(pieces) + " outputs");
  }
  return std::vector<int64_t>(static_cast<size_t>(pieces), dim / pieces);
}

std::vector<Value*> convert_split(NodeImporter& node) {
  Value* data = node.input(0);
  const int64_t axis = normalized_axis(node, node.attr_int("axis", 0), data->type().rank());
  std::vector<Value*> results;
  int64_t start = 0;
  for (int64_t length : split_lengths(node, data->type().shape[axis])) {
    results.push_back(node.emit_slice(data, axis, start, start + length));
    start += length;
  }
  return results;
}

std::vector<Value*> convert_concat(NodeImporter& node) {
  std::vector<Value*> operands;
  for (size_t i = 0; i < node.num_inputs(); ++i) operands.push_back(node.input(i));
  const int64_t axis = normalized_axis(node, node.attr_int("axis"), input_rank(node, 0));
  return {node.emit1("concat", operands, {{"axis", axis}})};
}

std::vector<Value*> convert_pad(NodeImporter& node) {
  const int64_t rank = input_rank(node, 0);
  const std::vector<int64_t> raw_pads = constant_ints(node, 1, "the pads");
  std::vector<int64_t> axes(static_cast<size_t>(rank));
  for (int64_t d = 0; d < rank; ++d) axes[d] = d;
  if (node.has_input(3)) axes = normalized_axes(node, constant_ints(node, 3, "the axes"), rank);
  if (raw_pads.size() != 2 * axes.size()) {
    node.fail("pads has " + std::to_string(raw_pads.size()) + " entries, expected " +
              std::to_string(2 * axes.size()));
  }
  std::vector<int64_t> pads(static_cast<size_t>(2 * rank), 0);
  for (size_t i = 0; i < axes.size(); ++i) {
    pads[axes[i]] = raw_pads[i];
    pads[axes[i] + rank] = raw_pads[i + axes.size()];
  }
  AttributeMap attrs = {{"pads", pads}, {"mode", node.attr_string("mode", "constant")}};
  if (node.has_input(2)) {
    const Tensor& value = node.constant_input(2, "the constant value");
    if (value.num_elements() > 0) attrs["constant_value"] = value.get_double(0);
  }
  return {node.emit1("pad", {node.input(0)}, attrs)};
}

std::vector<Value*> convert_gather(NodeImporter& node) {
  const int64_t axis = normalized_axis(node, node.attr_int("axis", 0), input_rank(node, 0));
  return {node.emit1("gather", {node.input(0), node.input(1)}, {{"axis", axis}})};
}

std::vector<Value*> convert_gather_elements(NodeImporter& node) {
  const int64_t axis = normalized_axis(node, node.attr_int("axis", 0), input_rank(node, 0));
  return {node.emit1("gather_elements", {node.input(0), node.input(1)}, {{"axis", axis}})};
}

std::vector<Value*> convert_gather_nd(NodeImporter& node) {
  return {node.emit1("gather_nd", {node.input(0), node.input(1)},
                     {{"batch_dims", node.attr_int("batch_dims", 0)}})};
}

std::vector<Value*> convert_scatter_nd(NodeImporter& node) {
  return {node.emit1("scatter_nd", {node.input(0), node.input(1), node.input(2)},
                     {{"reduction", node.attr_string("reduction", "none")}})};
}

std::vector<Value*> convert_scatter_elements(NodeImporter& node) {
  const int64_t axis = normalized_axis(node, node.attr_int("axis", 0), input_rank(node, 0));
  return {node.emit1("scatter_elements", {node.input(0), node.input(1), node.input(2)},
                     {{"axis", axis}, {"reduction", node.attr_string("reduction", "none")}})};
}

// CenterCropPad (opset 18): a centered slice where the target is smaller, then a centered zero
// pad where it is larger (the odd element goes to the end, as in the ONNX reference).
std::vector<Value*> convert_center_crop_pad(NodeImporter& node) {
  Value* data = node.input(0);
  const Shape& in_shape = data->type().shape;
  const int64_t rank = static_cast<int64_t>(in_shape.size());
  const std::vector<int64_t> target = constant_ints(node, 1, "the target shape");
  std::vector<int64_t> axes(target.size());
  for (size_t i = 0; i < axes.size(); ++i) axes[i] = static_cast<int64_t>(i);
  if (node.has_attr("axes")) axes = normalized_axes(node, node.attr_ints("axes"), rank);
  if (target.size() != axes.size()) {
    node.fail("shape has " + std::to_string(target.size()) + " entries for " +
              std::to_string(axes.size()) + " axes");
  }
  std::vector<int64_t> starts, ends, pads(static_cast<size_t>(2 * rank), 0);
  for (size_t i = 0; i < axes.size(); ++i) {
    const int64_t dim = in_shape[axes[i]];
    if (target[i] < 0) node.fail("shape must not be negative");
    const int64_t begin = std::abs(dim - target[i]) / 2;
    starts.push_back(target[i] < dim ? begin : 0);
    ends.push_back(target[i] < dim ? begin + target[i] : dim);
    if (target[i] > dim) {
      pads[axes[i]] = begin;
      pads[axes[i] + rank] = target[i] - dim - begin;
    }
  }
  Value* cropped = node.emit1("slice", {data},
                              {{"starts", starts},
                               {"ends", ends},
                               {"axes", axes},
                               {"steps", std::vector<int64_t>(axes.size(), 1)}});
  if (std::all_of(pads.begin(), pads.end(), [](int64_t pad) { return pad == 0; })) {
    return {cropped};
  }
  return {node.emit1("pad", {cropped}, {{"pads", pads}})};
}

std::vector<Value*> convert_trilu(NodeImporter& node) {
  AttributeMap attrs = {{"upper", node.attr_int("upper", 1)}};
  if (node.has_input(1)) attrs["k"] = constant_int(node, 1, "the diagonal offset k");
  return {node.emit1("trilu", {node.input(0)}, attrs)};
}

}  // namespace

void register_slice_converters(ConverterTable& table) {
  table.add("Slice", 13, convert_slice);
  table.add("Split", 13, convert_split);
  table.add("Split", 18, convert_split);  // num_outputs
  table.add("Concat", 13, convert_concat);
  table.add("Pad", 13, convert_pad);
  table.add("Pad", 18, convert_pad);  // axes input; wrap mode from 19
  table.add("Gather", 13, convert_gather);
  table.add("GatherElements", 13, convert_gather_elements);
  table.add("GatherND", 13, convert_gather_nd);
  table.add("ScatterND", 13, convert_scatter_nd);
  table.add("ScatterND", 16, convert_scatter_nd);  // reduction; max and min from 18
  // Scatter (9, deprecated in 11) is ScatterElements without a reduction.
  table.add("Scatter", 9, convert_scatter_elements);
  table.add("ScatterElements", 13, convert_scatter_elements);
  table.add("ScatterElements", 16, convert_scatter_elements);  // reduction
  table.add("CenterCropPad", 18, convert_center_crop_pad);
  table.add("Trilu", 14, convert_trilu);
}

}  // namespace kiln::onnx_import
