// The wgmma kernel's TMA tensor maps (see the header).
#include "codegen/wgmma_tensor_maps.h"

#include <algorithm>

namespace kiln::codegen {

std::optional<KernelTensorMap> operand_tensor_map(const ContractionView& view,
                                                  const WgmmaTiling& tiling, bool a, bool k_major,
                                                  int extent,
                                                  std::optional<OperandStrides> strides) {
  const Value* operand = a ? view.a_operand() : view.b_operand();
  const DType dtype = operand->type().dtype;
  if (!strides || !is_16_bit_float(dtype) ||
      (tiling.splits > 1 && tiling.split_depth % kWgmmaTileK != 0)) {
    return std::nullopt;
  }
  const int64_t other_size = a ? view.rows : view.cols;
  const int64_t other_stride = a ? strides->row : strides->column;
  const int64_t k_stride = a ? strides->column : strides->row;
  KernelTensorMap map;
  map.dtype = dtype;
  map.swizzle = kWgmmaTileK * 2;  // the swizzle's row: a step's 64 16-bit values
  if (k_major) {
    if (k_stride != 1) return std::nullopt;
    map.dims = {view.depth, other_size};
    map.strides = {other_stride * 2};
    map.box = {kWgmmaTileK, extent};
  } else {
    if (other_stride != 1 || extent % 64 != 0) return std::nullopt;
    map.dims = {other_size, view.depth};
    map.strides = {k_stride * 2};
    map.box = {64, kWgmmaTileK};
  }
  if (view.batch > 1 && strides->batch != 0) {
    map.dims.push_back(view.batch);
    map.strides.push_back(strides->batch * 2);
    map.box.push_back(1);
  }
  for (const int64_t stride : map.strides) {
    if (stride % 16 != 0 || stride >= (int64_t{1} << 40)) return std::nullopt;
  }
  // Boxes no larger than the tensor (boxes that only reach past its edges read zeros there): a
  // box larger than a whole dimension (K < 64, fewer rows than a tile) was never run on a GPU,
  // and such small operands gain little from TMA.
  for (size_t d = 0; d < map.dims.size(); ++d) {
    if (map.dims[d] >= (int64_t{1} << 31) || map.dims[d] < map.box[d]) return std::nullopt;
  }
  return map;
}

std::optional<std::pair<KernelTensorMap, std::vector<ViewMapCoordinate>>> view_tensor_map(
    const ContractionView& view, const WgmmaTiling& tiling, const FlatStridedView& flat) {
  const Value* a = view.a_operand();
  if (!is_16_bit_float(a->type().dtype) || view.batch != 1 || tiling.splits > 1 || flat.offset != 0 ||
      flat.digits.empty() || flat.digits.size() > 5 || view.a_contiguous_along_m()) {
    return std::nullopt;
  }
  const FlatStridedView::Digit& k_inner = flat.digits.back();
  if (k_inner.stride != 1 || k_inner.inner != 1 || k_inner.size % kWgmmaTileK != 0) {
    return std::nullopt;
  }
  // A digit must lie wholly along K or wholly along M.
  for (const FlatStridedView::Digit& digit : flat.digits) {
    if (digit.inner < view.depth && view.depth % (digit.inner * digit.size) != 0) {
      return std::nullopt;
    }
  }
  const auto digit_at = [&](int64_t inner) -> const FlatStridedView::Digit* {
    for (const FlatStridedView::Digit& digit : flat.digits) {
      if (digit.inner == inner && digit.size > 1) return &digit;
    }
    return nullptr;
  };
  // The m digits the tile's rows span, innermost first, with their boxes.
  std::vector<std::pair<const FlatStridedView::Digit*, int64_t>> m_boxes;
  int64_t rows = 1;
  while (rows < tiling.block_m) {
    const FlatStridedView::Digit* digit = digit_at(view.depth * rows);
    if (!digit) return std::nullopt;
    const int64_t left = tiling.block_m / rows;
    const int64_t box = std::min(digit->size, left);
    const bool outermost = digit == &flat.digits.front();
    if (box < left ? left % box != 0 : digit->size % box != 0 && !outermost) return std::nullopt;
    m_boxes.emplace_back(digit, box);
    rows *= box;
  }
  KernelTensorMap map;
  map.dtype = a->type().dtype;
  map.swizzle = kWgmmaTileK * 2;  // the swizzle's row: a step's 64 16-bit values
  std::vector<ViewMapCoordinate> coordinates;
  const auto add = [&](const FlatStridedView::Digit& digit, int64_t box) {
    const bool along_k = digit.inner < view.depth;
    map.dims.push_back(digit.size);
    if (!map.box.empty()) map.strides.push_back(digit.stride * 2);
    map.box.push_back(box);
    coordinates.push_back({.along_k = along_k,
                           .divisor = along_k ? digit.inner : digit.inner / view.depth,
                           .size = &digit == &flat.digits.front() ? 0 : digit.size});
  };
  add(k_inner, kWgmmaTileK);
  for (const auto& [digit, box] : m_boxes) add(*digit, box);
  for (const FlatStridedView::Digit& digit : flat.digits) {
    const bool boxed = std::any_of(m_boxes.begin(), m_boxes.end(),
                                   [&](const auto& m_box) { return m_box.first == &digit; });
    if (&digit != &k_inner && !boxed && digit.size > 1) add(digit, 1);
  }
  if (map.dims.size() > 5) return std::nullopt;
  // A broadcast digit (stride 0) would make a map no TMA copy of kiln's has run with.
  for (const int64_t stride : map.strides) {
    if (stride <= 0 || stride % 16 != 0 || stride >= (int64_t{1} << 40)) return std::nullopt;
  }
  for (const int64_t dim : map.dims) {
    if (dim >= (int64_t{1} << 31)) return std::nullopt;
  }
  return std::pair{map, coordinates};
}

}  // namespace kiln::codegen
