// ONNX AffineGrid (opset 20) and ReverseSequence (opset 10) -> kiln ops.
//
// AffineGrid: the output grid's normalized coordinates (x, y[, z], 1) at each position (from
// `size`, which must be known at compile time) times θᵀ per batch entry, as broadcast products of
// constant coordinate columns and θ's columns, reshaped to [N, H, W, 2] or [N, D, H, W, 3]. A
// coordinate along an axis of n: with align_corners −1 + 2i / (n − 1) (−1 when n = 1, as numpy's
// linspace), otherwise (2i + 1) / n − 1.
//
// ReverseSequence: each batch entry's first sequence_lens[b] steps along time_axis reversed, the
// rest kept: a gather_elements along time_axis by the index where(t < L_b, L_b − 1 − t, t),
// built from a constant of the steps and the lengths (a runtime input; clamped to [0, steps], so
// an invalid one reads no element outside the axis) and expanded to the input's shape.
#include "frontend/converters/layout_converters.h"

namespace kiln::onnx_import {
namespace {

double grid_coordinate(int64_t i, int64_t n, bool align_corners) {
  if (align_corners) return n == 1 ? -1.0 : -1.0 + 2.0 * static_cast<double>(i) / (n - 1);
  return (2.0 * static_cast<double>(i) + 1.0) / static_cast<double>(n) - 1.0;
}

std::vector<Value*> convert_affine_grid(NodeImporter& node) {
  Value* theta = node.input(0);
  const Shape& theta_shape = theta->type().shape;
  const std::vector<int64_t> size = constant_ints(node, 1, "AffineGrid's size shapes its output");
  if (size.size() != 4 && size.size() != 5) {
    node.fail("size must hold 4 (N, C, H, W) or 5 (N, C, D, H, W) values");
  }
  const int64_t dims = static_cast<int64_t>(size.size()) - 2;  // 2 or 3 spatial axes
  const int64_t batch = size[0];
  if (theta_shape != Shape{batch, dims, dims + 1}) {
    node.fail("theta must be [" + shape_to_string({batch, dims, dims + 1}) + "], not [" +
              shape_to_string(theta_shape) + "]");
  }
  if (!is_float(theta->type().dtype)) node.fail("theta must hold floats");
  for (size_t d = 2; d < size.size(); ++d) {
    if (size[d] < 1) node.fail("size's spatial values must be positive");
  }
  const bool align_corners = node.attr_int("align_corners", 0) != 0;
  // Positions in row-major order over (D,) H, W; coordinates x (along W) first.
  const std::vector<int64_t> spatial(size.begin() + 2, size.end());
  int64_t positions = 1;
  for (int64_t extent : spatial) positions *= extent;
  Tensor base(theta->type().dtype, {positions, dims + 1});
  for (int64_t p = 0; p < positions; ++p) {
    int64_t rest = p;
    for (int64_t a = dims - 1; a >= 0; --a) {  // a: spatial axis, innermost (W) last
      const int64_t extent = spatial[static_cast<size_t>(a)];
      const int64_t i = rest % extent;
      rest /= extent;
      // Axis a (of D, H, W) is coordinate dims - 1 - a (x for W).
      base.set_double(p * (dims + 1) + (dims - 1 - a), grid_coordinate(i, extent, align_corners));
    }
    base.set_double(p * (dims + 1) + dims, 1.0);
  }
  // Σ_k base[p, k] · θ[n, j, k], as broadcast products in f32 (k is at most 4: a matmul would
  // gain nothing, and tf32 would round the coordinates).
  Value* grid = nullptr;
  for (int64_t k = 0; k <= dims; ++k) {
    Tensor column(theta->type().dtype, {1, positions, 1});
    for (int64_t p = 0; p < positions; ++p)
      column.set_double(p, base.get_double(p * (dims + 1) + k));
    Value* theta_k = node.emit_slice(theta, 2, k, k + 1);
    Value* term =
        node.emit1("mul", {node.constant(column), node.emit_reshape(theta_k, {batch, 1, dims})});
    grid = grid ? node.emit1("add", {grid, term}) : term;
  }
  Shape out{batch};
  out.insert(out.end(), spatial.begin(), spatial.end());
  out.push_back(dims);
  return {node.emit_reshape(grid, out)};
}

std::vector<Value*> convert_reverse_sequence(NodeImporter& node) {
  Value* x = node.input(0);
  const Shape& shape = x->type().shape;
  const int64_t rank = static_cast<int64_t>(shape.size());
  if (rank < 2) node.fail("the input must have at least 2 axes");
  const int64_t time = node.attr_int("time_axis", 0), batch = node.attr_int("batch_axis", 1);
  if (!((time == 0 && batch == 1) || (time == 1 && batch == 0))) {
    node.fail("time_axis and batch_axis must be 0 and 1, one each");
  }
  const int64_t steps = shape[static_cast<size_t>(time)];
  const int64_t entries = shape[static_cast<size_t>(batch)];
  Value* lengths = node.input(1);
  if (lengths->type().shape != Shape{entries}) {
    node.fail("sequence_lens must be [" + std::to_string(entries) + "]");
  }
  if (lengths->type().dtype != DType::kI64) {
    lengths = node.emit1("cast", {lengths}, {{"to", Attribute(DType::kI64)}});
  }
  // t and L laid along the time and batch axes of a 2-D [time or batch, ...] index.
  Shape steps_shape(2, 1), lengths_shape(2, 1);
  steps_shape[static_cast<size_t>(time)] = steps;
  lengths_shape[static_cast<size_t>(batch)] = entries;
  Tensor t(DType::kI64, steps_shape);
  for (int64_t i = 0; i < steps; ++i) t.set_int(i, i);
  Value* step = node.constant(t);
  // Lengths outside [0, steps] (invalid ONNX) are clamped, so no index leaves the axis.
  lengths = node.emit1("min", {node.emit1("max", {lengths, node.constant(Tensor::scalar_i64(0))}),
                               node.constant(Tensor::scalar_i64(steps))});
  Value* length = node.emit_reshape(lengths, lengths_shape);
  Value* reversed =
      node.emit1("sub", {node.emit1("sub", {length, node.constant(Tensor::scalar_i64(1))}), step});
  Value* index = node.emit1("where", {node.emit1("less", {step, length}), reversed, step});
  Shape index_shape(static_cast<size_t>(rank), 1);
  index_shape[0] = shape[0];
  index_shape[1] = shape[1];
  index = node.emit_reshape(index, index_shape);
  if (rank > 2) index = node.emit1("expand", {index}, {{"shape", shape}});
  return {node.emit1("gather_elements", {x, index}, {{"axis", time}})};
}

}  // namespace

void register_sampling_grid_converters(ConverterTable& table) {
  table.add("AffineGrid", 20, convert_affine_grid);
  table.add("ReverseSequence", 10, convert_reverse_sequence);
}

}  // namespace kiln::onnx_import
