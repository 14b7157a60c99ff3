// ONNX converters of the layout / data-movement ops, and helpers shared by their files.
#include <algorithm>

#include "frontend/converters/layout_converters.h"
#include "ir/error.h"

namespace kiln::onnx_import {

std::vector<int64_t> constant_ints(const NodeImporter& node, size_t input,
                                   const std::string& what) {
  return node.constant_input(input, what).to_ints();
}

int64_t constant_int(const NodeImporter& node, size_t input, const std::string& what) {
  const std::vector<int64_t> values = constant_ints(node, input, what);
  if (values.size() != 1) {
    node.fail(what + " must hold one value, got " + std::to_string(values.size()));
  }
  return values[0];
}

std::vector<int64_t> normalized_axes(const NodeImporter& node, std::vector<int64_t> axes,
                                     int64_t rank) {
  for (int64_t& axis : axes) {
    if (axis < -rank || axis >= rank) {
      node.fail("axis " + std::to_string(axis) + " is out of range for rank " +
                std::to_string(rank));
    }
    if (axis < 0) axis += rank;
  }
  std::vector<int64_t> sorted = axes;
  std::sort(sorted.begin(), sorted.end());
  if (std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end()) {
    node.fail("axes repeat an axis");
  }
  return axes;
}

void register_layout_converters(ConverterTable& table) {
  register_reshape_converters(table);
  register_slice_converters(table);
  register_shape_converters(table);
  register_resize_converters(table);
  register_one_hot_converters(table);
  register_sampling_grid_converters(table);
  register_grid_sample_converters(table);
  register_select_constant_converters(table);
}

}  // namespace kiln::onnx_import
