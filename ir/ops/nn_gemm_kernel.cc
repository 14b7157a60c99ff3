// The cache-blocked, multithreaded matrix multiply (see nn_gemm_kernel.h for the algorithm).
#include "ir/ops/nn_gemm_kernel.h"

#include <algorithm>
#include <thread>
#include <type_traits>

#include "ir/integer_math.h"

namespace kiln::nn {
namespace {

constexpr int64_t kPanelM = 4;    // rows of the micro-kernel's C tile
constexpr int64_t kPanelN = 32;   // columns of the micro-kernel's C tile
constexpr int64_t kBlockK = 256;  // depth of one packed block
constexpr int64_t kBlockN = 512;  // columns of one packed B block (a multiple of kPanelN)
// Multiply-adds per thread below which splitting does not pay for starting a thread.
constexpr int64_t kMinParallelWork = int64_t{1} << 21;

// a + b * c; integers wrap around on overflow (two's complement, as NumPy's do) instead of
// overflowing, which C++ leaves undefined for signed types.
template <class T>
T multiply_add(T a, T b, T c) {
  if constexpr (std::is_integral_v<T>) {
    using U = std::make_unsigned_t<T>;
    return static_cast<T>(static_cast<U>(a) + static_cast<U>(b) * static_cast<U>(c));
  } else {
    return a + b * c;
  }
}

// C tile (rows × cols valid of kPanelM × kPanelN) += packed A (depth × kPanelM, column-major
// rows) · packed B panel (depth × kPanelN), all in the accumulator type.
template <class Acc>
void micro_kernel(int64_t depth, const Acc* packed_a, const Acc* packed_b, Acc* c, int64_t ldc,
                  int64_t rows, int64_t cols) {
  Acc tile[kPanelM][kPanelN] = {};
  for (int64_t p = 0; p < depth; ++p) {
    const Acc* b_row = packed_b + p * kPanelN;
    const Acc* a_col = packed_a + p * kPanelM;
    for (int64_t r = 0; r < kPanelM; ++r) {
      const Acc a_value = a_col[r];
      for (int64_t j = 0; j < kPanelN; ++j)
        tile[r][j] = multiply_add(tile[r][j], a_value, b_row[j]);
    }
  }
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t j = 0; j < cols; ++j)
      c[r * ldc + j] = multiply_add(c[r * ldc + j], tile[r][j], Acc{1});
  }
}

// Packs B[depth × cols] into panels of kPanelN columns, widened to the accumulator type,
// zero-padding the last one.
template <class T>
void pack_b(const T* b, int64_t ldb, int64_t depth, int64_t cols, Accumulator<T>* packed) {
  for (int64_t j0 = 0; j0 < cols; j0 += kPanelN) {
    const int64_t width = std::min(kPanelN, cols - j0);
    for (int64_t p = 0; p < depth; ++p) {
      const T* source = b + p * ldb + j0;
      Accumulator<T>* target = packed + p * kPanelN;
      for (int64_t j = 0; j < width; ++j) target[j] = source[j];
      for (int64_t j = width; j < kPanelN; ++j) target[j] = Accumulator<T>{};
    }
    packed += depth * kPanelN;
  }
}

// Packs A[rows × depth] (rows <= kPanelM) column by column, widened to the accumulator type,
// zero-padding missing rows.
template <class T>
void pack_a(const T* a, int64_t lda, int64_t rows, int64_t depth, Accumulator<T>* packed) {
  for (int64_t p = 0; p < depth; ++p) {
    for (int64_t r = 0; r < kPanelM; ++r) {
      packed[p * kPanelM + r] = r < rows ? a[r * lda + p] : Accumulator<T>{};
    }
  }
}

template <class T>
void gemm_serial(int64_t m, int64_t n, int64_t k, const T* a, int64_t lda, const T* b, int64_t ldb,
                 Accumulator<T>* c, int64_t ldc) {
  std::vector<Accumulator<T>> packed_b(static_cast<size_t>(kBlockK * kBlockN));
  std::vector<Accumulator<T>> packed_a(static_cast<size_t>(kBlockK * kPanelM));
  for (int64_t j0 = 0; j0 < n; j0 += kBlockN) {
    const int64_t block_cols = std::min(kBlockN, n - j0);
    for (int64_t p0 = 0; p0 < k; p0 += kBlockK) {
      const int64_t depth = std::min(kBlockK, k - p0);
      pack_b(b + p0 * ldb + j0, ldb, depth, block_cols, packed_b.data());
      for (int64_t i0 = 0; i0 < m; i0 += kPanelM) {
        const int64_t rows = std::min(kPanelM, m - i0);
        pack_a(a + i0 * lda + p0, lda, rows, depth, packed_a.data());
        for (int64_t jp = 0; jp < block_cols; jp += kPanelN) {
          micro_kernel(depth, packed_a.data(), packed_b.data() + jp * depth, c + i0 * ldc + j0 + jp,
                       ldc, rows, std::min(kPanelN, block_cols - jp));
        }
      }
    }
  }
}

}  // namespace

template <class T>
void gemm_accumulate(int64_t m, int64_t n, int64_t k, const T* a, int64_t lda, const T* b,
                     int64_t ldb, Accumulator<T>* c, int64_t ldc) {
  if (m <= 0 || n <= 0 || k <= 0) return;
  // One thread per kMinParallelWork multiply-adds, at most one per hardware thread.
  const int64_t hardware = std::max<int64_t>(1, std::thread::hardware_concurrency());
  // (The work is counted in double: m·n·k can exceed int64 for shapes the op table accepts.)
  const double work = static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k);
  const int64_t threads =
      static_cast<int64_t>(std::clamp(work / kMinParallelWork, 1.0, static_cast<double>(hardware)));
  // Split rows in whole micro-kernel panels when there are enough of them, else columns.
  const bool split_rows = ceil_div(m, kPanelM) >= threads || m >= n;
  const int64_t extent = split_rows ? m : n;
  const int64_t unit = split_rows ? kPanelM : kPanelN;
  const int64_t chunk = ceil_div(ceil_div(extent, threads), unit) * unit;
  if (threads == 1 || chunk >= extent) {
    gemm_serial(m, n, k, a, lda, b, ldb, c, ldc);
    return;
  }
  std::vector<std::jthread> workers;
  for (int64_t begin = 0; begin < extent; begin += chunk) {
    const int64_t size = std::min(chunk, extent - begin);
    if (split_rows) {
      workers.emplace_back(
          [=] { gemm_serial(size, n, k, a + begin * lda, lda, b, ldb, c + begin * ldc, ldc); });
    } else {
      workers.emplace_back(
          [=] { gemm_serial(m, size, k, a, lda, b + begin, ldb, c + begin, ldc); });
    }
  }
}

template <class T>
std::vector<T> transposed(const T* matrix, int64_t rows, int64_t cols) {
  std::vector<T> result(static_cast<size_t>(rows * cols));
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t col = 0; col < cols; ++col) result[col * rows + r] = matrix[r * cols + col];
  }
  return result;
}

template void gemm_accumulate<float>(int64_t, int64_t, int64_t, const float*, int64_t, const float*,
                                     int64_t, double*, int64_t);
template void gemm_accumulate<double>(int64_t, int64_t, int64_t, const double*, int64_t,
                                      const double*, int64_t, double*, int64_t);
template void gemm_accumulate<int64_t>(int64_t, int64_t, int64_t, const int64_t*, int64_t,
                                       const int64_t*, int64_t, int64_t*, int64_t);
template std::vector<float> transposed<float>(const float*, int64_t, int64_t);
template std::vector<double> transposed<double>(const double*, int64_t, int64_t);
template std::vector<int64_t> transposed<int64_t>(const int64_t*, int64_t, int64_t);

}  // namespace kiln::nn
