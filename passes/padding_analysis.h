// Padding analysis: may a varying input dimension be padded? A program compiled for batch 16 can
// serve batch 5 by padding the inputs to 16 rows and keeping the first 5 rows of each output —
// but only if no output element of a real row reads a padded row. This analysis proves that (or
// says which node prevents it) by following each varying dimension ("a row axis") through the
// graph: every op must keep the rows of its operands apart (elementwise ops, convolutions and
// pools along the batch, matrix products along M or N, reductions along other axes, reshapes that
// keep the row axis the outermost factor of an axis), and each output's row axis is found, with
// how many consecutive indices each row covers there ([B, S] reshaped to [B·S] covers S).
//
// Varying dimensions that meet on one axis (x's batch added to mask's batch) are one class: they
// must take the same size. A class whose rows some op mixes (softmax or a sum over the axis, a
// matrix product contracting it, a constant with a full-size axis there) cannot be padded; the
// reason names the node.
//
// A padded sequence may also be summed over where the padding provably adds nothing: padded keys
// whose scores an additive mask (padded with 0, so (1 - 0) * -10000 there) lowers by 1e4 or
// more get exactly 0 from a softmax along them, and a matrix product contracting along padded
// rows whose elements are exactly 0 in one operand adds only zeros (passes/padding_values.h).
// This holds as it does for any batch a tokenizer pads: the padded positions' own values are
// finite and their scores within 9896 of the real ones', so that exp underflows to 0. What a
// value holds "along an axis" is claimed for positions padded along it and real along the
// value's other axes of the same class (a causal mask holds its masking value at a real query's
// padded keys, not at a padded query's).
//
// Constants are taken as they are: one with the padded size along a row axis (token-type ids of
// zeros expanded to [batch, sequence], position embeddings) is read as rows, and one computed
// from an input's shape (1/batch folded into a scalar) is not seen. Both are the caller's to
// check: kiln/dynamic_compile.cc loads the model at a second size and requires every constant
// there to be the leading corner of the first's.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "ir/graph.h"

namespace kiln::passes {

// A dimension of a graph input whose size varies.
struct VaryingDim {
  int input = 0;  // position in graph.inputs()
  int axis = 0;
  int64_t min = 1;  // the smallest size a run may have: rows below it are always real
};

// Where a class's rows lie in a value: along `axis`, index = (o · rows + row) · inner + r
// (o < outer, r < inner). outer > 1 where the rows are an inner digit of merged axes: [B, S, H]
// reshaped to [B·S, H] has S's rows on axis 0 with outer B (and B's with inner S).
struct RowAxis {
  int axis = 0;
  int64_t inner = 1;
  int dim_class = 0;
  int64_t outer = 1;
  bool operator==(const RowAxis&) const = default;
};

struct PaddingAnalysis {
  std::vector<int> dim_class;  // per VaryingDim given, its class: 0, 1, ...
  // Per class: empty when padding its dims keeps real rows exact, else why not ("node /Softmax
  // (softmax) reduces along the padded axis 3").
  std::vector<std::string> refusal;
  // Per class: what its padding relies on beyond rows kept apart, for the user to see ("2
  // softmaxes over keys masked by -1e4 or less (the first: node ...)"), or empty.
  std::vector<std::string> relies_on;
  // Per graph output: its row axes (at most one per class, with outer 1; a class on two axes
  // of one output, or inside a merged axis, is refused).
  std::vector<std::vector<RowAxis>> output_rows;
  // Every value with rows (classes as above); values without rows are absent.
  std::map<const Value*, std::vector<RowAxis>> value_rows;
};

// A constant's axis that holds a varying dim's rows: its size changes with the dim's (a mask
// folded from the sequence length, [1, 1, S, 1]). kiln/dynamic_compile.cc finds them by loading
// the model at two sizes; here they are rows like an input's, with `inner` elements a row.
struct ConstantRows {
  size_t constant = 0;  // index in graph.constants()
  int axis = 0;
  int dim = 0;  // index into the VaryingDims
  int64_t inner = 1;
};

// `graph` with concrete shapes, before fusion (op-level), each varying dim of size >= 2.
PaddingAnalysis analyze_padding(const Graph& graph, const std::vector<VaryingDim>& dims,
                                const std::vector<ConstantRows>& constant_rows = {});

}  // namespace kiln::passes
