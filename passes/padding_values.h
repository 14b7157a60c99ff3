// What a value holds at the positions that padding adds along a row axis, where its other axes
// of the same class are real (the padding analysis, passes/padding_analysis.h). The runtime pads inputs with zeros, so at first those positions
// hold exactly 0; elementwise ops on them and on scalar constants give exact values again (a
// mask padded with 0 becomes (1 - 0) * -10000 = -10000 there), and adding such a value of -1e4 or
// less to ordinary values gives a *masked* one: a score that a softmax along the axis turns into
// exactly 0, since exp underflows to 0 in f32 once an argument is 104 below the row's maximum.
// Everything else is ordinary: some finite value, like those of real positions.
#pragma once

#include <vector>

#include "ir/graph.h"

namespace kiln::passes {

// At most this, added to ordinary values, masks them (models write -10000, -1e9 or the
// dtype's lowest value).
inline constexpr double kMaskBound = -1e4;

struct PaddedValue {
  enum class Kind { kOrdinary, kExactly, kMasked };
  Kind kind = Kind::kOrdinary;
  double value = 0;  // kExactly only

  static PaddedValue ordinary() { return {}; }
  static PaddedValue exactly(double v) { return {Kind::kExactly, v}; }
  static PaddedValue masked() { return {Kind::kMasked, 0}; }
  bool is_exactly(double v) const { return kind == Kind::kExactly && value == v; }
  // Masked, or exactly a value at most kMaskBound (as low below ordinary values).
  bool masks() const {
    return kind == Kind::kMasked || (kind == Kind::kExactly && value <= kMaskBound);
  }
  bool operator==(const PaddedValue&) const = default;
};

// What elementwise `node` (one result) holds at padded positions, given what each operand holds
// there: its own padded value where the operand has the axis's rows, exactly its element where
// it is a constant of one element, ordinary otherwise.
PaddedValue elementwise_padded_value(const Node& node, const std::vector<PaddedValue>& operands);

}  // namespace kiln::passes
