// A contraction kernel body as a cuBLASLt call (see the header).
#include "codegen/library_gemm.h"

#include <fmt/format.h>

#include <algorithm>

#include "codegen/contraction_view.h"
#include "codegen/kernel_params.h"
#include "ir/dtype.h"
#include "ir/fusion.h"

namespace kiln::codegen {
namespace {

// The buffer the call reads `value` from (KernelParams::reads_buffer: a body input or a weight),
// through views computed in the body (reshapes keep the elements' order); null where the kernel
// computes it.
const Value* buffer_value(const KernelBody& body, const KernelParams& params, const Value* value) {
  while (value->producer() && is_view_op(*value->producer()) &&
         std::find(body.nodes.begin(), body.nodes.end(), value->producer()) != body.nodes.end()) {
    value = value->producer()->operand(0);
  }
  return params.reads_buffer(value) ? value : nullptr;
}

// One value per column of a result of `result_rank` dims: [cols], [1, cols], [1, 1, cols], ...
bool is_per_column(const Value* value, size_t result_rank, int64_t cols) {
  const Shape& shape = value->type().shape;
  if (shape.empty() || shape.size() > result_rank || shape.back() != cols) return false;
  return std::all_of(shape.begin(), shape.end() - 1, [](int64_t dim) { return dim == 1; });
}

// Builds the call, or says why there is none.
class Matcher {
 public:
  Matcher(const KernelBody& body, const Node& anchor, const ContractionView& view)
      : body_(body), anchor_(anchor), view_(view), type_(anchor.result()->type()) {
    for (const Value* input : body.inputs) params_.add_input(input);
  }

  LibraryGemmMatch run() {
    LibraryGemmMatch match;
    if (std::string why = operands(); !why.empty()) {
      match.refusal = why;
    } else if (why = anchor_terms(); !why.empty()) {
      match.refusal = why;
    } else if (why = epilogue(); !why.empty()) {
      match.refusal = why;
    } else {
      gemm_.call.workspace_bytes = kLibraryGemmWorkspaceBytes;
      match.gemm = gemm_;
    }
    return match;
  }

 private:
  // The operands and the result as cuBLASLt's transposed product (the header).
  std::string operands() {
    if (!is_16_bit_float(type_.dtype)) {
      return fmt::format("a {} result (the call takes f16 or bf16)", dtype_name(type_.dtype));
    }
    const Value* a = view_.a_operand();
    const Value* b = view_.b_operand();
    if (a->type().dtype != type_.dtype || b->type().dtype != type_.dtype) {
      return "operands of another type than the result";
    }
    const Value* a_buffer = buffer_value(body_, params_, a);
    const Value* b_buffer = buffer_value(body_, params_, b);
    if (!a_buffer || !b_buffer) return "an operand computed in the kernel (a prologue)";
    const std::optional<OperandStrides> a_strides = view_.a_strides();
    const std::optional<OperandStrides> b_strides = view_.b_strides();
    if (!a_strides || !b_strides) return "an operand that is not a plain strided matrix";
    if (!view_.result_index_ends_in_n() || view_.result_contiguous_along_m()) {
      return "a result not laid out row by row";
    }
    ProgramLibraryGemm& call = gemm_.call;
    gemm_.a = b_buffer;
    gemm_.b = a_buffer;
    // cuBLASLt's A, op(A) cols × depth, is kiln's B: B(k, n) at k · row + n · column.
    if (b_strides->column == 1) {
      call.lda = b_strides->row;
    } else if (b_strides->row == 1) {
      call.transpose_a = true;
      call.lda = b_strides->column;
    } else {
      return "B has no unit stride";
    }
    // cuBLASLt's B, op(B) depth × rows, is kiln's A: A(m, k) at m · row + k · column.
    if (a_strides->column == 1) {
      call.ldb = a_strides->row;
    } else if (a_strides->row == 1) {
      call.transpose_b = true;
      call.ldb = a_strides->column;
    } else {
      return "A has no unit stride";
    }
    call.m = view_.cols;
    call.n = view_.rows;
    call.k = view_.depth;
    call.ldd = view_.cols;
    if (view_.batch > 1) {
      if (b_strides->batch == 0 && !call.transpose_b &&
          a_strides->batch == view_.rows * a_strides->row) {
        call.n = view_.batch * view_.rows;  // one taller product
      } else if (b_strides->batch == 0 || a_strides->batch == 0) {
        return "an operand shared by the batch's matrices";
      } else {
        call.batch = view_.batch;
        call.batch_stride_a = b_strides->batch;
        call.batch_stride_b = a_strides->batch;
        call.batch_stride_d = view_.rows * view_.cols;
      }
    }
    return "";
  }

  // What the anchor adds to its sum: gemm's alpha and beta · C, conv's bias.
  std::string anchor_terms() {
    if (anchor_.op() == "gemm") {
      gemm_.call.alpha = static_cast<float>(anchor_.float_attr("alpha"));
      const double beta = anchor_.float_attr("beta");
      if (anchor_.operands().size() > 2 && beta != 0.0) {
        const Value* c = anchor_.operand(2);
        if (c->type().shape == Shape{view_.rows, view_.cols}) {
          if (std::string why = take_c(c); !why.empty()) return why;
          gemm_.call.beta = static_cast<float>(beta);
        } else if (beta == 1.0 && is_per_column(c, 2, view_.cols)) {
          if (std::string why = take_bias(c); !why.empty()) return why;
        } else {
          return fmt::format("gemm's C [{}] with beta {} (neither the result's shape nor a bias)",
                             shape_to_string(c->type().shape), beta);
        }
      }
    } else if (anchor_.op() == "conv" && anchor_.operands().size() > 2) {
      if (std::string why = take_bias(anchor_.operand(2)); !why.empty()) return why;
    }
    return "";
  }

  // The body's ops after the anchor: adds of a bias or of C, then a relu; reshapes anywhere
  // (of the result, keeping its elements' order, or of an operand read through them).
  std::string epilogue() {
    const Value* current = anchor_.result();
    bool after_anchor = false;
    for (const Node* node : body_.nodes) {
      if (node == &anchor_) {
        after_anchor = true;
        continue;
      }
      if (is_view_op(*node)) {
        if (node->operand(0) == current) current = node->result();
        continue;
      }
      if (!after_anchor) return node->op() + " before the contraction";
      if (gemm_.call.relu) return node->op() + " after the relu";
      const TensorType& type = current->type();
      if (node->result()->type() != type) return node->op() + " changing the result's type";
      if (node->op() == "relu" && node->operand(0) == current) {
        gemm_.call.relu = true;
      } else if (node->op() == "add" && node->operands().size() == 2 &&
                 node->operand(0) != node->operand(1) &&
                 (node->operand(0) == current || node->operand(1) == current)) {
        const Value* other = node->operand(node->operand(0) == current ? 1 : 0);
        std::string why;
        if (other->type() == type) {
          why = take_c(other);
          gemm_.call.beta = 1;
        } else if (type.shape.back() == view_.cols &&
                   is_per_column(other, type.shape.size(), view_.cols)) {
          why = take_bias(other);
        } else {
          why = fmt::format("an add of a [{}] (neither a bias nor the result's shape)",
                            shape_to_string(other->type().shape));
        }
        if (!why.empty()) return why;
      } else {
        return node->op() + " in the epilogue (cuBLASLt's takes a bias, an added tensor, a relu)";
      }
      current = node->result();
    }
    if (body_.outputs.size() != 1 || body_.outputs.front() != current) {
      return "outputs other than the epilogue's last";
    }
    if (!body_.placements.empty()) return "a result written into a concat's slice";
    gemm_.d = current;
    return "";
  }

  std::string take_c(const Value* c) {
    if (gemm_.c) return "two tensors added to the result";
    if (c->type().dtype != type_.dtype || c->type().num_elements() != type_.num_elements()) {
      return "an added tensor of another type or size than the result";
    }
    gemm_.c = buffer_value(body_, params_, c);
    if (!gemm_.c) return "an added tensor computed in the kernel";
    return "";
  }

  std::string take_bias(const Value* bias) {
    if (gemm_.bias) return "two biases";
    const DType dtype = bias->type().dtype;
    if (!is_16_bit_float(dtype) && dtype != DType::kF32) {
      return fmt::format("a {} bias", dtype_name(dtype));
    }
    gemm_.bias = buffer_value(body_, params_, bias);
    if (!gemm_.bias) return "a bias computed in the kernel";
    return "";
  }

  const KernelBody& body_;
  const Node& anchor_;
  const ContractionView& view_;
  const TensorType& type_;
  KernelParams params_;  // the body's inputs, as a kernel of it declares them
  LibraryGemm gemm_;
};

}  // namespace

LibraryGemmMatch library_gemm_of(const KernelBody& body, const Node& anchor,
                                 const ContractionView& view) {
  return Matcher(body, anchor, view).run();
}

}  // namespace kiln::codegen
