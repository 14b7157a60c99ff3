// The convolution ops: conv (ONNX Conv, any spatial rank, groups, dilations, strides, pads,
// optional bias) as im2col + gemm_accumulate, and conv_transpose (ONNX ConvTranspose) as
// gemm_accumulate + col2im. Converters resolve auto_pad and output_shape into explicit pads.
// X and W are read in f32 (f64 for f64); the products accumulate in double (gemm_accumulate) and
// the result is rounded once, when stored (write_values). tf32=1 rounds X and W (nn_tf32.h).
#include <algorithm>

#include "ir/ops/nn_conv_geometry.h"
#include "ir/ops/nn_gemm_kernel.h"
#include "ir/ops/nn_kernel_util.h"
#include "ir/ops/nn_ops.h"
#include "ir/ops/nn_tf32.h"
#include "ir/ops/op_helpers.h"

namespace kiln {
namespace {

using nn::ConvGeometry;
using nn::read_values;
using nn::TapGeometry;
using nn::write_values;

// What both kernels work on: the input X and the weights W in the compute type T (rounded to
// TF32 when the node has tf32=1), the output Y in its accumulator type (started from the bias
// broadcast over batch and spatial positions, or zero without bias), with the spatial and
// per-group channel sizes.
template <class T>
struct ConvBuffers {
  using Acc = nn::Accumulator<T>;

  ConvBuffers(const Node& node, const ConvGeometry& geometry, std::span<const Tensor* const> inputs)
      : x(read_values<T>(*inputs[0])),
        w(read_values<T>(*inputs[1])),
        y(static_cast<size_t>(geometry.batch * geometry.out_channels *
                              num_elements(geometry.out_spatial))),
        in_size(num_elements(geometry.in_spatial)),
        out_size(num_elements(geometry.out_spatial)),
        group_in(geometry.in_channels / geometry.group),
        group_out(geometry.out_channels / geometry.group) {
    nn::round_operand_to_tf32(node, x);
    nn::round_operand_to_tf32(node, w);
    if (inputs.size() < 3) return;
    const std::vector<Acc> bias = read_values<Acc>(*inputs[2]);
    for (int64_t plane = 0; plane < geometry.batch * geometry.out_channels; ++plane) {
      std::fill_n(y.data() + plane * out_size, out_size, bias[plane % geometry.out_channels]);
    }
  }

  std::vector<T> x, w;
  std::vector<Acc> y;
  int64_t in_size, out_size, group_in, group_out;
};

// [N, M, output spatial dims...] in X's dtype; channels-last: [N, output spatial dims..., M].
std::vector<TensorType> output_types(const Node& node, const ConvGeometry& geometry) {
  nn::check_tf32_attr(node);
  Shape shape{geometry.batch};
  if (!nn::is_channels_last_conv(node)) shape.push_back(geometry.out_channels);
  shape.insert(shape.end(), geometry.out_spatial.begin(), geometry.out_spatial.end());
  if (nn::is_channels_last_conv(node)) shape.push_back(geometry.out_channels);
  return {{operand_type(node, 0).dtype, shape}};
}

bool is_pointwise(const ConvGeometry& geometry) {
  for (size_t d = 0; d < geometry.kernel.size(); ++d) {
    if (geometry.kernel[d] != 1 || geometry.strides[d] != 1 || geometry.pads_begin[d] != 0 ||
        geometry.pads_end[d] != 0) {
      return false;
    }
  }
  return true;
}

// ---- conv -------------------------------------------------------------------------------------

std::vector<TensorType> infer_conv(const Node& node) {
  return output_types(node, nn::conv_geometry(node));
}

// A channels-last conv moves X and W to channels-first order, runs the channels-first product
// (so the sums are formed in the same order, and equal the channels-first conv's bit for bit)
// and moves Y back to channels-last.
template <class T>
void run_conv(const Node& node, std::span<const Tensor* const> inputs, Tensor& output) {
  const ConvGeometry geometry = nn::conv_geometry(node);
  ConvBuffers<T> buffers(node, geometry, inputs);
  auto& [x, w, y, in_size, out_size, group_in, group_out] = buffers;
  const int64_t depth = group_in * num_elements(geometry.kernel);  // gemm k
  const bool channels_last = nn::is_channels_last_conv(node);
  if (channels_last) {
    nn::swap_inner_blocks(x, geometry.batch, in_size, geometry.in_channels);
    nn::swap_inner_blocks(w, geometry.out_channels, num_elements(geometry.kernel), group_in);
  }
  const TapGeometry taps{geometry.out_spatial, geometry.in_spatial, geometry.kernel,
                         geometry.strides,     geometry.dilations,  geometry.pads_begin};
  const bool pointwise = is_pointwise(geometry);
  std::vector<T> columns(pointwise ? 0 : static_cast<size_t>(depth * out_size));
  for (int64_t n = 0; n < geometry.batch; ++n) {
    for (int64_t g = 0; g < geometry.group; ++g) {
      const T* image = x.data() + (n * geometry.in_channels + g * group_in) * in_size;
      if (!pointwise) {
        nn::for_each_tap(taps, group_in, [&](int64_t column, int64_t offset) {
          columns[column] = offset < 0 ? T{} : image[offset];
        });
      }
      nn::gemm_accumulate(group_out, out_size, depth, w.data() + g * group_out * depth, depth,
                          pointwise ? image : columns.data(), out_size,
                          y.data() + (n * geometry.out_channels + g * group_out) * out_size,
                          out_size);
    }
  }
  if (channels_last) nn::swap_inner_blocks(y, geometry.batch, geometry.out_channels, out_size);
  write_values(output, y);
}

void conv_reference(const Node& node, std::span<const Tensor* const> inputs,
                    std::span<Tensor> outputs) {
  nn::visit_float_compute_type(
      outputs[0].dtype(), [&](auto tag) { run_conv<decltype(tag)>(node, inputs, outputs[0]); });
}

// ---- conv_transpose ---------------------------------------------------------------------------

std::vector<TensorType> infer_conv_transpose(const Node& node) {
  return output_types(node, nn::conv_transpose_geometry(node));
}

template <class T>
void run_conv_transpose(const Node& node, std::span<const Tensor* const> inputs, Tensor& output) {
  using Acc = nn::Accumulator<T>;
  const ConvGeometry geometry = nn::conv_transpose_geometry(node);
  ConvBuffers<T> buffers(node, geometry, inputs);
  auto& [x, w, y, in_size, out_size, group_in, group_out] = buffers;
  const int64_t rows = group_out * num_elements(geometry.kernel);  // gemm m
  const TapGeometry taps{geometry.in_spatial, geometry.out_spatial, geometry.kernel,
                         geometry.strides,    geometry.dilations,   geometry.pads_begin};
  std::vector<Acc> columns(static_cast<size_t>(rows * in_size));
  for (int64_t g = 0; g < geometry.group; ++g) {
    // W's group block is [group_in, rows]; the product needs it as [rows, group_in].
    const std::vector<T> weights = nn::transposed(w.data() + g * group_in * rows, group_in, rows);
    for (int64_t n = 0; n < geometry.batch; ++n) {
      std::fill(columns.begin(), columns.end(), Acc{});
      nn::gemm_accumulate(rows, in_size, group_in, weights.data(), group_in,
                          x.data() + (n * geometry.in_channels + g * group_in) * in_size, in_size,
                          columns.data(), in_size);
      Acc* image = y.data() + (n * geometry.out_channels + g * group_out) * out_size;
      nn::for_each_tap(taps, group_out, [&](int64_t column, int64_t offset) {
        if (offset >= 0) image[offset] += columns[column];
      });
    }
  }
  write_values(output, y);
}

void conv_transpose_reference(const Node& node, std::span<const Tensor* const> inputs,
                              std::span<Tensor> outputs) {
  nn::visit_float_compute_type(outputs[0].dtype(), [&](auto tag) {
    run_conv_transpose<decltype(tag)>(node, inputs, outputs[0]);
  });
}

std::vector<AttrSpec> window_attrs() {
  return {{"strides", AttrKind::kInts, Attribute(std::vector<int64_t>{})},
          {"pads", AttrKind::kInts, Attribute(std::vector<int64_t>{})},
          {"dilations", AttrKind::kInts, Attribute(std::vector<int64_t>{})},
          {"group", AttrKind::kInt, Attribute(1)},
          nn::tf32_attr()};
}

}  // namespace

void register_nn_conv_ops(OpRegistry& registry) {
  std::vector<AttrSpec> conv_attrs = window_attrs();
  // 1: X [N,D...,C], W [M,k...,C/group], Y [N,D'...,M] (nn_conv_geometry.h).
  conv_attrs.push_back({"channels_last", AttrKind::kInt, Attribute(0)});
  registry.add({.name = "conv",
                .category = OpCategory::kOutElementwiseFusable,
                .attrs = conv_attrs,
                .min_operands = 2,
                .max_operands = 3,
                .infer = infer_conv,
                .reference = conv_reference,
                .precision = PrecisionClass::kLowPrecision,
                .rounds_to_tf32 = true});
  std::vector<AttrSpec> transpose_attrs = window_attrs();
  transpose_attrs.push_back({"output_padding", AttrKind::kInts, Attribute(std::vector<int64_t>{})});
  registry.add({.name = "conv_transpose",
                .category = OpCategory::kOutElementwiseFusable,
                .attrs = transpose_attrs,
                .min_operands = 2,
                .max_operands = 3,
                .infer = infer_conv_transpose,
                .reference = conv_transpose_reference,
                .precision = PrecisionClass::kLowPrecision,
                .rounds_to_tf32 = true});
}

}  // namespace kiln
