// What the attention kernels share: the three anchors of a fusion.attention body and its sizes
// (attention_shape), and the matmul operands' elements read through the element machinery.
#pragma once

#include <string>
#include <vector>

#include "codegen/element_emitter.h"
#include "codegen/kernel_body.h"

namespace kiln::codegen {

// The body's three anchors and the sizes of one row: M query rows per batch, N keys, head size D
// (the first matmul's depth), E output columns.
struct AttentionShape {
  const Node* scores = nullptr;   // S = matmul(Q', K')
  const Node* softmax = nullptr;  // P = softmax(ops(S))
  const Node* output = nullptr;   // O = matmul(ops(P), V')
  Shape batch;
  int64_t batch_count = 1;  // the batch dims' elements
  int64_t rows = 1;         // batch elements × M
  int64_t queries = 0, keys = 0, depth = 0, columns = 0;
};

// Throws UnsupportedError for rank-1 matmul operands, a softmax not over the last axis, shapes
// that change between the matmuls and the softmax, and outputs that do not read the second
// matmul's result element for element.
AttentionShape attention_shape(const KernelBody& body);

bool is_tf32(const Node& matmul);

// Operand `i` of `matmul` at (batch b, r, c), as a [batch..., r_size, c_size] matrix broadcast
// over the batch dims (matmul_operand_index, codegen/contraction_view.h); rounded to TF32 where
// the matmul's tf32 attribute is set.
std::string matmul_operand(ElementEmitter& e, const Node& matmul, size_t i, const Shape& batch,
                           const std::string& b, const std::string& r, const std::string& c,
                           int64_t r_size, int64_t c_size);

// Writes every body output at flat index `at` (the second matmul's result bound there) to its
// parameter in `outputs`.
void store_outputs(ElementEmitter& e, const KernelBody& body,
                   const std::vector<std::string>& outputs, const std::string& at);

// An anchor's element as the reference stores it: 16-bit results round to their format.
std::string rounded(const Node& anchor, const std::string& element);

}  // namespace kiln::codegen
