// The swapped contraction view (see the header).
#include "codegen/swapped_contraction_view.h"

namespace kiln::codegen {
namespace {

std::optional<OperandStrides> transposed(std::optional<OperandStrides> strides) {
  if (!strides) return std::nullopt;
  return OperandStrides{.batch = strides->batch, .row = strides->column, .column = strides->row};
}

}  // namespace

SwappedContractionView::SwappedContractionView(ContractionView& base)
    : ContractionView(base.node()), base_(base) {
  batch = base.batch;
  rows = base.cols;
  cols = base.rows;
  depth = base.depth;
}

std::optional<OperandStrides> SwappedContractionView::a_strides() const {
  return transposed(base_.b_strides());
}

std::optional<OperandStrides> SwappedContractionView::b_strides() const {
  return transposed(base_.a_strides());
}

bool swaps_contraction(const ContractionView& base) {
  return base.a_strides() && base.b_strides() && !base.a_contiguous_along_m() &&
         !base.result_contiguous_along_m() && base.result_index_ends_in_n();
}

}  // namespace kiln::codegen
