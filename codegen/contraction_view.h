// The GEMM view of one contraction op (gemm, matmul, conv): its sizes as a batched GEMM,
// out[b, m, n] = Σ_k A(b, m, k) · B(b, k, n), and how (b, m, k), (b, k, n) and (b, m, n) map to
// its operands' and result's elements, written through the element machinery
// (codegen/element_emitter.h). Both contraction kernels (the SIMT one and the tensor-core one)
// read their operands and write their results through it:
//
//   matmul  A, B: the operands (numpy batch broadcasting); b over the result's batch dims; a
//           1-D A is one row (m = 0), a 1-D B one column (n = 0)
//   gemm    alpha · op(A) · op(B) + beta · C, op = transpose when transA / transB
//   conv    2-D, implicit GEMM per group b: m = (image, out_y, out_x), n = output channel of
//           the group, k = (input channel of the group, kernel_y, kernel_x); padding reads 0.
//           Channels-last (channels_last=1: X NHWC, W OHWI, Y NHWC): k = (kernel_y, kernel_x,
//           input channel of the group), the result contiguous along n
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "codegen/element_emitter.h"
#include "codegen/kernel_body.h"

namespace kiln::codegen {

// Where an operand lies as a plain strided tensor in its buffer (ContractionView::a_strides):
// element (b, r, c) of A(b, m, k) or of B(b, k, n) at b · batch + r · row + c · column, in
// elements; batch 0 where every b reads the same matrix.
struct OperandStrides {
  int64_t batch = 0, row = 0, column = 0;
};

class ContractionView {
 public:
  explicit ContractionView(const Node& node) : node_(node) {}
  virtual ~ContractionView() = default;
  const Node& node() const { return node_; }
  int64_t batch = 1, rows = 1, cols = 1, depth = 1;

  // The operands (the values A and B read) and the flat index of A(b, m, k) in operand A and of
  // B(b, k, n) in operand B.
  virtual const Value* a_operand() const { return node_.operand(0); }
  virtual const Value* b_operand() const { return node_.operand(1); }
  virtual std::string a_index(ElementEmitter& e, const std::string& b, const std::string& m,
                              const std::string& k) = 0;
  virtual std::string b_index(ElementEmitter& e, const std::string& b, const std::string& k,
                              const std::string& n) = 0;
  // A(b, m, k) and B(b, k, n) as element variables (emitting their loads and prologue ops).
  std::string a_element(ElementEmitter& e, const std::string& b, const std::string& m,
                        const std::string& k) {
    return e.element(a_operand(), a_index(e, b, m, k));
  }
  std::string b_element(ElementEmitter& e, const std::string& b, const std::string& k,
                        const std::string& n) {
    return e.element(b_operand(), b_index(e, b, k, n));
  }
  // A condition under which A(b, m, k) is loaded; elsewhere it reads as zero ("": always).
  virtual std::string a_padding(ElementEmitter&, const std::string&, const std::string&,
                                const std::string&) {
    return "";
  }
  // Emits the temps of a_index and a_padding that depend on row `m` alone (a convolution's
  // image and output pixel), so that calls in inner scopes with the same `m` reuse them (the
  // ElementEmitter's temps are shared by expression): a kernel hoists them out of its k loop.
  virtual void a_row_terms(ElementEmitter&, const std::string&) {}

  // The dimension along which neighbouring elements of A and of B lie next to each other in
  // memory, so a tile loads them coalesced,
  virtual bool a_contiguous_along_m() const = 0;  // else along k
  virtual bool b_contiguous_along_k() const = 0;  // else along n
  // and along it, runs of how many elements are consecutive in the operand (each run starting
  // at a multiple of its length): a row's length, a 1×1 convolution's input image's pixels; 1
  // where the operand is not read as it lies (a convolution's input, otherwise).
  virtual int64_t a_contiguous_run() const = 0;
  virtual int64_t b_contiguous_run() const = 0;
  // Runs of consecutive k (each starting at a multiple of its length, along k) that lie
  // consecutive in A at one m and are read wholly or not at all: a_index of a run's first k
  // plus i is the index of its i-th element, and a_padding of its first k holds for the whole
  // run (a channels-last convolution's group of input channels at one (pixel, tap), inside the
  // image or wholly in its padding). A kernel may copy such runs in 16-byte chunks (cp.async,
  // zero-filling where a_padding is false) even where A is not read as it lies. 1 where
  // neighbouring k are not neighbours in memory. Default: A's contiguous run when A lies along k.
  virtual int64_t a_gather_run() const { return a_contiguous_along_m() ? 1 : a_contiguous_run(); }

  // A and B as plain strided tensors of their buffers, where they are (TMA copies their tiles,
  // codegen/wgmma_contraction_emitter.h); nullopt where not (a convolution's input other than a
  // channels-last 1×1 one of one group, an operand broadcast over some batch dims only, a vector).
  virtual std::optional<OperandStrides> a_strides() const { return std::nullopt; }
  virtual std::optional<OperandStrides> b_strides() const { return std::nullopt; }

  // Whether neighbouring m (rather than n) are neighbours in the result (a convolution's output
  // pixels), so a kernel that walks the result element by element walks m first.
  virtual bool result_contiguous_along_m() const = 0;
  // Whether result_index(b, m, n) is some multiple of cols plus n, so that the flat index modulo
  // cols is n (a matmul's, a gemm's, a channels-last convolution's result).
  virtual bool result_index_ends_in_n() const { return !result_contiguous_along_m(); }
  // The flat index of result element (b, m, n), and the op's result from the accumulated sum.
  virtual std::string result_index(ElementEmitter& e, const std::string& b, const std::string& m,
                                   const std::string& n) = 0;
  virtual std::string result(ElementEmitter& e, const std::string& b, const std::string& m,
                             const std::string& n, const std::string& sum) = 0;

 protected:
  const Node& node_;
};

// The flat index in `value` of element (b, r, c) of the [batch..., r_size, c_size] matrix that
// `value` broadcasts to (numpy rules over the batch dims): how a matmul reads its operands.
std::string matmul_operand_index(ElementEmitter& e, const Value* value, const Shape& batch,
                                 const std::string& b, const std::string& r, const std::string& c,
                                 int64_t r_size, int64_t c_size);

// The gemm, matmul or conv node of a contraction body, or nullptr.
const Node* contraction_anchor(const KernelBody& body);

// The view of `anchor`. Throws UnsupportedError for convolutions other than 2-D.
std::unique_ptr<ContractionView> contraction_view_of(const Node& anchor);

}  // namespace kiln::codegen

namespace kiln::codegen {

// Writes result element (b, m, n) of the contraction from its accumulated `sum`: the op's
// result (alpha, beta · C, bias), then the body's epilogue ops at its flat index, stored to
// each of the body's outputs (parameters `outputs`). Call it inside a block of its own: it binds
// the anchor's result there (and, where result_index_ends_in_n, n as the flat index's innermost
// coordinate, so a per-column operand reads at n; n must lie below cols).
void emit_contraction_result(ElementEmitter& e, const KernelBody& body, const Node& anchor,
                             ContractionView& view, const std::vector<std::string>& outputs,
                             const std::string& b, const std::string& m, const std::string& n,
                             const std::string& sum);

}  // namespace kiln::codegen
