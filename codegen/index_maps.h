// Index maps of the injective ops: where each output element of a reshape, transpose, slice,
// concat, pad, expand, tile, gather, gather_elements, gather_nd, depth_to_space, space_to_depth
// or trilu comes from, as index arithmetic on constant shapes.
#pragma once

#include <cstdint>
#include <string>
#include <utility>

#include "codegen/element_emitter.h"

namespace kiln::codegen {

// The element at flat `index` of the result of injective `node`; throws UnsupportedError
// naming the op for an injective op without an index map here.
std::string injective_element(ElementEmitter& emitter, const Node& node, const std::string& index);

// Slice's first element and step along an axis of `dim` elements, clamped as ONNX says.
std::pair<int64_t, int64_t> slice_start_step(int64_t start, int64_t step, int64_t dim);

}  // namespace kiln::codegen
