// Device helpers shared by the SIMT fp32 window-attention kernels (simt_window_attn_fwd.cu,
// simt_window_attn_bwd.cu). Rounding is spelled out (__fmul_rn / __fadd_rn / fmaf) wherever the
// same logit is computed by two kernels, so that the forward, the backward row kernel and the
// backward column kernel see bitwise identical S.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/simt/simt_window_attn.h"

namespace flash_window_attn {
namespace simt {

constexpr int kWarps = kThreads / 32;
constexpr int kMaxColsPerLane = 4;  // d <= 128 = 4 * 32: a lane owns columns lane + 32 * cc

// NaN-propagating max (fmaxf drops a NaN operand: an all-NaN row would pass for a fully masked
// one and give 0 instead of NaN).
__device__ __forceinline__ float max_nan(float a, float b) {
  return (isnan(a) || isnan(b)) ? a + b : fmaxf(a, b);
}

__device__ __forceinline__ float warp_max(float x) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) x = max_nan(x, __shfl_xor_sync(0xffffffffu, x, o));
  return x;
}

__device__ __forceinline__ double warp_sum(double x) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) x += __shfl_xor_sync(0xffffffffu, x, o);
  return x;
}

// Copy rows [row0, row0 + nrows) of one (N, d) slice (row stride src_sn, unit column stride) into
// shared memory with leading dimension ld; rows past N are zero.
__device__ __forceinline__ void load_rows(float* dst, int ld, const float* src, int64_t src_sn, int64_t row0,
                                          int nrows, int64_t N, int d) {
  for (int e = threadIdx.x; e < nrows * d; e += kThreads) {
    const int r = e / d, c = e - r * d;
    const int64_t row = row0 + r;
    dst[r * ld + c] = row < N ? src[row * src_sn + c] : 0.f;
  }
}

// F.normalize of nrows shared-memory rows in place (norm and division in double, rounded once);
// norm_out[r] = |x_r| if norm_out is given. One warp per row. Caller synchronises before and after.
__device__ __forceinline__ void normalize_rows(float* x, int ld, int nrows, int d, float* norm_out) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  for (int r = warp; r < nrows; r += kWarps) {
    float* row = x + r * ld;
    double ss = 0;
    for (int c = lane; c < d; c += 32) ss += double(row[c]) * double(row[c]);
    ss = warp_sum(ss);
    const double n = sqrt(ss);
    const double den = n > double(kNormEpsF) ? n : double(kNormEpsF);
    for (int c = lane; c < d; c += 32) row[c] = float(double(row[c]) / den);
    if (norm_out != nullptr && lane == 0) norm_out[r] = float(n);
  }
}

// <a, b> over d (a multiple of 8) in fp32, summed in blocks of 8 (fmaf within a block).
__device__ __forceinline__ float dot_blocked(const float* a, const float* b, int d) {
  float acc = 0.f;
  for (int c0 = 0; c0 < d; c0 += 8) {
    float part = __fmul_rn(a[c0], b[c0]);
#pragma unroll
    for (int c = 1; c < 8; ++c) part = fmaf(a[c0 + c], b[c0 + c], part);
    acc = __fadd_rn(acc, part);
  }
  return acc;
}

// S_ij from the raw dot x = <q_i, k_j> (q^, k^ for V2): mult * x + bias[h,i,j] + mask[w,i,j].
__device__ __forceinline__ float finish_logit(float x, float mult, const SimtInputs& in, int64_t h, int64_t w,
                                              int64_t i, int64_t j) {
  float s = __fmul_rn(x, mult);
  if (in.bias != nullptr) s = __fadd_rn(s, in.bias[(h * in.N + i) * in.N + j]);
  if (in.mask != nullptr) s = __fadd_rn(s, in.mask[(w * in.N + i) * in.N + j]);
  return s;
}

// scale (V1) or alpha = exp(min(logit_scale[h], float32(ln 100))) (V2).
__device__ __forceinline__ float logit_multiplier(const SimtInputs& in, int64_t h) {
  return in.logit_scale != nullptr ? expf(fminf(in.logit_scale[h], kLogitScaleMaxF)) : in.scale;
}

// F.normalize's backward for one row held by one warp: g (d(loss)/dx^ on entry, the lane's
// columns lane + 32 * cc) becomes d(loss)/dx. xhat is the row of x^ in shared memory.
__device__ __forceinline__ void normalize_backward_warp_row(float (&g)[kMaxColsPerLane], const float* xhat,
                                                            float norm, int d) {
  const int lane = threadIdx.x & 31;
  double proj = 0;
#pragma unroll
  for (int cc = 0; cc < kMaxColsPerLane; ++cc) {
    const int c = lane + 32 * cc;
    if (c < d) proj += double(xhat[c]) * double(g[cc]);
  }
  proj = warp_sum(proj);
  const bool through = norm >= kNormEpsF;  // clamp_min(norm, eps) passes the gradient where norm >= eps
#pragma unroll
  for (int cc = 0; cc < kMaxColsPerLane; ++cc) {
    const int c = lane + 32 * cc;
    if (c < d) {
      g[cc] = through ? float((double(g[cc]) - double(xhat[c]) * proj) / double(norm)) : g[cc] / kNormEpsF;
    }
  }
}

// The kKeyTile-key tiles of one (N, d) slice g (row stride sn; n = N as an int) in shared memory kv
// (leading dimension ldkv), F.normalize'd where `normalize` (V2's keys), one after the other: for
// each tile, per_tile(j0) once every thread can read it (rows j0 .. j0 + kKeyTile - 1; past N
// zero), then a barrier before the next tile's copy. The forward's and the backward row kernel's
// loops over keys.
template <typename PerTile>
__device__ __forceinline__ void for_each_key_tile(float* kv, int ldkv, const float* g, int64_t sn, int n, int64_t N,
                                                  int d, bool normalize, PerTile&& per_tile) {
  for (int j0 = 0; j0 < n; j0 += kKeyTile) {
    load_rows(kv, ldkv, g, sn, j0, kKeyTile, N, d);
    __syncthreads();
    if (normalize) {
      normalize_rows(kv, ldkv, kKeyTile, d, nullptr);
      __syncthreads();
    }
    per_tile(j0);
    __syncthreads();
  }
}

// The logits of one key tile (for_each_key_tile's kv, keys j0 ..): for the CTA's rows
// r = warp + kWarps m (query i = r0 + r; sq: their q rows, leading dimension d) and the lane's key
// j = j0 + lane, x = <q_i, k_j> and s = finish_logit(x) where both exist (0 and 0 otherwise),
// handed to store(r, j, x, s).
template <int kRowsPerWarp, typename Store>
__device__ __forceinline__ void tile_logits(const float* sq, const float* kv, int ldkv, int j0, int64_t r0, int n,
                                            float mult, const SimtInputs& in, int64_t h, int64_t w, int d, Store&& store) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int j = j0 + lane;
#pragma unroll
  for (int m = 0; m < kRowsPerWarp; ++m) {
    const int r = warp + kWarps * m;
    const int64_t i = r0 + r;
    float x = 0.f, sv = 0.f;
    if (i < in.N && j < n) {
      x = dot_blocked(sq + r * d, kv + lane * ldkv, d);
      sv = finish_logit(x, mult, in, h, w, i, j);
    }
    store(r, j, x, sv);
  }
}

// acc (the warp's rows warp + kWarps m, columns lane + 32 cc) = coef g over the key tiles of g
// (for_each_key_tile): coef is the CTA's rows x keys in shared memory (leading dimension coef_ld),
// e.g. out = P v (forward) and dq' = dS k (backward, k normalised for V2).
template <int kRowsPerWarp>
__device__ __forceinline__ void rows_times_key_tiles(float (&acc)[kRowsPerWarp][kMaxColsPerLane], const float* coef,
                                                     int coef_ld, float* kv, int ldkv, const float* g, int64_t sn, int n,
                                                     int64_t N, int d, bool normalize) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
#pragma unroll
  for (int m = 0; m < kRowsPerWarp; ++m)
#pragma unroll
    for (int cc = 0; cc < kMaxColsPerLane; ++cc) acc[m][cc] = 0.f;
  for_each_key_tile(kv, ldkv, g, sn, n, N, d, normalize, [&](int j0) {
    const int jn = min(kKeyTile, n - j0);
    for (int jj = 0; jj < jn; ++jj) {
      const float* row = kv + jj * ldkv;
#pragma unroll
      for (int m = 0; m < kRowsPerWarp; ++m) {
        const float cf = coef[(warp + kWarps * m) * coef_ld + j0 + jj];
#pragma unroll
        for (int cc = 0; cc < kMaxColsPerLane; ++cc) {
          const int c = lane + 32 * cc;
          if (c < d) acc[m][cc] = fmaf(cf, row[c], acc[m][cc]);
        }
      }
    }
  });
}

// Grid size for grid-stride loops over `tiles` independent tiles.
inline unsigned int grid_for(int64_t tiles) {
  constexpr int64_t kMaxBlocks = int64_t(1) << 20;
  return static_cast<unsigned int>(tiles < kMaxBlocks ? (tiles > 0 ? tiles : 1) : kMaxBlocks);
}

// Opt in to more than 48 KiB of dynamic shared memory when needed; errors if the device can't.
template <typename Kernel>
cudaError_t prepare_smem(Kernel kernel, size_t bytes) {
  int dev = 0;
  cudaError_t err = cudaGetDevice(&dev);
  if (err != cudaSuccess) return err;
  int optin = 0;
  err = cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev);
  if (err != cudaSuccess) return err;
  if (bytes > static_cast<size_t>(optin)) return cudaErrorInvalidConfiguration;
  if (bytes > 48 * 1024) {
    return cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(bytes));
  }
  return cudaSuccess;
}

}  // namespace simt
}  // namespace flash_window_attn
