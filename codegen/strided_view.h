// Strided views: a value computed from one buffer by data movement alone (reshape, transpose,
// slice, gather at one constant index, expand, identity, casts to the same type) whose element
// at coordinates (i_0, ..., i_{r-1}) is the buffer's element at flat index
// offset + Σ strides[d] · i_d. Kernels that find one can copy whole rows of it (cp.async) instead
// of computing it element by element through the index maps (codegen/index_maps.h).
//
// The strides are composed op by op, exactly. Each axis of the view is kept as a list of
// (size, stride) parts, outermost first, so that a reshape may merge axes that are not contiguous
// among themselves and split them again later (torchvision's attention merges batch and heads,
// transposes, then splits them back): a reshape regroups the parts into the new axes, splitting a
// part only where the new size divides it; a slice or a constant gather needs its axis to be one
// part (or the slice to take all of it); a transpose permutes axes; an expand adds stride-0 parts.
// At the end each axis's parts must be one arithmetic progression. Anything else (a reshape that
// cuts a part unevenly, an op that computes) gives no strided view, so whoever asks falls back to
// the element machinery: nothing is guessed.
#pragma once

#include <functional>
#include <optional>
#include <vector>

#include "ir/graph.h"

namespace kiln::codegen {

struct StridedView {
  const Value* source = nullptr;  // the buffer read
  Shape shape;                    // the view's shape
  std::vector<int64_t> strides;   // source elements per step along each axis (0: broadcast)
  int64_t offset = 0;             // the source index of element (0, ..., 0)
};

// A view by its flat index: the view's element at flat (row-major) index f is the source's
// element at offset + Σ_j (f / inner_j mod size_j) · stride_j over `digits`, outermost first
// (inner_j: the product of the later digits' sizes). Every strided view has this form, and so
// have views whose axes are not one progression each (a transpose then a reshape that merges
// axes: BERT's attention output read as [batch · seq, heads · head]).
struct FlatStridedView {
  struct Digit {
    int64_t size, stride, inner;
  };
  const Value* source = nullptr;
  std::vector<Digit> digits;
  int64_t offset = 0;
};

// `value` as a flat strided view of a value for which `is_source` holds (the same composition
// as strided_view, without requiring one progression an axis); nullopt as strided_view.
std::optional<FlatStridedView> flat_strided_view(
    const Value* value, const std::function<bool(const Value*)>& is_source);

// The strided view `value` is of a value for which `is_source` holds, following producers through
// the data-movement ops above; nullopt when another op lies on the way or a reshape breaks the
// strides. A value for which is_source holds is its own contiguous view.
std::optional<StridedView> strided_view(const Value* value,
                                        const std::function<bool(const Value*)>& is_source);

}  // namespace kiln::codegen
