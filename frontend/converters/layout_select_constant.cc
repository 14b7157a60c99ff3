// ONNX ops whose output shape comes from values -> kiln ops, where those values are known at
// compile time (kiln's shapes are static; where they are computed at run time, the import says
// which input it needs as a constant):
//
//   Compress (9)    a gather of the positions where the constant condition is true, along
//                   `axis` or over the flattened input; a condition shorter than the axis
//                   selects among its first entries
//   NonZero (9)     of a constant input: the constant [rank, count] of its nonzero positions
//   MaxUnpool (9)   X scattered (scatter_elements) into zeros of the output shape at MaxPool's
//                   flat indices, which lie in the natural shape ((in − 1) · stride + kernel −
//                   pads); a larger output_shape takes each at the same coordinates
#include "frontend/converters/layout_converters.h"
#include "frontend/converters/nn_converters.h"

namespace kiln::onnx_import {
namespace {

std::vector<Value*> convert_compress(NodeImporter& node) {
  Value* x = node.input(0);
  const Tensor& condition =
      node.constant_input(1, "Compress's output size is the count of its true entries");
  if (condition.shape().size() != 1) node.fail("condition must be 1-D");
  const bool flat = !node.has_attr("axis");
  const int64_t rank = static_cast<int64_t>(x->type().shape.size());
  Value* source = flat ? node.emit_reshape(x, Shape{x->type().num_elements()}) : x;
  const int64_t axis = flat ? 0 : normalized_axes(node, {node.attr_int("axis")}, rank)[0];
  const int64_t extent = source->type().shape[static_cast<size_t>(axis)];
  if (condition.num_elements() > extent) {
    node.fail("condition has " + std::to_string(condition.num_elements()) +
              " entries for an axis of " + std::to_string(extent));
  }
  std::vector<int64_t> kept;
  for (int64_t i = 0; i < condition.num_elements(); ++i) {
    if (condition.get_int(i) != 0) kept.push_back(i);
  }
  const Tensor indices =
      Tensor::from_vector(DType::kI64, {static_cast<int64_t>(kept.size())}, kept);
  return {node.emit1("gather", {source, node.constant(indices)}, {{"axis", axis}})};
}

std::vector<Value*> convert_non_zero(NodeImporter& node) {
  const Tensor& x = node.constant_input(0, "NonZero's output size is the count of its nonzeros");
  const Shape& shape = x.shape();
  int64_t count = 0;
  for (int64_t i = 0; i < x.num_elements(); ++i) {
    if (x.get_double(i) != 0) ++count;
  }
  const int64_t rank = static_cast<int64_t>(shape.size());
  Tensor result(DType::kI64, {rank, count});
  int64_t column = 0;
  for (int64_t i = 0; i < x.num_elements(); ++i) {
    if (x.get_double(i) == 0) continue;
    int64_t rest = i;
    for (int64_t a = rank - 1; a >= 0; --a) {
      result.set_int(a * count + column, rest % shape[static_cast<size_t>(a)]);
      rest /= shape[static_cast<size_t>(a)];
    }
    ++column;
  }
  return {node.constant(result)};
}

std::vector<Value*> convert_max_unpool(NodeImporter& node) {
  Value* x = node.input(0);
  Value* indices = node.input(1);
  const Shape& shape = x->type().shape;
  if (indices->type().shape != shape) node.fail("I must have X's shape");
  const std::vector<int64_t> kernel = node.attr_ints("kernel_shape");
  if (shape.size() != kernel.size() + 2)
    node.fail("X must be [N, C] and the kernel's spatial axes");
  // The indices are flat in the default output shape; output_shape (at least as large) takes
  // each value at the same coordinates.
  const size_t spatial = kernel.size();
  const std::vector<int64_t> strides = ints_attr_of_length(node, "strides", spatial, 1);
  const std::vector<int64_t> pads = ints_attr_of_length(node, "pads", 2 * spatial, 0);
  Shape natural{shape[0], shape[1]};
  for (size_t d = 0; d < spatial; ++d) {
    natural.push_back((shape[d + 2] - 1) * strides[d] + kernel[d] - pads[d] - pads[d + spatial]);
  }
  for (int64_t extent : natural) {
    if (extent < 1) {
      node.fail("X, kernel, strides and pads unpool to an empty shape [" +
                shape_to_string(natural) + "]");
    }
  }
  Shape out = natural;
  if (node.has_input(2)) {
    out = constant_ints(node, 2, "MaxUnpool's output_shape sizes its output");
    if (out.size() != shape.size()) node.fail("output_shape must hold one value per axis of X");
    for (size_t a = 0; a < out.size(); ++a) {
      if (out[a] < natural[a]) {
        node.fail("output_shape [" + shape_to_string(out) + "] is smaller than the unpooled [" +
                  shape_to_string(natural) + "]");
      }
    }
  }
  if (out[0] != shape[0] || out[1] != shape[1]) {
    node.fail("output_shape must keep X's batch and channels [" + std::to_string(shape[0]) + ", " +
              std::to_string(shape[1]) + "]");
  }
  // Per (n, c) plane: the plane's values scattered along its flattened spatial axes, so that
  // the GPU's output-driven scatter searches one plane's indices, not the whole tensor's.
  const int64_t planes = shape[0] * shape[1];
  const int64_t per_plane = x->type().num_elements() / planes;
  int64_t natural_plane = 1, out_plane = 1;
  for (size_t a = 2; a < out.size(); ++a) {
    natural_plane *= natural[a];
    out_plane *= out[a];
  }
  Value* local = node.emit_reshape(indices, Shape{planes, per_plane});
  if (indices->type().dtype != DType::kI64) {
    local = node.emit1("cast", {local}, {{"to", Attribute(DType::kI64)}});
  }
  local = node.emit1("mod", {local, node.constant(Tensor::scalar_i64(natural_plane))},
                     {{"fmod", int64_t{0}}});
  if (out != natural) {
    // Coordinates in the natural plane, flat again in the output's.
    Value* rest = local;
    Value* moved = nullptr;
    int64_t out_stride = 1;
    for (size_t a = out.size(); a-- > 2;) {
      Value* extent = node.constant(Tensor::scalar_i64(natural[a]));
      Value* coordinate = node.emit1("mod", {rest, extent}, {{"fmod", int64_t{0}}});
      rest = node.emit1("div", {rest, extent});
      Value* term = node.emit1("mul", {coordinate, node.constant(Tensor::scalar_i64(out_stride))});
      moved = moved ? node.emit1("add", {moved, term}) : term;
      out_stride *= out[a];
    }
    local = moved;
  }
  // Zeros expanded from a scalar: no output-sized constant among the weights.
  Value* zeros = node.emit1("expand", {node.constant(Tensor(x->type().dtype, Shape{}))},
                            {{"shape", Shape{planes, out_plane}}});
  Value* placed =
      node.emit1("scatter_elements", {zeros, local, node.emit_reshape(x, Shape{planes, per_plane})},
                 {{"axis", int64_t{1}}, {"reduction", std::string("none")}});
  return {node.emit_reshape(placed, out)};
}

}  // namespace

void register_select_constant_converters(ConverterTable& table) {
  table.add("Compress", 9, convert_compress);
  table.add("NonZero", 9, convert_non_zero);
  table.add("MaxUnpool", 9, convert_max_unpool);
}

}  // namespace kiln::onnx_import
