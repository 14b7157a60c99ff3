// A CPU emulation of the CUDA kiln's kernels use, so that their generated source runs (compiled
// as C++20) without a GPU: a block is blockDim.x std::threads; __shared__ variables are function
// statics (blocks run one after another); __syncthreads and __syncwarp are barriers;
// __shfl_xor_sync exchanges through a per-warp slot array; mma.sync m16n8k16 (f16, bf16) gathers
// the warp's fragments (layouts of codegen/device_functions.cc) and multiplies in f32; 16-bit
// conversions round to nearest even (_Float16, and the bf16 bit arithmetic of the library).
// Here are the kiln_* functions whose library versions are PTX (or need these replacements);
// run_emulated.py keeps the rest of the library in the kernel's source. Used by run_emulated.py.
#pragma once

#include <algorithm>
#include <barrier>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <thread>
#include <vector>
struct dim3e {
  unsigned x = 0, y = 0, z = 0;
};
thread_local dim3e threadIdx, blockIdx;
dim3e blockDim{128, 1, 1}, gridDim{1, 1, 1};
std::barrier<>* g_emu_block;
std::barrier<>* g_emu_warp[32];
#define __global__
#define __device__
#define __forceinline__ inline
#define __launch_bounds__(x)
#define __restrict__ __restrict
#define __shared__ static
#define __align__(n) __attribute__((aligned(n)))
using std::erf;
using std::exp;
using std::isinf;
using std::isnan;
using std::log;
using std::pow;
using std::sqrt;
inline int min(int a, int b) { return a < b ? a : b; }
inline long long min(long long a, long long b) { return a < b ? a : b; }
inline int max(int a, int b) { return a > b ? a : b; }
inline long long max(long long a, long long b) { return a > b ? a : b; }
inline float __fdividef(float a, float b) { return a / b; }
inline void __syncthreads() { g_emu_block->arrive_and_wait(); }
inline void __syncwarp() { g_emu_warp[threadIdx.x / 32]->arrive_and_wait(); }
inline float __int_as_float(unsigned v) {
  float f;
  std::memcpy(&f, &v, 4);
  return f;
}
inline float __uint_as_float(unsigned v) { return __int_as_float(v); }
inline unsigned __float_as_uint(float f) {
  unsigned v;
  std::memcpy(&v, &f, 4);
  return v;
}
template <class T>
T __shfl_xor_sync(unsigned, T v, int mask) {
  static T slots[32][32];
  const int w = threadIdx.x / 32, l = threadIdx.x % 32;
  slots[w][l] = v;
  __syncwarp();
  const T r = slots[w][l ^ mask];
  __syncwarp();
  return r;
}
inline float kiln_f16_to_f32(unsigned short bits) {
  _Float16 h;
  std::memcpy(&h, &bits, 2);
  return (float)h;
}
inline unsigned short kiln_f32_to_f16(float v) {
  _Float16 h = (_Float16)v;
  unsigned short b;
  std::memcpy(&b, &h, 2);
  return b;
}
inline float kiln_bf16_to_f32(unsigned short bits) {
  return __uint_as_float(static_cast<unsigned>(bits) << 16);
}
inline unsigned short kiln_f32_to_bf16(float value) {
  const unsigned bits = __float_as_uint(value);
  if (value != value) return static_cast<unsigned short>((bits >> 16) | 0x40);
  return static_cast<unsigned short>((bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16);
}
inline float kiln_round_to_f16(float v) { return kiln_f16_to_f32(kiln_f32_to_f16(v)); }
inline float kiln_round_to_f16(double v) { return (float)(_Float16)v; }
inline float kiln_round_to_bf16(float v) { return kiln_bf16_to_f32(kiln_f32_to_bf16(v)); }
inline float kiln_round_to_tf32(float value) {
  return __uint_as_float((__float_as_uint(value) + 0x1000u) & 0xffffe000u);
}
template <class T>
T kiln_max(T a, T b) {
  return (a != a || a > b) ? a : b;
}
inline float kiln_div(float a, float b) { return a / b; }
inline double kiln_div(double a, double b) { return a / b; }
inline long long kiln_resolve_index(long long index, long long dim) {
  if (index < 0) index += dim;
  return index < 0 ? 0 : index >= dim ? dim - 1 : index;
}
inline unsigned kiln_pack_f16x2(float low, float high) {
  return kiln_f32_to_f16(low) | (unsigned(kiln_f32_to_f16(high)) << 16);
}
inline unsigned kiln_f32x2_to_f16x2(float low, float high) { return kiln_pack_f16x2(low, high); }
inline unsigned kiln_pack_bf16x2(float low, float high) {
  return kiln_f32_to_bf16(low) | (unsigned(kiln_f32_to_bf16(high)) << 16);
}
template <float (*decode)(unsigned short)>
void emu_mma(float* c, const unsigned* a, const unsigned* b) {
  static unsigned A[4][32][4], B[4][32][2];
  const int w = threadIdx.x / 32, l = threadIdx.x % 32;
  for (int i = 0; i < 4; ++i) A[w][l][i] = a[i];
  for (int i = 0; i < 2; ++i) B[w][l][i] = b[i];
  __syncwarp();
  float am[16][16], bm[16][8];
  for (int lane = 0; lane < 32; ++lane) {
    const int g = lane / 4, t = lane % 4;
    for (int half = 0; half < 2; ++half) {
      auto get = [&](unsigned word) {
        return decode(static_cast<unsigned short>(half ? word >> 16 : word & 0xffff));
      };
      am[g][2 * t + half] = get(A[w][lane][0]);
      am[g + 8][2 * t + half] = get(A[w][lane][1]);
      am[g][2 * t + 8 + half] = get(A[w][lane][2]);
      am[g + 8][2 * t + 8 + half] = get(A[w][lane][3]);
      bm[2 * t + half][g] = get(B[w][lane][0]);
      bm[2 * t + 8 + half][g] = get(B[w][lane][1]);
    }
  }
  __syncwarp();
  const int g = l / 4, t = l % 4;
  for (int i = 0; i < 4; ++i) {
    const int row = g + (i / 2) * 8, col = 2 * t + i % 2;
    float sum = 0;
    for (int k = 0; k < 16; ++k) sum += am[row][k] * bm[k][col];
    c[i] += sum;
  }
}
inline void kiln_mma_f16_16816(float* c, const unsigned* a, const unsigned* b) {
  emu_mma<kiln_f16_to_f32>(c, a, b);
}
inline void kiln_mma_bf16_16816(float* c, const unsigned* a, const unsigned* b) {
  emu_mma<kiln_bf16_to_f32>(c, a, b);
}
