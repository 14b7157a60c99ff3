// Geometry shared by conv and conv_transpose: attribute parsing, output sizes, and the tap walk
// behind im2col (conv) and col2im (conv_transpose).
//
// Both ops pair positions of a "grid" with positions of an "image" through the kernel: a grid
// position g and a kernel offset k touch the image at g·stride − pad_begin + k·dilation. For
// conv the grid is the output and the image the input (im2col gathers); for conv_transpose the
// grid is the input and the image the output (col2im scatters).
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "ir/graph.h"
#include "ir/ops/nn_kernel_util.h"

namespace kiln::nn {

struct ConvGeometry {
  int64_t batch = 0;
  int64_t in_channels = 0;
  int64_t out_channels = 0;
  int64_t group = 1;
  Shape in_spatial, out_spatial, kernel;
  std::vector<int64_t> strides, dilations, pads_begin, pads_end;
};

// Whether `node` is a channels-last conv (attribute channels_last=1): X [N,D...,C], W
// [M,k...,C/group] (OHWI for 2-D), Y [N,D'...,M]. Only conv has the attribute.
inline bool is_channels_last_conv(const Node& node) {
  return node.op() == "conv" && node.int_attr("channels_last") != 0;
}

// Geometry of a conv node (operands X [N,C,D...], W [M,C/group,k...], optional B [M]; or, with
// channels_last=1, X [N,D...,C], W [M,k...,C/group]) or a conv_transpose node (W
// [C,M/group,k...]). Throws InputError on inconsistent shapes/attributes.
ConvGeometry conv_geometry(const Node& node);
ConvGeometry conv_transpose_geometry(const Node& node);

struct TapGeometry {
  Shape grid;   // positions walked by the columns of the im2col matrix
  Shape image;  // spatial shape the taps land in
  Shape kernel;
  std::vector<int64_t> strides, dilations, pads_begin;
};

// Calls visit(column, image_offset) for every channel c < channels, kernel offset and grid
// position, in that nesting order, where column counts up from 0 (the im2col matrix position:
// row = c·kernel_size + kernel offset, column = grid position) and image_offset is the flat
// offset c·image_size + tap into the channel-major image, or -1 where the tap is padding.
template <class Visit>
void for_each_tap(const TapGeometry& geometry, int64_t channels, Visit&& visit) {
  const size_t rank = geometry.grid.size();
  const size_t last = rank - 1;
  const int64_t grid_size = num_elements(geometry.grid);
  const int64_t image_size = num_elements(geometry.image);
  const int64_t kernel_size = num_elements(geometry.kernel);
  const int64_t inner_count = geometry.grid[last];
  const int64_t outer_count = inner_count == 0 ? 0 : grid_size / inner_count;
  const std::vector<int64_t> image_strides = row_major_strides(geometry.image);
  const std::vector<int64_t> kernel_strides = row_major_strides(geometry.kernel);
  std::vector<int64_t> tap_start(rank);  // image coordinate of grid position 0, per dim
  std::vector<int64_t> grid_index(rank);
  int64_t column = 0;
  for (int64_t c = 0; c < channels; ++c) {
    for (int64_t kernel_pos = 0; kernel_pos < kernel_size; ++kernel_pos) {
      for (size_t d = 0; d < rank; ++d) {
        const int64_t k = (kernel_pos / kernel_strides[d]) % geometry.kernel[d];
        tap_start[d] = k * geometry.dilations[d] - geometry.pads_begin[d];
      }
      std::fill(grid_index.begin(), grid_index.end(), 0);
      for (int64_t outer = 0; outer < outer_count; ++outer) {
        bool inside = true;
        int64_t base = c * image_size;
        for (size_t d = 0; d < last; ++d) {
          const int64_t t = tap_start[d] + grid_index[d] * geometry.strides[d];
          inside = inside && t >= 0 && t < geometry.image[d];
          if (inside) base += t * image_strides[d];
        }
        const int64_t stride = geometry.strides[last];
        const int64_t extent = geometry.image[last];
        for (int64_t g = 0; g < inner_count; ++g) {
          // Padding taps can lie far outside the image: offsets are formed only for taps inside.
          const int64_t t = tap_start[last] + g * stride;
          visit(column++, inside && t >= 0 && t < extent ? base + t : int64_t{-1});
        }
        for (int64_t d = static_cast<int64_t>(last) - 1; d >= 0; --d) {
          if (++grid_index[d] < geometry.grid[d]) break;
          grid_index[d] = 0;
        }
      }
    }
  }
}

}  // namespace kiln::nn
