// A contraction computed transposed: outᵀ[b, n, m] = Σ_k Bᵀ(b, n, k) · Aᵀ(b, k, m), a view whose
// A is the base view's B, whose B its A, and whose rows its columns. A kernel tiles the swapped
// problem where the base's rows quantize badly into its tiles' fixed height and its columns do
// not: ResNet-50 b32's 7 × 7 1×1 down-projection, 1568 pixels × 512 channels, pads 1568 to 13
// tiles of 128 rows, while 512 channels make 8 tiles of 64 and 1568 pixels 14 of 112 (wgmma's N
// may be any multiple of 8; its M is 64 a warpgroup). cuBLAS runs that shape so.
//
// The result then lies along the swapped view's m (result_contiguous_along_m): the wgmma kernel
// stages its sums transposed and finishes them through the base view (its runs of 8 columns).
#pragma once

#include "codegen/contraction_view.h"

namespace kiln::codegen {

class SwappedContractionView : public ContractionView {
 public:
  // `base` must outlive the view.
  explicit SwappedContractionView(ContractionView& base);

  const Value* a_operand() const override { return base_.b_operand(); }
  const Value* b_operand() const override { return base_.a_operand(); }
  std::string a_index(ElementEmitter& e, const std::string& b, const std::string& m,
                      const std::string& k) override {
    return base_.b_index(e, b, k, m);
  }
  std::string b_index(ElementEmitter& e, const std::string& b, const std::string& k,
                      const std::string& n) override {
    return base_.a_index(e, b, n, k);
  }
  bool a_contiguous_along_m() const override { return !base_.b_contiguous_along_k(); }
  bool b_contiguous_along_k() const override { return !base_.a_contiguous_along_m(); }
  int64_t a_contiguous_run() const override { return base_.b_contiguous_run(); }
  int64_t b_contiguous_run() const override { return base_.a_contiguous_run(); }
  // (b, r, c) of the swapped A is (b, c, r) of the base's B, and likewise for B.
  std::optional<OperandStrides> a_strides() const override;
  std::optional<OperandStrides> b_strides() const override;
  bool result_contiguous_along_m() const override { return !base_.result_contiguous_along_m(); }
  bool result_index_ends_in_n() const override { return false; }
  std::string result_index(ElementEmitter& e, const std::string& b, const std::string& m,
                           const std::string& n) override {
    return base_.result_index(e, b, n, m);
  }
  std::string result(ElementEmitter& e, const std::string& b, const std::string& m,
                     const std::string& n, const std::string& sum) override {
    return base_.result(e, b, n, m, sum);
  }

 private:
  ContractionView& base_;
};

// Whether a kernel may compute `base` swapped: both operands plain strided tensors (no
// convolution gather or padding), the base's A lying along k (so the swapped B does, as wgmma's
// B tiles of any multiple of 8 columns need), its result along n.
bool swaps_contraction(const ContractionView& base);

}  // namespace kiln::codegen
