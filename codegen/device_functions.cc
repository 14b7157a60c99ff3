// The kiln_* device function library. Each entry is one small function (or overload set);
// entries come in dependency order. 16-bit floats convert with PTX cvt (round to nearest even),
// so kernels need neither cuda_fp16.h nor cuda_bf16.h.
#include "codegen/device_functions.h"

#include <cctype>
#include <set>
#include <vector>

#include "ir/error.h"

namespace kiln::codegen {
namespace {

struct DeviceFunction {
  const char* name;
  const char* code;
};

// Kept in dependency order: an entry only calls entries above it.
const std::vector<DeviceFunction>& library() {
  static const std::vector<DeviceFunction> functions = {
      // Early launch (programmatic dependent launch, sm_90+): a kernel may start while the
      // kernels it depends on still run; this waits until they have finished and their writes
      // are visible. Without such a dependency (a plain launch, or before sm_90) it returns at
      // once. Every kernel calls it first (kernel_code).
      {"kiln_wait_for_prior_grids", R"(__device__ __forceinline__ void kiln_wait_for_prior_grids() {
#if __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
})"},
      // An output placed in its slice of a concat's buffer (codegen/output_placement.h): its
      // element at flat index f lies at (f / kBlock) · kStride + kOffset + f % kBlock there,
      // computed in I (int, or long long for a buffer of 2^31 elements or more).
      {"kiln_placed",
       R"(template <class T, class I, long long kBlock, long long kStride, long long kOffset>
struct kiln_placed {
  T* buffer;
  template <class J>
  __device__ __forceinline__ T& operator[](J flat) const {
    const I f = static_cast<I>(flat);
    return buffer[f / static_cast<I>(kBlock) * static_cast<I>(kStride) + static_cast<I>(kOffset) +
                  f % static_cast<I>(kBlock)];
  }
};)"},
      {"kiln_f16_to_f32", R"(__device__ __forceinline__ float kiln_f16_to_f32(unsigned short bits) {
  float value;
  asm("cvt.f32.f16 %0, %1;" : "=f"(value) : "h"(bits));
  return value;
})"},
      {"kiln_f32_to_f16",
       R"(__device__ __forceinline__ unsigned short kiln_f32_to_f16(float value) {
  unsigned short bits;
  asm("cvt.rn.f16.f32 %0, %1;" : "=h"(bits) : "f"(value));
  return bits;
})"},
      {"kiln_bf16_to_f32",
       R"(__device__ __forceinline__ float kiln_bf16_to_f32(unsigned short bits) {
  return __uint_as_float(static_cast<unsigned>(bits) << 16);
})"},
      // Round to nearest even by adding 0x7fff plus the lowest kept bit; NaN stays a quiet NaN.
      {"kiln_f32_to_bf16",
       R"(__device__ __forceinline__ unsigned short kiln_f32_to_bf16(float value) {
  const unsigned bits = __float_as_uint(value);
  if (value != value) return static_cast<unsigned short>((bits >> 16) | 0x40);
  return static_cast<unsigned short>((bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16);
})"},
      {"kiln_round_to_f16", R"(__device__ __forceinline__ float kiln_round_to_f16(float value) {
  return kiln_f16_to_f32(kiln_f32_to_f16(value));
}
__device__ __forceinline__ float kiln_round_to_f16(double value) {
  unsigned short bits;
  asm("cvt.rn.f16.f64 %0, %1;" : "=h"(bits) : "d"(value));
  return kiln_f16_to_f32(bits);
})"},
      {"kiln_round_to_bf16", R"(__device__ __forceinline__ float kiln_round_to_bf16(float value) {
  return kiln_bf16_to_f32(kiln_f32_to_bf16(value));
})"},
      // TF32 operand rounding, as cvt.rna.tf32.f32: to 10 mantissa bits, ties away from zero.
      {"kiln_round_to_tf32", R"(__device__ __forceinline__ float kiln_round_to_tf32(float value) {
  return __uint_as_float((__float_as_uint(value) + 0x1000u) & 0xffffe000u);
})"},
      // max/min that propagate NaN (numpy.maximum / minimum).
      {"kiln_max", R"(template <class T>
__device__ __forceinline__ T kiln_max(T a, T b) {
  return (a != a || a > b) ? a : b;
})"},
      {"kiln_min", R"(template <class T>
__device__ __forceinline__ T kiln_min(T a, T b) {
  return (a != a || a < b) ? a : b;
})"},
      // numpy.clip: NaN stays NaN, and lo > hi gives hi.
      {"kiln_clamp", R"(template <class T>
__device__ __forceinline__ T kiln_clamp(T x, T lo, T hi) {
  x = x < lo ? lo : x;
  return hi < x ? hi : x;
})"},
      // Sigmoid and softplus take one exp, of −|x| (it cannot overflow), and no branch: 1 / (1 +
      // e^−x) for x ≥ 0, e^x / (1 + e^x) below, the numerator chosen before the one division.
      // Written as two branches, each with its exp, the warps of a SiLU epilogue diverged (17.6
      // of 32 threads active in EfficientNet-B0's 16 → 96 expansion conv, H200, ncu).
      {"kiln_sigmoid", R"(template <class T>
__device__ __forceinline__ T kiln_sigmoid(T x) {
  const T e = exp(-fabs(x));
  return (x >= 0 ? T(1) : e) / (T(1) + e);
})"},
      {"kiln_softplus", R"(template <class T>
__device__ __forceinline__ T kiln_softplus(T x) {
  return log1p(exp(-fabs(x))) + (x > 0 ? x : T(0));
})"},
      // GELU in f32 takes erf as a rational function on [-4, 4] (beyond, erf is ±1 in f32; the
      // coefficients are Eigen's fast f32 erf): |error| ≤ 4.5e-7 (7 ulp) against the exact erf
      // on [-6, 6], about 16 instructions where CUDA's erff, which evaluates both of its
      // branches, takes about 25 — GELU is most of the work of a layer norm + GELU kernel. The
      // erf op itself keeps erff.
      {"kiln_gelu_erf", R"(template <class T>
__device__ __forceinline__ T kiln_gelu_erf(T x) {
  return T(0.5) * x * (T(1) + erf(x * T(0.70710678118654752440)));
}
__device__ __forceinline__ float kiln_gelu_erf(float x) {
  const float z = fminf(fmaxf(x * 0.70710678118654752440f, -4.0f), 4.0f);
  const float z2 = z * z;
  float p = fmaf(z2, -2.72614225801306e-10f, 2.77068142495902e-08f);
  p = fmaf(z2, p, -2.10102402082508e-06f);
  p = fmaf(z2, p, -5.69250639462346e-05f);
  p = fmaf(z2, p, -7.34990630326855e-04f);
  p = fmaf(z2, p, -2.95459980854025e-03f);
  p = fmaf(z2, p, -1.60960333262415e-02f);
  float q = fmaf(z2, -1.45660718464996e-05f, -2.13374055278905e-04f);
  q = fmaf(z2, q, -1.68282697438203e-03f);
  q = fmaf(z2, q, -7.37332916720468e-03f);
  q = fmaf(z2, q, -1.42647390514189e-02f);
  const float half_x = 0.5f * x;
  return fmaf(half_x, __fdividef(z * p, q), half_x);
})"},
      {"kiln_gelu_tanh", R"(template <class T>
__device__ __forceinline__ T kiln_gelu_tanh(T x) {
  return T(0.5) * x * (T(1) + tanh(T(0.79788456080286535588) * (x + T(0.044715) * x * x * x)));
})"},
      // Integers compute x +- bias in double and truncate; floats in their own type.
      {"kiln_shrink", R"(template <class T>
__device__ __forceinline__ T kiln_shrink(T x, double lambd, double bias) {
  return x < -lambd ? T(x + bias) : x > lambd ? T(x - bias) : T(0);
}
__device__ __forceinline__ float kiln_shrink(float x, double lambd, double bias) {
  const float l = float(lambd), b = float(bias);
  return x < -l ? x + b : x > l ? x - b : 0.0f;
})"},
      {"kiln_is_inf", R"(template <class T>
__device__ __forceinline__ bool kiln_is_inf(T x, long long negative, long long positive) {
  return isinf(x) && (x < 0 ? negative != 0 : positive != 0);
})"},
      // Integer negation and absolute value wrap like two's complement.
      {"kiln_neg", R"(template <class T>
__device__ __forceinline__ T kiln_neg(T x) {
  return T(0ULL - static_cast<unsigned long long>(x));
}
__device__ __forceinline__ float kiln_neg(float x) { return -x; }
__device__ __forceinline__ double kiln_neg(double x) { return -x; })"},
      {"kiln_abs", R"(template <class T>
__device__ __forceinline__ T kiln_abs(T x) {
  return x < 0 ? kiln_neg(x) : x;
}
__device__ __forceinline__ float kiln_abs(float x) { return fabsf(x); }
__device__ __forceinline__ double kiln_abs(double x) { return fabs(x); })"},
      // Integer division truncates toward zero; by zero gives 0, by -1 wraps.
      {"kiln_div", R"(template <class T>
__device__ __forceinline__ T kiln_div(T a, T b) {
  return b == 0 ? T(0) : b == -1 ? kiln_neg(a) : T(a / b);
}
__device__ __forceinline__ float kiln_div(float a, float b) { return a / b; }
__device__ __forceinline__ double kiln_div(double a, double b) { return a / b; })"},
      // fmod=1: the sign of the dividend (C fmod); fmod=0: the sign of the divisor (Python %).
      {"kiln_float_mod", R"(template <class T>
__device__ __forceinline__ T kiln_float_mod(T a, T b, long long truncated) {
  T r = fmod(a, b);
  if (truncated || b == 0) return r;
  if (r == 0) return copysign(T(0), b);
  return (r < 0) != (b < 0) ? r + b : r;
})"},
      {"kiln_mod", R"(template <class T>
__device__ __forceinline__ T kiln_mod(T a, T b, long long truncated) {
  T r = (b == 0 || b == -1) ? T(0) : T(a % b);
  if (!truncated && r != 0 && ((r < 0) != (b < 0))) r = T(r + b);
  return r;
}
__device__ __forceinline__ float kiln_mod(float a, float b, long long truncated) {
  return kiln_float_mod(a, b, truncated);
}
__device__ __forceinline__ double kiln_mod(double a, double b, long long truncated) {
  return kiln_float_mod(a, b, truncated);
})"},
      // An integer raised to an integer power, wrapping; a negative exponent truncates 1/b^-e.
      {"kiln_integer_power",
       R"(__device__ __forceinline__ long long kiln_integer_power(long long base, long long exponent) {
  if (exponent < 0) return base == 1 ? 1 : base == -1 ? (exponent % 2 == 0 ? 1 : -1) : 0;
  unsigned long long result = 1, b = static_cast<unsigned long long>(base);
  for (; exponent > 0; exponent >>= 1) {
    if (exponent & 1) result *= b;
    b *= b;
  }
  return static_cast<long long>(result);
})"},
      // Truncates a float toward zero into [lo, hi]; NaN gives 0.
      {"kiln_float_to_int", R"(template <class I, class F>
__device__ __forceinline__ I kiln_float_to_int(F x, I lo, I hi) {
  if (x != x) return I(0);
  const F t = trunc(x);
  if (t <= F(lo)) return lo;
  if (t >= F(hi)) return hi;
  return I(t);
})"},
      {"kiln_pow_integer_base",
       R"(__device__ __forceinline__ long long kiln_pow_integer_base(double base, double exponent) {
  return kiln_float_to_int<long long>(pow(base, exponent), (-9223372036854775807LL - 1), 9223372036854775807LL);
})"},
      // Shifts computed in 64 bits; amounts outside [0, 64) shift everything out.
      {"kiln_shift_left",
       R"(__device__ __forceinline__ long long kiln_shift_left(long long x, long long amount) {
  if (amount < 0 || amount >= 64) return 0;
  return static_cast<long long>(static_cast<unsigned long long>(x) << amount);
})"},
      {"kiln_shift_right",
       R"(__device__ __forceinline__ long long kiln_shift_right(long long x, long long amount) {
  if (amount < 0 || amount >= 64) return x < 0 ? -1 : 0;
  return x >> amount;
})"},
      // An index into an axis of `dim` elements: negative counts from the end. One out of range
      // (which the reference interpreter rejects) clamps, so no access leaves the buffer, and
      // sets kiln_bad_index, which the session reads after a run and reports
      // (runtime/session.h, "Errors").
      {"kiln_bad_index", "__device__ unsigned int kiln_bad_index;"},
      {"kiln_resolve_index",
       R"(__device__ __forceinline__ long long kiln_resolve_index(long long index, long long dim) {
  if (index < 0) index += dim;
  if (index >= 0 && index < dim) return index;
  kiln_bad_index = 1;
  return index < 0 ? 0 : dim - 1;
})"},
      // Reflect padding (numpy "reflect"), repeating the reflection past the axis.
      {"kiln_reflect",
       R"(__device__ __forceinline__ long long kiln_reflect(long long j, long long dim) {
  if (dim == 1) return 0;
  const long long period = 2 * (dim - 1);
  const long long k = ((j % period) + period) % period;
  return k < dim ? k : period - k;
})"},
      // Combining functions of the reductions, for kiln_warp_reduce / kiln_block_reduce.
      {"kiln_sum_op", R"(struct kiln_sum_op {
  template <class T>
  __device__ __forceinline__ T operator()(T a, T b) const { return a + b; }
};)"},
      {"kiln_prod_op", R"(struct kiln_prod_op {
  template <class T>
  __device__ __forceinline__ T operator()(T a, T b) const { return a * b; }
};)"},
      {"kiln_max_op", R"(struct kiln_max_op {
  template <class T>
  __device__ __forceinline__ T operator()(T a, T b) const { return kiln_max(a, b); }
};)"},
      {"kiln_min_op", R"(struct kiln_min_op {
  template <class T>
  __device__ __forceinline__ T operator()(T a, T b) const { return kiln_min(a, b); }
};)"},
      // Every lane of the warp gets the combination of all 32 lanes' values.
      {"kiln_warp_reduce", R"(template <class T, class Op>
__device__ __forceinline__ T kiln_warp_reduce(T value, Op op) {
  for (int offset = 16; offset > 0; offset /= 2) {
    value = op(value, __shfl_xor_sync(0xffffffffu, value, offset));
  }
  return value;
})"},
      // Every thread of the block gets the combination of all threads' values. `partials` is
      // shared memory for one value per warp; the block's size is a multiple of 32.
      {"kiln_block_reduce", R"(template <class T, class Op>
__device__ __forceinline__ T kiln_block_reduce(T value, Op op, T* partials) {
  value = kiln_warp_reduce(value, op);
  const int warps = blockDim.x / 32;
  if (threadIdx.x % 32 == 0) partials[threadIdx.x / 32] = value;
  __syncthreads();
  value = partials[0];
  for (int w = 1; w < warps; ++w) value = op(value, partials[w]);
  __syncthreads();
  return value;
})"},
      // Strided rows (a block of `rows` rows, thread t on row t % rows): every thread gets the
      // combination of its row's threads' values, in thread order (timing-independent bits).
      // `partials` is shared memory for one value per thread.
      {"kiln_strided_reduce", R"(template <class T, class Op>
__device__ __forceinline__ T kiln_strided_reduce(T value, Op op, T* partials, int rows) {
  partials[threadIdx.x] = value;
  __syncthreads();
  const int row = threadIdx.x % rows;
  value = partials[row];
  for (int t = row + rows; t < blockDim.x; t += rows) value = op(value, partials[t]);
  __syncthreads();
  return value;
})"},
      // arg_max / arg_min: whether (value, index) beats (best, best_index). A NaN beats every
      // number; equal values (or two NaNs) go to the lower index, or the higher with `last`.
      {"kiln_arg_better", R"(template <class T>
__device__ __forceinline__ bool kiln_arg_better(T value, long long index, T best, long long best_index, bool is_max, bool last) {
  const bool value_nan = value != value, best_nan = best != best;
  if (value_nan || best_nan) {
    if (value_nan != best_nan) return value_nan;
  } else if (value != best) {
    return is_max ? value > best : value < best;
  }
  return last ? index > best_index : index < best_index;
})"},
      {"kiln_warp_arg_reduce", R"(template <class T>
__device__ __forceinline__ void kiln_warp_arg_reduce(T& best, long long& best_index, bool is_max, bool last) {
  for (int offset = 16; offset > 0; offset /= 2) {
    const T other = __shfl_xor_sync(0xffffffffu, best, offset);
    const long long other_index = __shfl_xor_sync(0xffffffffu, best_index, offset);
    if (kiln_arg_better(other, other_index, best, best_index, is_max, last)) {
      best = other;
      best_index = other_index;
    }
  }
})"},
      // kiln_strided_reduce for arg_max / arg_min: threads without a column hold index -1.
      {"kiln_strided_arg_reduce", R"(template <class T>
__device__ __forceinline__ void kiln_strided_arg_reduce(T& best, long long& best_index, bool is_max, bool last, T* partials, long long* partial_indices, int rows) {
  partials[threadIdx.x] = best;
  partial_indices[threadIdx.x] = best_index;
  __syncthreads();
  const int row = threadIdx.x % rows;
  best = partials[row];
  best_index = partial_indices[row];
  for (int t = row + rows; t < blockDim.x; t += rows) {
    if (partial_indices[t] < 0) continue;
    if (best_index < 0 || kiln_arg_better(partials[t], partial_indices[t], best, best_index, is_max, last)) {
      best = partials[t];
      best_index = partial_indices[t];
    }
  }
  __syncthreads();
})"},
      {"kiln_block_arg_reduce", R"(template <class T>
__device__ __forceinline__ void kiln_block_arg_reduce(T& best, long long& best_index, bool is_max, bool last, T* partials, long long* partial_indices) {
  kiln_warp_arg_reduce(best, best_index, is_max, last);
  const int warps = blockDim.x / 32;
  if (threadIdx.x % 32 == 0) {
    partials[threadIdx.x / 32] = best;
    partial_indices[threadIdx.x / 32] = best_index;
  }
  __syncthreads();
  best = partials[0];
  best_index = partial_indices[0];
  for (int w = 1; w < warps; ++w) {
    if (kiln_arg_better(partials[w], partial_indices[w], best, best_index, is_max, last)) {
      best = partials[w];
      best_index = partial_indices[w];
    }
  }
  __syncthreads();
})"},
      // Tensor cores (sm_80+), as inline PTX. Fragment layouts (PTX ISA, "Matrix fragments for
      // mma.m16n8k16 / m16n8k8"), with g = lane / 4 and t = lane % 4:
      //   f16/bf16 m16n8k16: a[0] = A(g, 2t..2t+1), a[1] = A(g+8, 2t..), a[2] = A(g, 2t+8..),
      //     a[3] = A(g+8, 2t+8..), two 16-bit values per register, the lower column in the low
      //     half; b[0] = B(2t..2t+1, g), b[1] = B(2t+8..2t+9, g), the lower k in the low half.
      //   tf32 m16n8k8: a[0] = A(g, t), a[1] = A(g+8, t), a[2] = A(g, t+4), a[3] = A(g+8, t+4);
      //     b[0] = B(t, g), b[1] = B(t+4, g); each register one f32 bit pattern rounded to tf32.
      //   accumulator (both): c[0..1] = C(g, 2t..2t+1), c[2..3] = C(g+8, 2t..2t+1), f32.
      // Two f16 products in one instruction, each rounded to nearest even: a·b of the halves.
      {"kiln_mul_f16x2",
       R"(__device__ __forceinline__ unsigned kiln_mul_f16x2(unsigned a, unsigned b) {
  unsigned c;
  asm("mul.rn.f16x2 %0, %1, %2;" : "=r"(c) : "r"(a), "r"(b));
  return c;
})"},
      // Two floats rounded to f16 / bf16 (nearest even) by one instruction: `low` in bits 0-15.
      {"kiln_pack_f16x2",
       R"(__device__ __forceinline__ unsigned kiln_pack_f16x2(float low, float high) {
  unsigned bits;
  asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(bits) : "f"(high), "f"(low));
  return bits;
})"},
      {"kiln_pack_bf16x2",
       R"(__device__ __forceinline__ unsigned kiln_pack_bf16x2(float low, float high) {
  unsigned bits;
  asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(bits) : "f"(high), "f"(low));
  return bits;
})"},
      // max.NaN (sm_80+): a NaN in either operand gives NaN, in one instruction (kiln_max's
      // compare and select take three); the tiled attention's running max on tensor cores.
      {"kiln_max_nan", R"(__device__ __forceinline__ float kiln_max_nan(float a, float b) {
  float c;
  asm("max.NaN.f32 %0, %1, %2;" : "=f"(c) : "f"(a), "f"(b));
  return c;
})"},
      // 2^x by MUFU.EX2 alone (exp2f adds a range fix-up for subnormal results): relative error
      // about 2^-22; results below 2^-126 flush to 0, -inf gives 0, NaN stays NaN.
      {"kiln_exp2_approx", R"(__device__ __forceinline__ float kiln_exp2_approx(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
})"},
      {"kiln_mma_f16_16816",
       R"(__device__ __forceinline__ void kiln_mma_f16_16816(float* c, const unsigned* a, const unsigned* b) {
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};"
               : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
})"},
      {"kiln_mma_bf16_16816",
       R"(__device__ __forceinline__ void kiln_mma_bf16_16816(float* c, const unsigned* a, const unsigned* b) {
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};"
               : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
})"},
      {"kiln_mma_tf32_1688",
       R"(__device__ __forceinline__ void kiln_mma_tf32_1688(float* c, const unsigned* a, const unsigned* b) {
  asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};"
               : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
})"},
      // ldmatrix: each of the 4 8×8 matrices of 16-bit values is read from the shared-memory
      // rows whose addresses lanes 8i..8i+7 give (16 bytes a row); register i of lane l receives
      // row l / 4, columns 2(l % 4)..+1 of matrix i (`trans`: of its transpose).
      {"kiln_ldmatrix_x4",
       R"(__device__ __forceinline__ void kiln_ldmatrix_x4(unsigned* r, const void* row) {
  const unsigned address = static_cast<unsigned>(__cvta_generic_to_shared(row));
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(address));
})"},
      {"kiln_ldmatrix_x4_trans",
       R"(__device__ __forceinline__ void kiln_ldmatrix_x4_trans(unsigned* r, const void* row) {
  const unsigned address = static_cast<unsigned>(__cvta_generic_to_shared(row));
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(address));
})"},
      // cp.async (sm_80+): 16 bytes global → shared without a register round trip; with `valid`
      // false the 16 shared bytes are zero-filled and global memory is not read.
      {"kiln_cp_async_16",
       R"(__device__ __forceinline__ void kiln_cp_async_16(void* shared, const void* global, bool valid) {
  const unsigned address = static_cast<unsigned>(__cvta_generic_to_shared(shared));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;"
               :: "r"(address), "l"(global), "r"(valid ? 16 : 0));
})"},
      // 8 and 4 bytes (cp.async.ca: .cg takes 16 bytes only), zero-filled likewise.
      {"kiln_cp_async_8",
       R"(__device__ __forceinline__ void kiln_cp_async_8(void* shared, const void* global, bool valid) {
  const unsigned address = static_cast<unsigned>(__cvta_generic_to_shared(shared));
  asm volatile("cp.async.ca.shared.global [%0], [%1], 8, %2;"
               :: "r"(address), "l"(global), "r"(valid ? 8 : 0));
})"},
      {"kiln_cp_async_4",
       R"(__device__ __forceinline__ void kiln_cp_async_4(void* shared, const void* global, bool valid) {
  const unsigned address = static_cast<unsigned>(__cvta_generic_to_shared(shared));
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;"
               :: "r"(address), "l"(global), "r"(valid ? 4 : 0));
})"},
      // Hopper (sm_90): orders this thread's earlier generic-proxy writes to shared memory (stores,
      // cp.async) before later async-proxy reads of it (wgmma operands, bulk copies).
      {"kiln_fence_proxy_async", R"(__device__ __forceinline__ void kiln_fence_proxy_async() {
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
})"},
      // Warpgroup MMA (sm_90a): the fence before a warpgroup's first wgmma.mma_async touching
      // accumulators other instructions wrote, the commit of the issued ones as a group, and the
      // wait until at most `pending` groups are in flight.
      {"kiln_wgmma_fence", R"(__device__ __forceinline__ void kiln_wgmma_fence() {
  asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
})"},
      {"kiln_wgmma_commit", R"(__device__ __forceinline__ void kiln_wgmma_commit() {
  asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
})"},
      {"kiln_wgmma_wait", R"(template <int pending>
__device__ __forceinline__ void kiln_wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;" :: "n"(pending) : "memory");
})"},
      // A wgmma shared-memory matrix descriptor with 128-byte swizzle: the start address, the
      // leading and stride byte offsets (in 16-byte units, 14 bits each), swizzle mode 1 in bits
      // 62-63. The tile must start at a 1024-byte-aligned address (base offset 0).
      {"kiln_wgmma_descriptor",
       R"(__device__ __forceinline__ unsigned long long kiln_wgmma_descriptor(unsigned address, unsigned leading_bytes, unsigned stride_bytes) {
  return static_cast<unsigned long long>((address & 0x3FFFFu) >> 4) |
         static_cast<unsigned long long>((leading_bytes >> 4) & 0x3FFFu) << 16 |
         static_cast<unsigned long long>((stride_bytes >> 4) & 0x3FFFu) << 32 | 1ull << 62;
})"},
      // Hopper's bulk tensor copies (TMA, sm_90): a tensor map as a kernel takes it by value
      // (`const __grid_constant__ kiln_tensor_map`: cuda.h's CUtensorMap, which NVRTC lacks),
      // the shared-memory mbarriers the copies complete on (initialized by one thread, then
      // fenced for the copy engine), a thread's arrival that also expects `bytes` of copies, the
      // wait for a phase's completion, and one copy of a box at the coordinates (innermost
      // first; outside the tensor it writes zeros) into shared memory at `shared`.
      {"kiln_tensor_map", R"(struct __align__(128) kiln_tensor_map {
  unsigned long long opaque[16];
};)"},
      {"kiln_mbarrier_init",
       R"(__device__ __forceinline__ void kiln_mbarrier_init(unsigned barrier, unsigned count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" :: "r"(barrier), "r"(count) : "memory");
})"},
      {"kiln_fence_mbarrier_init", R"(__device__ __forceinline__ void kiln_fence_mbarrier_init() {
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
})"},
      {"kiln_mbarrier_expect_tx",
       R"(__device__ __forceinline__ void kiln_mbarrier_expect_tx(unsigned barrier, unsigned bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" :: "r"(barrier), "r"(bytes) : "memory");
})"},
      {"kiln_mbarrier_wait",
       R"(__device__ __forceinline__ void kiln_mbarrier_wait(unsigned barrier, unsigned parity) {
  unsigned done = 0;
  do {
    asm volatile("{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\nselp.u32 %0, 1, 0, p;\n}"
                 : "=r"(done) : "r"(barrier), "r"(parity) : "memory");
  } while (!done);
})"},
      // An arrival on the mbarrier (a consumer freeing a stage, or handing a tile's turn on).
      {"kiln_mbarrier_arrive",
       R"(__device__ __forceinline__ void kiln_mbarrier_arrive(unsigned barrier) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" :: "r"(barrier) : "memory");
})"},
      // Thread-block clusters (sm_90): the block's rank in its cluster; a barrier of every
      // thread of the cluster's blocks, their shared-memory writes before it visible to the
      // others' reads after it; the address in the shared memory of the cluster's block `rank`
      // of what lies at `address` in this block's; and a 16-byte load from such an address.
      {"kiln_cluster_rank", R"(__device__ __forceinline__ unsigned kiln_cluster_rank() {
  unsigned rank;
  asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(rank));
  return rank;
})"},
      {"kiln_cluster_sync", R"(__device__ __forceinline__ void kiln_cluster_sync() {
  asm volatile("barrier.cluster.arrive.release.aligned;\nbarrier.cluster.wait.acquire.aligned;" ::: "memory");
})"},
      {"kiln_cluster_shared_address",
       R"(__device__ __forceinline__ unsigned kiln_cluster_shared_address(unsigned address, unsigned rank) {
  unsigned mapped;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(mapped) : "r"(address), "r"(rank));
  return mapped;
})"},
      {"kiln_cluster_load_float4",
       R"(__device__ __forceinline__ float4 kiln_cluster_load_float4(unsigned address) {
  float4 v;
  asm volatile("ld.shared::cluster.v4.f32 {%0, %1, %2, %3}, [%4];"
               : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w) : "r"(address) : "memory");
  return v;
})"},
      // Waits until `threads` threads (whole warps) have arrived at named barrier `id` (1-15; 0
      // is __syncthreads's), so that some of a block's warps wait for each other.
      {"kiln_bar_sync",
       R"(__device__ __forceinline__ void kiln_bar_sync(unsigned id, unsigned threads) {
  asm volatile("bar.sync %0, %1;" :: "r"(id), "r"(threads) : "memory");
})"},
      // Hopper (sm_90a): a warpgroup gives back registers (dec) or takes more (inc), so that a
      // warp-specialized kernel's consumers hold more than the launch bound's even share.
      {"kiln_setmaxnreg_dec", R"(template <int registers>
__device__ __forceinline__ void kiln_setmaxnreg_dec() {
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" :: "n"(registers));
})"},
      {"kiln_setmaxnreg_inc", R"(template <int registers>
__device__ __forceinline__ void kiln_setmaxnreg_inc() {
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" :: "n"(registers));
})"},
      {"kiln_tma_load_2d",
       R"(__device__ __forceinline__ void kiln_tma_load_2d(unsigned shared, const kiln_tensor_map* map, int c0, int c1, unsigned barrier) {
  asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];"
               :: "r"(shared), "l"(reinterpret_cast<unsigned long long>(map)), "r"(c0), "r"(c1), "r"(barrier) : "memory");
})"},
      {"kiln_tma_load_3d",
       R"(__device__ __forceinline__ void kiln_tma_load_3d(unsigned shared, const kiln_tensor_map* map, int c0, int c1, int c2, unsigned barrier) {
  asm volatile("cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4}], [%5];"
               :: "r"(shared), "l"(reinterpret_cast<unsigned long long>(map)), "r"(c0), "r"(c1), "r"(c2), "r"(barrier) : "memory");
})"},
      {"kiln_tma_load_4d",
       R"(__device__ __forceinline__ void kiln_tma_load_4d(unsigned shared, const kiln_tensor_map* map, int c0, int c1, int c2, int c3, unsigned barrier) {
  asm volatile("cp.async.bulk.tensor.4d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4, %5}], [%6];"
               :: "r"(shared), "l"(reinterpret_cast<unsigned long long>(map)), "r"(c0), "r"(c1), "r"(c2), "r"(c3), "r"(barrier) : "memory");
})"},
      {"kiln_tma_load_5d",
       R"(__device__ __forceinline__ void kiln_tma_load_5d(unsigned shared, const kiln_tensor_map* map, int c0, int c1, int c2, int c3, int c4, unsigned barrier) {
  asm volatile("cp.async.bulk.tensor.5d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4, %5, %6}], [%7];"
               :: "r"(shared), "l"(reinterpret_cast<unsigned long long>(map)), "r"(c0), "r"(c1), "r"(c2), "r"(c3), "r"(c4), "r"(barrier) : "memory");
})"},
      {"kiln_cp_async_commit", R"(__device__ __forceinline__ void kiln_cp_async_commit() {
  asm volatile("cp.async.commit_group;");
})"},
      // Waits until at most `pending` committed groups are still in flight.
      {"kiln_cp_async_wait", R"(template <int pending>
__device__ __forceinline__ void kiln_cp_async_wait() {
  asm volatile("cp.async.wait_group %0;" :: "n"(pending));
})"},
  };
  return functions;
}

// The kiln_* identifiers in `code`.
std::set<std::string> called_names(std::string_view code) {
  std::set<std::string> names;
  for (size_t at = code.find("kiln_"); at != std::string_view::npos;
       at = code.find("kiln_", at + 1)) {
    if (at > 0 && (std::isalnum(static_cast<unsigned char>(code[at - 1])) || code[at - 1] == '_')) {
      continue;
    }
    size_t end = at;
    while (end < code.size() &&
           (std::isalnum(static_cast<unsigned char>(code[end])) || code[end] == '_')) {
      ++end;
    }
    names.insert(std::string(code.substr(at, end - at)));
  }
  return names;
}

}  // namespace

std::string device_functions_for(std::string_view code) {
  std::set<std::string> needed = called_names(code);
  // Close over what the needed functions call themselves.
  for (bool grew = true; grew;) {
    grew = false;
    for (const DeviceFunction& function : library()) {
      if (!needed.count(function.name)) continue;
      for (const std::string& name : called_names(function.code))
        grew |= needed.insert(name).second;
    }
  }
  std::string text;
  for (const DeviceFunction& function : library()) {
    if (!needed.count(function.name)) continue;
    text += function.code;
    text += "\n\n";
    needed.erase(function.name);
  }
  if (!needed.empty()) {
    throw InternalError("kernel calls " + *needed.begin() + ", which no device function defines");
  }
  return text;
}

}  // namespace kiln::codegen
