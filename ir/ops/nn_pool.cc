// The pooling ops: global_average_pool, global_max_pool, average_pool, max_pool, and
// max_pool_with_indices (max_pool plus ONNX MaxPool's optional Indices output). Converters
// resolve auto_pad into explicit pads. Output sizes follow ONNX (and PyTorch): with ceil_mode a
// window that would start beyond the input and its begin padding is dropped.
#include <cmath>
#include <limits>

#include "ir/ops/nn_kernel_util.h"
#include "ir/ops/nn_ops.h"
#include "ir/ops/op_helpers.h"

namespace kiln {
namespace {

using nn::read_values;
using nn::write_values;

bool is_max_pool_dtype(DType dtype) {
  return is_float(dtype) || dtype == DType::kI8 || dtype == DType::kU8;
}

void check_pool_input(const Node& node) {
  const bool is_max = node.op().starts_with("max") || node.op() == "global_max_pool";
  if (is_max) {
    nn::require_operand_dtype(node, 0, is_max_pool_dtype, "X", "a float, i8 or u8 tensor");
  } else {
    nn::require_operand_dtype(node, 0, nn::is_float_dtype, "X", "a float tensor");
  }
  const Shape& x = operand_type(node, 0).shape;
  if (x.size() < 3) {
    throw InputError("X must be [N,C,D1,...] with at least one spatial dim, got [" +
                     shape_to_string(x) + "]");
  }
}

// ---- global pools -----------------------------------------------------------------------------

std::vector<TensorType> infer_global_pool(const Node& node) {
  check_pool_input(node);
  TensorType type = operand_type(node, 0);
  std::fill(type.shape.begin() + 2, type.shape.end(), 1);
  return {type};
}

// In double for every dtype: exact for the max (also of the i8/u8 values global_max_pool
// accepts), and a long sum for the average.
void global_pool_reference(const Node& node, std::span<const Tensor* const> inputs,
                           std::span<Tensor> outputs) {
  const bool max = node.op() == "global_max_pool";
  const Tensor& input = *inputs[0];
  const std::vector<double> x = read_values<double>(input);
  const int64_t planes = input.shape()[0] * input.shape()[1];
  const int64_t size = product(input.shape(), 2, input.shape().size());
  std::vector<double> y(static_cast<size_t>(planes));
  for (int64_t p = 0; p < planes; ++p) {
    const double* values = x.data() + p * size;
    double result = max ? -std::numeric_limits<double>::infinity() : 0.0;
    for (int64_t i = 0; i < size; ++i)
      result = max ? max_keep_nan(values[i], result) : result + values[i];
    y[p] = max ? result : result / static_cast<double>(size);
  }
  write_values(outputs[0], y);
}

// ---- windowed pools ---------------------------------------------------------------------------

struct PoolGeometry {
  int64_t planes = 0;  // N·C
  int64_t batch = 0, channels = 0;
  bool channels_last = false;  // X [N, D..., C] (max_pool and average_pool with channels_last=1)
  Shape in_spatial, out_spatial, kernel;
  std::vector<int64_t> strides, dilations, pads_begin, pads_end;
};

PoolGeometry pool_geometry(const Node& node) {
  check_pool_input(node);
  const Shape& x = operand_type(node, 0).shape;
  const size_t spatial = x.size() - 2;
  PoolGeometry geometry;
  geometry.channels_last = node.op() != "max_pool_with_indices" && node.int_attr("channels_last");
  if (node.op() != "max_pool_with_indices" && node.int_attr("channels_last") != 0 &&
      node.int_attr("channels_last") != 1) {
    throw InputError("attribute 'channels_last' must be 0 or 1, got " +
                     std::to_string(node.int_attr("channels_last")));
  }
  geometry.batch = x[0];
  geometry.channels = geometry.channels_last ? x.back() : x[1];
  geometry.planes = checked_mul(geometry.batch, geometry.channels, "N·C");
  if (geometry.channels_last) {
    geometry.in_spatial.assign(x.begin() + 1, x.end() - 1);
  } else {
    geometry.in_spatial.assign(x.begin() + 2, x.end());
  }
  geometry.kernel = node.ints_attr("kernel_shape");
  if (geometry.kernel.size() != spatial) {
    throw InputError("attribute 'kernel_shape' has " + std::to_string(geometry.kernel.size()) +
                     " values for " + std::to_string(spatial) + " spatial dims");
  }
  geometry.strides = nn::ints_attr_or_fill(node, "strides", spatial, 1);
  geometry.dilations = nn::ints_attr_or_fill(node, "dilations", spatial, 1);
  const std::vector<int64_t> pads = nn::ints_attr_or_fill(node, "pads", 2 * spatial, 0);
  geometry.pads_begin.assign(pads.begin(), pads.begin() + spatial);
  geometry.pads_end.assign(pads.begin() + spatial, pads.end());
  const bool ceil_mode = node.int_attr("ceil_mode") != 0;
  for (size_t d = 0; d < spatial; ++d) {
    if (geometry.kernel[d] < 1 || geometry.strides[d] < 1 || geometry.dilations[d] < 1) {
      throw InputError("attributes 'kernel_shape', 'strides' and 'dilations' must be positive");
    }
    if (geometry.pads_begin[d] < 0 || geometry.pads_end[d] < 0) {
      throw InputError("attribute 'pads' must not be negative");
    }
    const std::string dim_name = " in spatial dim " + std::to_string(d);
    const int64_t window = checked_add(
        checked_mul(geometry.kernel[d] - 1, geometry.dilations[d], "kernel extent" + dim_name), 1,
        "kernel extent" + dim_name);
    const int64_t padded = checked_add(
        checked_add(geometry.in_spatial[d], geometry.pads_begin[d], "padding" + dim_name),
        geometry.pads_end[d], "padding" + dim_name);
    const int64_t span = padded - window;
    if (span < 0) {
      throw InputError("kernel extent " + std::to_string(window) +
                       " exceeds the padded input in spatial dim " + std::to_string(d));
    }
    // With ceil_mode, ceil(span / stride) without forming span + stride - 1.
    const int64_t steps = span / geometry.strides[d] + (ceil_mode && span % geometry.strides[d]);
    int64_t size = steps + 1;
    // The last window starts at steps · stride; it is dropped when that is at or past
    // in + pads_begin (written as a division, which cannot overflow).
    const int64_t begin_limit = geometry.in_spatial[d] + geometry.pads_begin[d];
    if (ceil_mode && (begin_limit == 0 || steps > (begin_limit - 1) / geometry.strides[d])) {
      --size;
    }
    geometry.out_spatial.push_back(size);
  }
  // The kernels visit every tap of every window.
  check_element_count(geometry.kernel, "attribute 'kernel_shape'");
  return geometry;
}

std::vector<TensorType> infer_pool(const Node& node) {
  const PoolGeometry geometry = pool_geometry(node);
  TensorType type = operand_type(node, 0);
  std::copy(geometry.out_spatial.begin(), geometry.out_spatial.end(),
            type.shape.begin() + (geometry.channels_last ? 1 : 2));
  if (node.info().num_results == 2) return {type, {DType::kI64, type.shape}};
  return {type};
}

// One window: the flat offsets (within a plane) of its taps that fall inside the input, and
// how many of its taps fall inside the explicitly padded input.
struct Window {
  std::vector<int64_t> offsets;
  std::vector<std::vector<int64_t>> coordinates;  // spatial coordinates of each offset
  int64_t padded_count = 0;
};

void collect_window(const PoolGeometry& geometry, const std::vector<int64_t>& out_index,
                    Window& window) {
  const size_t rank = geometry.kernel.size();
  window.offsets.clear();
  window.coordinates.clear();
  window.padded_count = 0;
  std::vector<int64_t> k(rank, 0), coordinate(rank);
  const int64_t taps = num_elements(geometry.kernel);
  for (int64_t tap = 0; tap < taps; ++tap) {
    bool inside = true, in_padded = true;
    int64_t offset = 0;
    for (size_t d = 0; d < rank; ++d) {
      const int64_t t = out_index[d] * geometry.strides[d] - geometry.pads_begin[d] +
                        k[d] * geometry.dilations[d];
      coordinate[d] = t;
      inside = inside && t >= 0 && t < geometry.in_spatial[d];
      in_padded = in_padded && t < geometry.in_spatial[d] + geometry.pads_end[d];
      if (inside) offset = offset * geometry.in_spatial[d] + t;  // padding taps may lie far out
    }
    if (in_padded) ++window.padded_count;
    if (inside) {
      window.offsets.push_back(offset);
      window.coordinates.push_back(coordinate);
    }
    for (int64_t d = static_cast<int64_t>(rank) - 1; d >= 0; --d) {
      if (++k[d] < geometry.kernel[d]) break;
      k[d] = 0;
    }
  }
}

// Flat offset of a spatial coordinate in column-major order (MaxPool storage_order=1).
int64_t column_major_offset(const std::vector<int64_t>& coordinate, const Shape& spatial) {
  int64_t offset = 0, stride = 1;
  for (size_t d = 0; d < spatial.size(); ++d) {
    offset += coordinate[d] * stride;
    stride *= spatial[d];
  }
  return offset;
}

// Calls visit(plane, output position, window) for every output element, in order.
template <class Visit>
void for_each_window(const PoolGeometry& geometry, Visit&& visit) {
  const int64_t positions = num_elements(geometry.out_spatial);
  const size_t rank = geometry.kernel.size();
  // Windows are the same in every plane: collect them once.
  std::vector<Window> windows(static_cast<size_t>(positions));
  std::vector<int64_t> index(rank, 0);
  for (int64_t position = 0; position < positions; ++position) {
    collect_window(geometry, index, windows[position]);
    for (int64_t d = static_cast<int64_t>(rank) - 1; d >= 0; --d) {
      if (++index[d] < geometry.out_spatial[d]) break;
      index[d] = 0;
    }
  }
  for (int64_t plane = 0; plane < geometry.planes; ++plane) {
    for (int64_t position = 0; position < positions; ++position) {
      visit(plane, position, windows[position]);
    }
  }
}

// In double for every float dtype, rounded once when stored.
void average_pool_reference(const Node& node, std::span<const Tensor* const> inputs,
                            std::span<Tensor> outputs) {
  const PoolGeometry geometry = pool_geometry(node);
  const bool count_pad = node.int_attr("count_include_pad") != 0;
  const int64_t in_size = num_elements(geometry.in_spatial);
  const int64_t out_size = num_elements(geometry.out_spatial);
  std::vector<double> x = read_values<double>(*inputs[0]);
  if (geometry.channels_last) nn::swap_inner_blocks(x, geometry.batch, in_size, geometry.channels);
  std::vector<double> y(static_cast<size_t>(geometry.planes * out_size));
  for_each_window(geometry, [&](int64_t plane, int64_t position, const Window& window) {
    const double* values = x.data() + plane * in_size;
    double sum = 0;
    for (int64_t offset : window.offsets) sum += values[offset];
    const int64_t count =
        count_pad ? window.padded_count : static_cast<int64_t>(window.offsets.size());
    y[plane * out_size + position] = sum / static_cast<double>(count);
  });
  if (geometry.channels_last) nn::swap_inner_blocks(y, geometry.batch, geometry.channels, out_size);
  write_values(outputs[0], y);
}

// Max over each window; a window with no tap inside the input yields 0 and index -1.
template <class T>
void run_max_pool(const Node& node, const Tensor& input, std::span<Tensor> outputs) {
  const PoolGeometry geometry = pool_geometry(node);
  const bool column_major = node.int_attr("storage_order") != 0;
  const int64_t in_size = num_elements(geometry.in_spatial);
  const int64_t out_size = num_elements(geometry.out_spatial);
  std::vector<T> x = read_values<T>(input);
  if (geometry.channels_last) nn::swap_inner_blocks(x, geometry.batch, in_size, geometry.channels);
  std::vector<T> y(static_cast<size_t>(geometry.planes * out_size), T{});
  std::vector<int64_t> indices(y.size(), -1);
  for_each_window(geometry, [&](int64_t plane, int64_t position, const Window& window) {
    const T* values = x.data() + plane * in_size;
    int64_t best = -1;
    for (size_t i = 0; i < window.offsets.size(); ++i) {
      if (best < 0 || values[window.offsets[i]] > values[window.offsets[best]]) {
        best = static_cast<int64_t>(i);
      }
    }
    if (best < 0) return;
    const int64_t out = plane * out_size + position;
    y[out] = values[window.offsets[best]];
    const int64_t within = column_major
                               ? column_major_offset(window.coordinates[best], geometry.in_spatial)
                               : window.offsets[best];
    indices[out] = plane * in_size + within;
  });
  if (geometry.channels_last) nn::swap_inner_blocks(y, geometry.batch, geometry.channels, out_size);
  write_values(outputs[0], y);
  if (outputs.size() == 2) write_values(outputs[1], indices);
}

void max_pool_reference(const Node& node, std::span<const Tensor* const> inputs,
                        std::span<Tensor> outputs) {
  nn::visit_compute_type(outputs[0].dtype(),
                         [&](auto tag) { run_max_pool<decltype(tag)>(node, *inputs[0], outputs); });
}

std::vector<AttrSpec> window_attrs() {
  return {{"kernel_shape", AttrKind::kInts, std::nullopt},
          {"strides", AttrKind::kInts, Attribute(std::vector<int64_t>{})},
          {"pads", AttrKind::kInts, Attribute(std::vector<int64_t>{})},
          {"dilations", AttrKind::kInts, Attribute(std::vector<int64_t>{})},
          {"ceil_mode", AttrKind::kInt, Attribute(0)}};
}

}  // namespace

void register_nn_pool_ops(OpRegistry& registry) {
  for (const char* name : {"global_average_pool", "global_max_pool"}) {
    registry.add({.name = name,
                  .category = OpCategory::kReduction,
                  .attrs = {},
                  .infer = infer_global_pool,
                  .reference = global_pool_reference,
                  .reduced_axes = ReducedAxes::kSpatial});
  }
  // channels_last=1: X [N, D..., C], Y [N, D'..., C] (max_pool_with_indices has no such form).
  const AttrSpec channels_last{"channels_last", AttrKind::kInt, Attribute(0)};
  std::vector<AttrSpec> average_attrs = window_attrs();
  average_attrs.push_back({"count_include_pad", AttrKind::kInt, Attribute(0)});
  average_attrs.push_back(channels_last);
  registry.add({.name = "average_pool",
                .category = OpCategory::kReduction,
                .attrs = average_attrs,
                .infer = infer_pool,
                .reference = average_pool_reference});
  std::vector<AttrSpec> max_attrs = window_attrs();
  max_attrs.push_back({"storage_order", AttrKind::kInt, Attribute(0)});
  std::vector<AttrSpec> max_pool_attrs = max_attrs;
  max_pool_attrs.push_back(channels_last);
  registry.add({.name = "max_pool",
                .category = OpCategory::kReduction,
                .attrs = max_pool_attrs,
                .infer = infer_pool,
                .reference = max_pool_reference});
  registry.add({.name = "max_pool_with_indices",
                .category = OpCategory::kReduction,
                .attrs = max_attrs,
                .num_results = 2,
                .infer = infer_pool,
                .reference = max_pool_reference});
}

}  // namespace kiln
