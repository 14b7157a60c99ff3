// The CUDA subset that kiln's kernels use (tensor-core contractions, tiled attention, reduction
// rows, direct conv, LRN, cum_sum), emulated on the CPU, so their emitted code can be run and
// checked without a GPU (run_emulated.py). The emulation is adversarial, so that a kernel that
// is right only by luck fails:
//   - a block's threads are fibers (cuda_emulator.cc) run, between barriers, in the order of a
//     schedule that run_emulated.py picks (emu_set_schedule): `forward` runs the lowest-numbered
//     ready thread first (warp 0 reaches each __syncthreads before warp 1 starts), `reverse` the
//     highest, `interleaved` goes round the threads lane by lane across the warps, `shuffled`
//     runs a seeded random ready thread and also shuffles the order of the blocks (`reverse`
//     reverses it); a correct kernel gives the same bits in every schedule;
//   - __syncthreads, __syncwarp and the warp collectives (__shfl_xor_sync, ldmatrix, mma.sync)
//     are barriers at which the last thread to arrive does the work for all; cp.async copies
//     when a cp.async.wait_group must have completed it;
//   - each block's shared memory, static (__shared__ arrays, which run_emulated.py rewrites to
//     emu_shared) and dynamic (emu_dynamic_shared), starts as garbage: bytes 0xff (NaN, -1), or
//     seeded random bytes in the shuffled schedules;
//   - every shared array, global buffer (emu_global_alloc) and fiber stack lies between two
//     inaccessible pages, its end 0 to 15 bytes before the one after, canary bytes around it:
//     an access to either page ends the process naming the array or buffer and the byte, and
//     canaries overwritten are reported at the end of the block (shared) or launch (global);
//     the inputs are read-only (emu_global_read_only);
//   - launches are checked against CUDA's limits for sm_80: 1 to 1024 threads and no more than
//     the kernel's __launch_bounds__ (which run_emulated.py passes to emu_launch), grid
//     dimensions, 48 KiB of static shared memory and 163 KiB in all.
// A deadlock (a barrier some threads never reach) and lanes of a warp at different warp
// collectives end the process too. Here are the kiln_* device functions
// (codegen/device_functions.cc) whose library versions are PTX, and those they call,
// reimplemented from their documented semantics: f16 through _Float16 (round to nearest even),
// bf16 and TF32 as kiln rounds them, mma as an exact product summed in double, ldmatrix per the
// PTX fragment layouts; run_emulated.py keeps the rest of the library in the kernels' source.
#pragma once
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

struct Dim3 {
  unsigned x = 0, y = 0, z = 0;
};
extern Dim3 threadIdx, blockIdx, gridDim, blockDim;

#define __global__
#define __device__
#define __forceinline__ inline
#define __launch_bounds__(x)
#define __restrict__
#define __align__(n) __attribute__((aligned(n)))

// Shared memory: `__shared__ T name[N]...;` becomes `static T (&name)[N]... =
// emu_shared<T[N]...>("name");` (its storage is the same for every block; emu_launch fills it
// with garbage at each block's start), and the dynamic `extern __shared__ unsigned char
// g_shared[];` becomes `unsigned char* const g_shared = emu_dynamic_shared();`, the launch's
// bytes.
void* emu_shared_array(const char* name, size_t bytes);
template <class T>
T& emu_shared(const char* name) {
  return *static_cast<T*>(emu_shared_array(name, sizeof(T)));
}
unsigned char* emu_dynamic_shared();

inline unsigned __float_as_uint(float f) {
  unsigned u;
  memcpy(&u, &f, 4);
  return u;
}
inline float __uint_as_float(unsigned u) {
  float f;
  memcpy(&f, &u, 4);
  return f;
}
inline float __int_as_float(int i) {
  float f;
  memcpy(&f, &i, 4);
  return f;
}
inline float __fdividef(float a, float b) { return a / b; }
// Double operations NVRTC never contracts (resize's weights and sums): plain IEEE operations on
// the CPU (x86-64 without -mfma has no fused multiply-add to contract them into).
inline double __dadd_rn(double a, double b) { return a + b; }
inline double __dsub_rn(double a, double b) { return a - b; }
inline double __dmul_rn(double a, double b) { return a * b; }
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

// Scheduling.
void emu_syncthreads();
#define __syncthreads() emu_syncthreads()
// Warp collective: every lane calls with its pointers; the last to arrive runs `f(ptrs)`.
void emu_warp_collective(void* p0, void* p1, void* p2, void (*f)(void* const (*)[3]));
inline void emu_no_work(void* const (*)[3]) {}
inline void __syncwarp() { emu_warp_collective(nullptr, nullptr, nullptr, emu_no_work); }
// Each lane's pointers: its result, its value, and the lane mask it XORs its lane index with.
template <class T>
void emu_shfl_xor(void* const (*lanes)[3]) {
  for (int l = 0; l < 32; ++l) {
    const int source = l ^ static_cast<int>(reinterpret_cast<intptr_t>(lanes[l][2]));
    memcpy(lanes[l][0], lanes[source & 31][1], sizeof(T));
  }
}
// The whole warp takes part (kiln passes the full mask); a lane that skips it leaves the warp at
// different collectives or deadlocked, both of which the emulator reports.
template <class T>
T __shfl_xor_sync(unsigned, T value, int lane_mask) {
  T result;
  emu_warp_collective(&result, &value, reinterpret_cast<void*>(static_cast<intptr_t>(lane_mask)),
                      emu_shfl_xor<T>);
  return result;
}

inline float kiln_f16_to_f32(unsigned short bits) {
  _Float16 h;
  memcpy(&h, &bits, 2);
  return (float)h;
}
inline unsigned short kiln_f32_to_f16(float v) {
  _Float16 h = (_Float16)v;
  unsigned short b;
  memcpy(&b, &h, 2);
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
inline float kiln_round_to_f16(double v) { return static_cast<float>(static_cast<_Float16>(v)); }
inline float kiln_round_to_bf16(float v) { return kiln_bf16_to_f32(kiln_f32_to_bf16(v)); }
inline float kiln_round_to_tf32(float value) {
  return __uint_as_float((__float_as_uint(value) + 0x1000u) & 0xffffe000u);
}
inline unsigned kiln_pack_f16x2(float lo, float hi) {
  return kiln_f32_to_f16(lo) | (unsigned(kiln_f32_to_f16(hi)) << 16);
}
inline unsigned kiln_pack_bf16x2(float lo, float hi) {
  return kiln_f32_to_bf16(lo) | (unsigned(kiln_f32_to_bf16(hi)) << 16);
}
// mul.rn.f16x2: the product of two f16 values is exact in float, so one rounding.
inline unsigned kiln_mul_f16x2(unsigned a, unsigned b) {
  return kiln_pack_f16x2(kiln_f16_to_f32(a & 0xffffu) * kiln_f16_to_f32(b & 0xffffu),
                         kiln_f16_to_f32(a >> 16) * kiln_f16_to_f32(b >> 16));
}

// max.NaN.f32: NaN when either operand is (the canonical NaN), else the larger.
inline float kiln_max_nan(float a, float b) {
  if (a != a || b != b) return __int_as_float(0x7fffffff);
  return a > b ? a : b;
}
// ex2.approx.ftz.f32: 2^x, results below 2^-126 flushed to zero (the approximation's error,
// about 2^-22 relative, is not modelled: exact to float here).
inline float kiln_exp2_approx(float x) {
  const float y = std::exp2(x);
  return y < 0x1p-126f ? 0.0f : y;
}

// cp.async, deferred as late as the PTX allows: a thread's copies happen when a
// cp.async.wait_group leaves fewer groups in flight than it committed, so a missing wait or
// commit reads stale shared memory.
void emu_cp_async(void* shared, const void* global, int bytes, bool valid);
void emu_cp_async_commit();
void emu_cp_async_wait(int pending);
inline void kiln_cp_async_16(void* s, const void* g, bool valid) { emu_cp_async(s, g, 16, valid); }
inline void kiln_cp_async_8(void* s, const void* g, bool valid) { emu_cp_async(s, g, 8, valid); }
inline void kiln_cp_async_4(void* s, const void* g, bool valid) { emu_cp_async(s, g, 4, valid); }
inline void kiln_cp_async_commit() { emu_cp_async_commit(); }
template <int pending>
inline void kiln_cp_async_wait() {
  emu_cp_async_wait(pending);
}

// f16 bits as a float, from a table: x86 converts _Float16 in software, most of mma's time.
inline float emu_f16_to_f32_by_table(unsigned short bits) {
  static const std::array<float, 65536> table = [] {
    std::array<float, 65536> values;
    for (unsigned i = 0; i < 65536; ++i)
      values[i] = kiln_f16_to_f32(static_cast<unsigned short>(i));
    return values;
  }();
  return table[bits];
}

template <int kind>  // 0 f16, 1 bf16, 2 tf32
void emu_mma(void* const (*lanes)[3]) {
  // A 16 x K, B K x 8, C 16 x 8.
  const int K = kind == 2 ? 8 : 16;
  double A[16][16] = {}, B[16][8] = {}, C[16][8];
  auto h = [](unsigned bits) {
    return kind == 0 ? emu_f16_to_f32_by_table(bits & 0xffff) : kiln_bf16_to_f32(bits & 0xffff);
  };
  for (int l = 0; l < 32; ++l) {
    const unsigned* a = (const unsigned*)lanes[l][1];
    const unsigned* b = (const unsigned*)lanes[l][2];
    const float* c = (const float*)lanes[l][0];
    const int g = l / 4, t = l % 4;
    if (kind == 2) {
      A[g][t] = __uint_as_float(a[0]);
      A[g + 8][t] = __uint_as_float(a[1]);
      A[g][t + 4] = __uint_as_float(a[2]);
      A[g + 8][t + 4] = __uint_as_float(a[3]);
      B[t][g] = __uint_as_float(b[0]);
      B[t + 4][g] = __uint_as_float(b[1]);
    } else {
      for (int e = 0; e < 2; ++e) {
        A[g][2 * t + e] = h(a[0] >> (16 * e));
        A[g + 8][2 * t + e] = h(a[1] >> (16 * e));
        A[g][2 * t + 8 + e] = h(a[2] >> (16 * e));
        A[g + 8][2 * t + 8 + e] = h(a[3] >> (16 * e));
        B[2 * t + e][g] = h(b[0] >> (16 * e));
        B[2 * t + 8 + e][g] = h(b[1] >> (16 * e));
      }
    }
    C[g][2 * t] = c[0];
    C[g][2 * t + 1] = c[1];
    C[g + 8][2 * t] = c[2];
    C[g + 8][2 * t + 1] = c[3];
  }
  for (int l = 0; l < 32; ++l) {
    float* c = (float*)lanes[l][0];
    const int g = l / 4, t = l % 4;
    const int rows[4] = {g, g, g + 8, g + 8}, cols[4] = {2 * t, 2 * t + 1, 2 * t, 2 * t + 1};
    for (int r = 0; r < 4; ++r) {
      double sum = C[rows[r]][cols[r]];
      for (int k = 0; k < K; ++k) sum += A[rows[r]][k] * B[k][cols[r]];
      c[r] = (float)sum;
    }
  }
}
inline void kiln_mma_f16_16816(float* c, const unsigned* a, const unsigned* b) {
  emu_warp_collective(c, (void*)a, (void*)b, emu_mma<0>);
}
inline void kiln_mma_bf16_16816(float* c, const unsigned* a, const unsigned* b) {
  emu_warp_collective(c, (void*)a, (void*)b, emu_mma<1>);
}
inline void kiln_mma_tf32_1688(float* c, const unsigned* a, const unsigned* b) {
  emu_warp_collective(c, (void*)a, (void*)b, emu_mma<2>);
}

template <bool trans>
void emu_ldmatrix_x4(void* const (*lanes)[3]) {
  for (int l = 0; l < 32; ++l) {
    unsigned* r = (unsigned*)lanes[l][0];
    for (int i = 0; i < 4; ++i) {
      unsigned v = 0;
      for (int e = 0; e < 2; ++e) {
        unsigned short x;
        if (!trans) {
          const unsigned short* row = (const unsigned short*)lanes[8 * i + l / 4][1];
          x = row[2 * (l % 4) + e];
        } else {
          const unsigned short* row = (const unsigned short*)lanes[8 * i + 2 * (l % 4) + e][1];
          x = row[l / 4];
        }
        v |= unsigned(x) << (16 * e);
      }
      r[i] = v;
    }
  }
}
inline void kiln_ldmatrix_x4(unsigned* r, const void* row) {
  emu_warp_collective(r, (void*)row, nullptr, emu_ldmatrix_x4<false>);
}
inline void kiln_ldmatrix_x4_trans(unsigned* r, const void* row) {
  emu_warp_collective(r, (void*)row, nullptr, emu_ldmatrix_x4<true>);
}
