// The tensor maps with which the wgmma contraction kernel's TMA copies bring an operand's tile
// of a K step (codegen/wgmma_contraction_emitter.h): a plain strided operand's, and a K-major A's
// that is a strided view of a kernel input. Each box is the tile in the 128-byte swizzle the
// kernel's descriptors read (64 values of 16 bits a row).
#pragma once

#include <optional>
#include <utility>
#include <vector>

#include "codegen/contraction_tiling.h"
#include "codegen/contraction_view.h"
#include "codegen/strided_view.h"
#include "runtime/kernel_header.h"

namespace kiln::codegen {

// The tensor map with which TMA copies an operand's tile of a K step, where it can: the operand
// a buffer read as it lies (no prologue, gather or view) and a plain strided tensor
// (`strides`, of A(b, m, k) when `a`, else of B(b, k, n)), 16-bit, its strides whole 16 bytes,
// and the K steps of a split-K slice never reaching into the next slice. The tile's layout (the
// header) is the 128-byte swizzle of boxes 64 values wide: a K-major tile one box of 64 k ×
// `extent` rows, an MN-major one extent / 64 boxes of 64 m or n × 64 k. Where the grid has
// several batch indices and the operand differs between them, a third dimension over the batch.
// Outside the operand the boxes read zeros, as the cp.async copies zero-fill.
std::optional<KernelTensorMap> operand_tensor_map(const ContractionView& view,
                                                  const WgmmaTiling& tiling, bool a, bool k_major,
                                                  int extent,
                                                  std::optional<OperandStrides> strides);

// A coordinate of a view's tensor map (view_tensor_map): (k0 / divisor) mod size along K, or
// the same of m0 along M; size 0: no modulo (the outermost digit).
struct ViewMapCoordinate {
  bool along_k = true;
  int64_t divisor = 1;
  int64_t size = 0;
};

// A K-major A that is a strided view of a kernel input (a_chunk_view: BERT's attention output
// [batch, heads, seq, head] read as [batch · seq, heads · head], ViT's tokens read sequence
// first) as a tensor map of the input whose box is the tile: the view's digits as dimensions,
// the innermost k digit first (stride 1, whole 64-value boxes: its size a multiple of 64), then
// the m digits from the innermost out until their boxes make the tile's 128 rows (each whole
// where it is smaller than what is left, the last a multiple of its box unless it is the
// outermost digit, where rows past M read zeros), then the other digits with boxes of 1, each at
// the coordinate its k0 or m0 gives. Unsplit, one batch index, no offset, at most 5 dimensions;
// nullopt otherwise.
std::optional<std::pair<KernelTensorMap, std::vector<ViewMapCoordinate>>> view_tensor_map(
    const ContractionView& view, const WgmmaTiling& tiling, const FlatStridedView& flat);

}  // namespace kiln::codegen
