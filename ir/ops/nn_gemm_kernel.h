// The one matrix-multiply routine of the reference interpreter, shared by conv, conv_transpose,
// gemm and matmul: C[m×n] += A[m×k] · B[k×n] on row-major matrices with leading dimensions.
//
// Algorithm (the classic Goto/BLIS loop nest, written so -O2 auto-vectorizes it):
//   1. Split C into column blocks of kBlockN and the k dimension into blocks of kBlockK.
//   2. Pack the B block into column panels of kPanelN (contiguous rows of kPanelN values).
//   3. For each group of kPanelM rows of A, pack those rows' k block column by column, then run
//      the micro-kernel per panel: a kPanelM×kPanelN tile accumulated in a local array over the
//      k block, then added to C.
// Large products are split across hardware threads by rows of C (or columns when C has few
// rows). Each element of C sums its products in ascending k within each k block and adds the
// blocks in order, whatever the thread count, so results are deterministic.
//
// C holds Accumulator<T>: for float operands it is double, the packing widens A and B, and the
// products (exact in double) sum in double; the caller rounds C once when it stores the result.
#pragma once

#include <cstdint>
#include <vector>

#include "ir/ops/nn_kernel_util.h"

namespace kiln::nn {

template <class T>
void gemm_accumulate(int64_t m, int64_t n, int64_t k, const T* a, int64_t lda, const T* b,
                     int64_t ldb, Accumulator<T>* c, int64_t ldc);

// The transpose of a row-major rows×cols matrix (cols×rows, row-major).
template <class T>
std::vector<T> transposed(const T* matrix, int64_t rows, int64_t cols);

}  // namespace kiln::nn
