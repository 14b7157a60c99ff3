// Comparing a model at two sizes of one class of varying dims (kiln/dynamic_compile.h, step 2):
// what the padding analysis cannot see, because the importer folded it into constants and
// attributes — a mean over the batch as a division by the folded batch size, a column picked by
// the batch size, a constant of both classes' sizes.
#pragma once

#include <cstdint>
#include <string>

#include "ir/graph.h"
#include "passes/padding_analysis.h"

namespace kiln {

// Why `small`, the model with class `dim_class` at `small_size`, is not `large` (at
// `large_size`, analyzed as `rows`) cut down to its rows, or empty. Every value (inputs, node
// results) may change size only along a row axis of that class, by its rows' inner size per size
// step; node attributes must be equal but for reshape's and expand's shape and resize's sizes at
// such an axis of their result and slice bounds that take such an axis whole at both sizes;
// every constant of `small` must be the leading corner of `large`'s (same position in the
// graph's constant list).
std::string size_difference(const passes::PaddingAnalysis& rows, int dim_class, int64_t large_size,
                            int64_t small_size, const Graph& large, const Graph& small);

}  // namespace kiln
