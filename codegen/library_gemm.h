// A contraction kernel body in cuBLASLt's terms (runtime/program.h, ProgramLibraryGemm): the
// "cuBLASLt" tactic, which measurement may choose over kiln's own kernels (kiln/autotune.h), as
// TensorRT's builder weighs its tactics against cuBLAS. What cuBLASLt's epilogue expresses:
//
//   anchor     a matmul, a gemm (alpha; beta · C where C is [rows, cols], or C a per-column
//              vector with beta 1: the bias) or a 1×1 stride-1 unpadded channels-last conv of
//              one group (its bias); f16 or bf16 operands read as they lie (body inputs or
//              weights, or reshapes of them: no other prologue op), each with unit stride
//              along rows or along columns
//   epilogue   in order, each at most once: an add of a per-column vector (the bias) or of a
//              tensor of the result's size and type (C, beta 1), then a relu; nothing after it;
//              reshapes anywhere (they keep the elements' order: BERT's [batch · seq, hidden]
//              gemm rows reshaped to [batch, seq, hidden] for the residual add)
//   result     one output of the anchor's type, not a concat's slice
//
// Row-major kiln terms map to column-major cuBLASLt ones by computing the transposed product:
// the result R (rows × cols) is cuBLASLt's D (cols × rows, leading dimension cols), its B the
// kiln A and its A the kiln B. A batch whose B is one shared matrix and whose A rows follow one
// another across the batch is one taller product.
#pragma once

#include <optional>
#include <string>

#include "codegen/kernel_body.h"
#include "runtime/program.h"

namespace kiln::codegen {

class ContractionView;

// The call, with its operands still as values: lowering turns them into argument positions
// of the step (ProgramLibraryGemm::a ... bias).
struct LibraryGemm {
  ProgramLibraryGemm call;
  const Value* a = nullptr;  // cuBLASLt's A: kiln's B
  const Value* b = nullptr;  // cuBLASLt's B: kiln's A
  const Value* d = nullptr;
  const Value* c = nullptr;     // or none
  const Value* bias = nullptr;  // or none
};

// The tactic's name among a contraction's (codegen/contraction_emitter.h): always the last.
inline constexpr const char* kLibraryGemmTactic = "cuBLASLt";

// The workspace each call may use (cuBLASLt's guidance for Hopper is 32 MiB for a handle that
// runs everything; one GEMM of these sizes needs far less).
inline constexpr int64_t kLibraryGemmWorkspaceBytes = int64_t{4} << 20;

struct LibraryGemmMatch {
  std::optional<LibraryGemm> gemm;
  std::string refusal;  // why not, when there is none
};

LibraryGemmMatch library_gemm_of(const KernelBody& body, const Node& anchor,
                                 const ContractionView& view);

}  // namespace kiln::codegen
