// Data-movement primitives shared by the layout ops' reference kernels. They copy raw elements
// (whatever the dtype), so layout ops are exact for every dtype and never convert values.
#pragma once

#include <cstdint>
#include <limits>
#include <vector>

#include "ir/tensor.h"

namespace kiln {

// Marks an output index along an axis that takes the fill value instead of a source element.
inline constexpr int64_t kFillOffset = std::numeric_limits<int64_t>::min();

// For each output axis d and index i along it, the element offset that index contributes to the
// source position (or kFillOffset). Output element (i0, ..., in) reads
// src[offsets[0][i0] + ... + offsets[n][in]].
using AxisOffsets = std::vector<std::vector<int64_t>>;

// Offsets of a strided walk: start + i * stride for i in [0, count).
std::vector<int64_t> strided_offsets(int64_t count, int64_t start, int64_t stride);

// Fills `dst` (whose element count is the product of the tables' sizes; the tables may describe
// a view of dst with another shape) from `src`; `fill` (one element of dst's dtype)
// supplies the kFillOffset positions and is required when any are present.
void copy_by_axis_offsets(const Tensor& src, const AxisOffsets& offsets, Tensor& dst,
                          const Tensor* fill = nullptr);

// dst = transpose(src viewed as `view_shape`, perm), laid out contiguously in dst.
void permute_copy(const Tensor& src, const Shape& view_shape, const std::vector<int64_t>& perm,
                  Tensor& dst);

// Copies every byte of src into dst (same element count and dtype).
void copy_elements(const Tensor& src, Tensor& dst);

}  // namespace kiln
