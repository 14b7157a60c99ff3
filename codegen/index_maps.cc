// Index maps of the injective ops (see the header). Each reads its operand's element at the
// index it computes from the output coordinates; concat and constant pad branch so that an
// operand is only read where it holds the element.
#include "codegen/index_maps.h"

#include <algorithm>
#include <map>

#include "codegen/cuda_expr.h"
#include "ir/error.h"
#include "ir/op_registry.h"
#include "ir/ops/op_helpers.h"

namespace kiln::codegen {
namespace {

using IndexMap = std::string (*)(ElementEmitter&, const Node&, const std::string&);

const Shape& out_shape(const Node& node) { return node.result(0)->type().shape; }
const Shape& in_shape(const Node& node, size_t k = 0) { return node.operand(k)->type().shape; }

std::vector<std::string> coordinates(ElementEmitter& e, const std::string& index,
                                     const Shape& shape) {
  std::vector<std::string> coords;
  for (size_t d = 0; d < shape.size(); ++d) coords.push_back(e.coordinate(index, shape, d));
  return coords;
}

// `coordinate + offset` as an index variable (the coordinate itself when offset is 0).
std::string shifted(ElementEmitter& e, const std::string& coordinate, int64_t offset) {
  if (offset == 0) return coordinate;
  return e.index_temp(coordinate + (offset > 0 ? " + " : " - ") +
                      std::to_string(offset > 0 ? offset : -offset));
}

std::string reshape_element(ElementEmitter& e, const Node& node, const std::string& index) {
  return e.element(node.operand(0), index);
}

std::string expand_element(ElementEmitter& e, const Node& node, const std::string& index) {
  return e.element(node.operand(0), e.broadcast_index(index, out_shape(node), in_shape(node)));
}

std::string transpose_element(ElementEmitter& e, const Node& node, const std::string& index) {
  const std::vector<int64_t>& perm = node.ints_attr("perm");
  const std::vector<std::string> out = coordinates(e, index, out_shape(node));
  std::vector<std::string> in(out.size());
  for (size_t d = 0; d < perm.size(); ++d) in[perm[d]] = out[d];
  return e.element(node.operand(0), e.flat_index(in, in_shape(node)));
}

}  // namespace

std::pair<int64_t, int64_t> slice_start_step(int64_t start, int64_t step, int64_t dim) {
  if (start < 0) start = std::max<int64_t>(start, -dim) + dim;
  const int64_t longest = std::max<int64_t>(dim, 1);
  step = std::clamp<int64_t>(step, -longest, longest);
  start = step > 0 ? std::clamp<int64_t>(start, 0, dim) : std::clamp<int64_t>(start, 0, dim - 1);
  return {start, step};
}

namespace {

std::string slice_element(ElementEmitter& e, const Node& node, const std::string& index) {
  const Shape& in = in_shape(node);
  std::vector<std::string> coords = coordinates(e, index, out_shape(node));
  const std::vector<int64_t>& axes = node.ints_attr("axes");
  for (size_t i = 0; i < axes.size(); ++i) {
    const size_t axis = normalize_axis(axes[i], static_cast<int64_t>(in.size()));
    const auto [start, step] =
        slice_start_step(node.ints_attr("starts")[i], node.ints_attr("steps")[i], in[axis]);
    std::string scaled = coords[axis];
    if (step != 1 && coords[axis] != "0") {
      scaled = e.index_temp(coords[axis] + " * " + std::to_string(step < 0 ? -step : step));
    }
    if (step < 0) {
      coords[axis] = e.index_temp(std::to_string(start) + " - " + scaled);
    } else {
      coords[axis] = shifted(e, scaled, start);
    }
  }
  return e.element(node.operand(0), e.flat_index(coords, in));
}

std::string tile_element(ElementEmitter& e, const Node& node, const std::string& index) {
  const Shape& in = in_shape(node);
  std::vector<std::string> coords = coordinates(e, index, out_shape(node));
  for (size_t d = 0; d < in.size(); ++d) {
    if (in[d] != out_shape(node)[d] && coords[d] != "0") {
      coords[d] = e.index_temp(coords[d] + " % " + std::to_string(in[d]));
    }
  }
  return e.element(node.operand(0), e.flat_index(coords, in));
}

// A variable of the result's compute type, declared here and assigned in the branches.
std::string declare_result(ElementEmitter& e, const Node& node, const std::string& initial = "") {
  const std::string name = e.fresh_name('v');
  const std::string type(cuda_compute_type(node.result(0)->type().dtype));
  e.code().line(type + " " + name + (initial.empty() ? "" : " = " + initial) + ";");
  return name;
}

std::string concat_element(ElementEmitter& e, const Node& node, const std::string& index) {
  const Shape& out = out_shape(node);
  const size_t axis = normalize_axis(node.int_attr("axis"), static_cast<int64_t>(out.size()));
  std::vector<size_t> parts;  // operands with elements along the axis
  for (size_t k = 0; k < node.operands().size(); ++k) {
    if (in_shape(node, k)[axis] > 0) parts.push_back(k);
  }
  const std::vector<std::string> coords = coordinates(e, index, out);
  const auto operand_element = [&](size_t k, int64_t offset) {
    std::vector<std::string> in = coords;
    in[axis] = shifted(e, coords[axis], -offset);
    return e.element(node.operand(k), e.flat_index(in, in_shape(node, k)));
  };
  if (parts.size() == 1) return operand_element(parts[0], 0);
  const std::string result = declare_result(e, node);
  int64_t offset = 0;
  for (size_t i = 0; i < parts.size(); ++i) {
    const int64_t end = offset + in_shape(node, parts[i])[axis];
    e.open_branch(i, parts.size(), "(" + coords[axis] + " < " + std::to_string(end) + ")");
    e.code().line(result + " = " + operand_element(parts[i], offset) + ";");
    offset = end;
  }
  e.close_block();
  return result;
}

// Pad's source coordinate along one axis for output coordinate `c`, or "" where only the
// constant can be (an empty axis).
std::string pad_source(ElementEmitter& e, const std::string& mode, const std::string& c,
                       int64_t begin, int64_t dim) {
  const std::string j = shifted(e, c, -begin);
  if (mode == "constant") return j;
  const std::string d = std::to_string(dim);
  if (mode == "edge") {
    return e.index_temp(j + " < 0 ? 0 : " + j + " > " + std::to_string(dim - 1) + " ? " +
                        std::to_string(dim - 1) + " : " + j);
  }
  if (mode == "wrap") return e.index_temp("((" + j + " % " + d + ") + " + d + ") % " + d);
  return e.index_temp("kiln_reflect(" + j + ", " + d + ")");
}

std::string pad_element(ElementEmitter& e, const Node& node, const std::string& index) {
  const Shape& in = in_shape(node);
  const Shape& out = out_shape(node);
  const std::vector<int64_t>& pads = node.ints_attr("pads");
  const std::string& mode = node.string_attr("mode");
  std::vector<std::string> coords = coordinates(e, index, out);
  std::vector<std::string> inside;  // constant mode: where the operand holds the element
  for (size_t d = 0; d < in.size(); ++d) {
    const int64_t begin = pads[d];
    const int64_t end = pads[d + in.size()];
    if (begin == 0 && end == 0) continue;
    if (mode == "constant" && in[d] == 0) {
      inside.push_back("false");
      continue;
    }
    coords[d] = pad_source(e, mode, coords[d], begin, in[d]);
    if (mode != "constant") continue;
    if (begin > 0) inside.push_back(coords[d] + " >= 0");
    if (end > 0) inside.push_back(coords[d] + " < " + std::to_string(in[d]));
  }
  if (inside.empty()) return e.element(node.operand(0), e.flat_index(coords, in));
  const DType dtype = node.result(0)->type().dtype;
  const std::string result =
      declare_result(e, node, cuda_literal(node.float_attr("constant_value"), dtype));
  std::string test;
  for (const std::string& condition : inside) test += (test.empty() ? "" : " && ") + condition;
  e.open_block("if (" + test + ")");
  e.code().line(result + " = " + e.element(node.operand(0), e.flat_index(coords, in)) + ";");
  e.close_block();
  return result;
}

std::string gather_element(ElementEmitter& e, const Node& node, const std::string& index) {
  const Shape& data = in_shape(node, 0);
  const size_t axis = normalize_axis(node.int_attr("axis"), static_cast<int64_t>(data.size()));
  const int64_t outer = product(data, 0, axis);
  const int64_t inner = product(data, axis + 1, data.size());
  const int64_t count = node.operand(1)->type().num_elements();
  const Shape collapsed = {outer, count, inner};
  const std::string position = e.coordinate(index, collapsed, 1);
  const std::string chosen =
      e.index_temp("kiln_resolve_index(" + e.element(node.operand(1), position) + ", " +
                   std::to_string(data[axis]) + ")");
  const std::vector<std::string> source = {e.coordinate(index, collapsed, 0), chosen,
                                           e.coordinate(index, collapsed, 2)};
  return e.element(node.operand(0), e.flat_index(source, {outer, data[axis], inner}));
}

std::string gather_elements_element(ElementEmitter& e, const Node& node, const std::string& index) {
  const Shape& data = in_shape(node, 0);
  const size_t axis = normalize_axis(node.int_attr("axis"), static_cast<int64_t>(data.size()));
  std::vector<std::string> coords = coordinates(e, index, out_shape(node));
  coords[axis] = e.index_temp("kiln_resolve_index(" + e.element(node.operand(1), index) + ", " +
                              std::to_string(data[axis]) + ")");
  return e.element(node.operand(0), e.flat_index(coords, data));
}

// gather_nd: output coordinates (batch..., row..., rest...) read data at (batch..., the k
// indices of row, rest...), where k is the indices' last dimension.
std::string gather_nd_element(ElementEmitter& e, const Node& node, const std::string& index) {
  const Shape& data = in_shape(node, 0);
  const Shape& indices = in_shape(node, 1);
  const size_t batch = static_cast<size_t>(node.int_attr("batch_dims"));
  const size_t rows = indices.size() - 1;  // output coordinates that pick an indices row
  const std::vector<std::string> out = coordinates(e, index, out_shape(node));
  std::vector<std::string> at(out.begin(), out.begin() + static_cast<std::ptrdiff_t>(rows));
  at.emplace_back();
  std::vector<std::string> source(out.begin(), out.begin() + static_cast<std::ptrdiff_t>(batch));
  for (int64_t j = 0; j < indices.back(); ++j) {
    at.back() = std::to_string(j);
    const std::string value = e.element(node.operand(1), e.flat_index(at, indices));
    source.push_back(e.index_temp("kiln_resolve_index(" + value + ", " +
                                  std::to_string(data[batch + static_cast<size_t>(j)]) + ")"));
  }
  source.insert(source.end(), out.begin() + static_cast<std::ptrdiff_t>(rows), out.end());
  return e.element(node.operand(0), e.flat_index(source, data));
}

// depth_to_space and space_to_depth are a transpose of a 6-D view of the input (as their
// reference kernels compute them): the output, viewed in the transposed 6-D shape, at `index`.
std::string permuted_view_element(ElementEmitter& e, const Node& node, const std::string& index,
                                  const Shape& view, const std::vector<int64_t>& perm) {
  Shape permuted;
  for (int64_t axis : perm) permuted.push_back(view[axis]);
  const std::vector<std::string> out = coordinates(e, index, permuted);
  std::vector<std::string> in(out.size());
  for (size_t d = 0; d < perm.size(); ++d) in[perm[d]] = out[d];
  return e.element(node.operand(0), e.flat_index(in, view));
}

std::string depth_to_space_element(ElementEmitter& e, const Node& node, const std::string& index) {
  const Shape& s = in_shape(node);
  const int64_t b = node.int_attr("blocksize");
  const int64_t c = s[1] / (b * b);
  if (node.string_attr("mode") == "DCR") {
    return permuted_view_element(e, node, index, {s[0], b, b, c, s[2], s[3]}, {0, 3, 4, 1, 5, 2});
  }
  return permuted_view_element(e, node, index, {s[0], c, b, b, s[2], s[3]}, {0, 1, 4, 2, 5, 3});
}

std::string space_to_depth_element(ElementEmitter& e, const Node& node, const std::string& index) {
  const Shape& s = in_shape(node);
  const int64_t b = node.int_attr("blocksize");
  const Shape view = {s[0], s[1], s[2] / b, b, s[3] / b, b};
  if (node.string_attr("mode") == "DCR") {
    return permuted_view_element(e, node, index, view, {0, 3, 5, 1, 2, 4});
  }
  return permuted_view_element(e, node, index, view, {0, 1, 3, 5, 2, 4});
}

std::string trilu_element(ElementEmitter& e, const Node& node, const std::string& index) {
  const Shape& shape = out_shape(node);
  const std::string row = e.coordinate(index, shape, shape.size() - 2);
  const std::string col = e.coordinate(index, shape, shape.size() - 1);
  const std::string k = std::to_string(node.int_attr("k"));
  const std::string keep =
      "(" + col + " - " + row + (node.int_attr("upper") ? " >= " : " <= ") + k + ")";
  const DType dtype = node.result(0)->type().dtype;
  return e.temp(cuda_compute_type(dtype),
                keep + " ? " + e.element(node.operand(0), index) + " : " + cuda_literal(0, dtype));
}

const std::map<std::string, IndexMap>& index_maps() {
  static const std::map<std::string, IndexMap> maps = {
      {"reshape", reshape_element},
      {"expand", expand_element},
      {"transpose", transpose_element},
      {"slice", slice_element},
      {"tile", tile_element},
      {"concat", concat_element},
      {"pad", pad_element},
      {"gather", gather_element},
      {"gather_elements", gather_elements_element},
      {"gather_nd", gather_nd_element},
      {"depth_to_space", depth_to_space_element},
      {"space_to_depth", space_to_depth_element},
      {"trilu", trilu_element},
  };
  return maps;
}

}  // namespace

std::string injective_element(ElementEmitter& emitter, const Node& node, const std::string& index) {
  auto it = index_maps().find(node.op());
  if (it == index_maps().end()) {
    throw UnsupportedError(node.describe() + ": " + node.op() +
                           " has no index map in the loop emitter");
  }
  return it->second(emitter, node, index);
}

}  // namespace kiln::codegen
