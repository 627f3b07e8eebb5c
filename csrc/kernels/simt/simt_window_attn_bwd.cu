// SIMT fp32 backward of window attention (the float32 CUDA path; no tensor cores, no tf32).
//
// With S, P recomputed exactly as the forward does (S_ij = mult <q_i, k_j> + bias + mask, q and k
// F.normalize'd for V2), P_ij = exp(S_ij - m_i) / l_i with the row max m_i and sum l_i recomputed
// here (0 for a fully masked row):
//   dP = dout v^T, D_i = sum_j P_ij dP_ij, dS = P o (dP - D), dv = P^T dout,
//   V1: dq = scale dS k, dk = scale dS^T q
//   V2: dq^ = alpha dS k^, dk^ = alpha dS^T q^, then F.normalize's backward
//       dq = (dq^ - q^ <q^, dq^>) / |q| if |q| >= 1e-12 else dq^ / 1e-12 (same for k);
//       dalpha = sum dS o (q^ k^T), dlogit_scale[h] = alpha dalpha if logit_scale[h] <= float32(ln 100) else 0
//   dbias[h] = sum over the B_ windows of dS.
// Kernels (each a grid-stride loop, grid.x <= 2^20, 128 threads, int64 indexing):
//   1. rows:  one block per (chunk of windows, head, kBwdRows = 8 query rows); loops over the windows
//      of its chunk. Keeps 8 full rows of P and dS (and <q^, k^> for V2) in shared memory (at most
//      124 KiB at N = 1024, d = 128), writes dq, the row statistics m, l, D (workspace), its dbias
//      rows of the chunk's partial (read-modify-write by the owning thread, no atomics) and one
//      dalpha partial per block (fixed-order tree reduction in double).
//   2. cols:  one block per (window, head, kBwdColKeys = 16 keys); streams 32 query rows at a time,
//      recomputes P and dS from m, l, D bit-identically to kernel 1, accumulates dk and dv in registers.
//   3. dbias reduction over chunks in chunk order; 4. dlogit_scale reduction, one block per head.
// Deterministic: no atomics, every sum has a fixed order. Limits: N <= 1024, d <= 128, d % 8 == 0.
#include "kernels/simt/simt_common.cuh"

#include <math_constants.h>

namespace flash_window_attn {
namespace simt {
namespace {

constexpr int kRowsPerWarp = kBwdRows / kWarps;     // 2
constexpr int kKeysPerWarp = kBwdColKeys / kWarps;  // 4
constexpr int kColQueryTile = 32;                   // query rows per step of the column kernel

// ---------------------------------------------------------------------------------------------
// 1. row kernel

struct RowSmem {
  int Npad, ldkv;
  double* red;  // kThreads
  float* q;     // kBwdRows x d (q^ for V2)
  float* dout;  // kBwdRows x d
  float* kv;    // kKeyTile x (d + 1)
  float* P;     // kBwdRows x Npad
  float* dS;    // kBwdRows x Npad (dP, then dS)
  float* X;     // kBwdRows x Npad, <q^_i, k^_j> (V2 only)
  float* qnorm; // kBwdRows

  static size_t bytes(int64_t N, int64_t d, bool cosine) {
    const int64_t Npad = (N + kKeyTile - 1) / kKeyTile * kKeyTile;
    const int64_t floats = 2 * kBwdRows * d + kKeyTile * (d + 1) + (cosine ? 3 : 2) * kBwdRows * Npad + kBwdRows;
    return kThreads * sizeof(double) + static_cast<size_t>(floats) * sizeof(float);
  }
  __device__ RowSmem(void* base, int N, int d, bool cosine) {
    Npad = (N + kKeyTile - 1) / kKeyTile * kKeyTile;
    ldkv = d + 1;
    red = static_cast<double*>(base);
    q = reinterpret_cast<float*>(red + kThreads);
    dout = q + kBwdRows * d;
    kv = dout + kBwdRows * d;
    P = kv + kKeyTile * ldkv;
    dS = P + kBwdRows * Npad;
    X = dS + kBwdRows * Npad;
    qnorm = X + (cosine ? kBwdRows * Npad : 0);
  }
};

__global__ void __launch_bounds__(kThreads) simt_bwd_rows_kernel(const SimtBwdParams p) {
  extern __shared__ double smem_raw_rows[];
  const SimtInputs& in = p.in;
  const int N = static_cast<int>(in.N), d = static_cast<int>(in.d);
  const bool cosine = in.logit_scale != nullptr;
  RowSmem sm(smem_raw_rows, N, d, cosine);
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int64_t n_row_tiles = (in.N + kBwdRows - 1) / kBwdRows;
  const int64_t n_tiles = p.n_chunks * in.H * n_row_tiles;

  for (int64_t tile = blockIdx.x; tile < n_tiles; tile += gridDim.x) {
    const int64_t ch = tile / n_row_tiles;  // chunk * H + h
    const int64_t r0 = (tile - ch * n_row_tiles) * kBwdRows;
    const int64_t chunk = ch / in.H, h = ch - chunk * in.H;
    const int64_t b_begin = chunk * p.windows_per_chunk;
    const int64_t b_end = min(in.B, b_begin + p.windows_per_chunk);
    const float mult = logit_multiplier(in, h);
    double dalpha = 0;  // this thread's share of the block's dalpha partial

    for (int64_t b = b_begin; b < b_end; ++b) {
      const int64_t w = b % in.nW;
      const float* kg = in.k + b * in.k_sb + h * in.k_sh;
      const float* vg = in.v + b * in.v_sb + h * in.v_sh;
      const int64_t stat0 = (b * in.H + h) * in.N;

      __syncthreads();
      load_rows(sm.q, d, in.q + b * in.q_sb + h * in.q_sh, in.q_sn, r0, kBwdRows, in.N, d);
      load_rows(sm.dout, d, p.dout + b * p.do_sb + h * p.do_sh, p.do_sn, r0, kBwdRows, in.N, d);
      __syncthreads();
      if (cosine) {
        normalize_rows(sm.q, d, kBwdRows, d, sm.qnorm);
        __syncthreads();
      }

      // S (into P) and <q^, k^> (into X). Thread: key lane, rows warp + 4m.
      for_each_key_tile(sm.kv, sm.ldkv, kg, in.k_sn, N, in.N, d, cosine, [&](int j0) {
        tile_logits<kRowsPerWarp>(sm.q, sm.kv, sm.ldkv, j0, r0, N, mult, in, h, w, d, [&](int r, int j, float x, float sv) {
          sm.P[r * sm.Npad + j] = sv;
          if (cosine) sm.X[r * sm.Npad + j] = x;
        });
      });

      // P = exp(S - m) / l, one warp per row; m and l go to the workspace for the column kernel.
      for (int r = warp; r < kBwdRows; r += kWarps) {
        const int64_t i = r0 + r;
        float* prow = sm.P + r * sm.Npad;
        if (i >= in.N) {
          for (int j = lane; j < sm.Npad; j += 32) prow[j] = 0.f;
          continue;
        }
        float mx = -CUDART_INF_F;
        for (int j = lane; j < N; j += 32) mx = max_nan(mx, prow[j]);
        mx = warp_max(mx);
        double l = 0;
        if (mx != -CUDART_INF_F) {
          for (int j = lane; j < N; j += 32) l += expf(prow[j] - mx);
        }
        l = warp_sum(l);
        const float lf = float(l);
        for (int j = lane; j < N; j += 32) prow[j] = mx == -CUDART_INF_F ? 0.f : expf(prow[j] - mx) / lf;
        if (lane == 0) {
          p.row_max[stat0 + i] = mx;
          p.row_sum[stat0 + i] = lf;
        }
      }
      __syncthreads();

      // dP = dout V^T (into dS).
      for (int j0 = 0; j0 < N; j0 += kKeyTile) {
        load_rows(sm.kv, sm.ldkv, vg, in.v_sn, j0, kKeyTile, in.N, d);
        __syncthreads();
        const int j = j0 + lane;
#pragma unroll
        for (int m = 0; m < kRowsPerWarp; ++m) {
          const int r = warp + kWarps * m;
          const int64_t i = r0 + r;
          sm.dS[r * sm.Npad + j] = (i < in.N && j < N) ? dot_blocked(sm.dout + r * d, sm.kv + lane * sm.ldkv, d) : 0.f;
        }
        __syncthreads();
      }

      // D = sum_j P dP, dS = P (dP - D); dalpha += sum_j dS <q^, k^>. One warp per row.
      for (int r = warp; r < kBwdRows; r += kWarps) {
        const int64_t i = r0 + r;
        if (i >= in.N) continue;  // its P and dP are 0, so is its dS
        const float* prow = sm.P + r * sm.Npad;
        float* dsrow = sm.dS + r * sm.Npad;
        double D = 0;
        for (int j = lane; j < N; j += 32) D += double(prow[j] * dsrow[j]);
        D = warp_sum(D);
        const float Df = float(D);
        for (int j = lane; j < N; j += 32) dsrow[j] = prow[j] * (dsrow[j] - Df);
        if (cosine) {
          const float* xrow = sm.X + r * sm.Npad;
          for (int j = lane; j < N; j += 32) dalpha += double(dsrow[j] * xrow[j]);
        }
        if (lane == 0) p.row_D[stat0 + i] = Df;
      }
      __syncthreads();

      // This chunk's dbias partial, rows [r0, r0 + kBwdRows): element e is always owned by the same thread.
      if (p.dbias_part != nullptr) {
        const bool first = b == b_begin;
        float* part = p.dbias_part + (ch * in.N + r0) * in.N;
        const int64_t rows = min(int64_t(kBwdRows), in.N - r0);
        for (int64_t e = threadIdx.x; e < rows * in.N; e += kThreads) {
          const int64_t r = e / in.N, j = e - r * in.N;
          const float v = sm.dS[r * sm.Npad + j];
          part[e] = first ? v : part[e] + v;
        }
      }

      // dq = mult * dS K (then the normalize backward for V2). Thread: rows warp + 4m, columns lane + 32cc.
      float acc[kRowsPerWarp][kMaxColsPerLane];
      rows_times_key_tiles(acc, sm.dS, sm.Npad, sm.kv, sm.ldkv, kg, in.k_sn, N, in.N, d, cosine);
#pragma unroll
      for (int m = 0; m < kRowsPerWarp; ++m) {
        const int r = warp + kWarps * m;
        const int64_t i = r0 + r;
#pragma unroll
        for (int cc = 0; cc < kMaxColsPerLane; ++cc) acc[m][cc] *= mult;
        if (cosine) normalize_backward_warp_row(acc[m], sm.q + r * d, sm.qnorm[r], d);  // whole warp
        if (i < in.N) {
          float* dqrow = p.dq + b * p.dq_sb + h * p.dq_sh + i * p.dq_sn;
#pragma unroll
          for (int cc = 0; cc < kMaxColsPerLane; ++cc) {
            const int c = lane + 32 * cc;
            if (c < d) dqrow[c * p.dq_sd] = acc[m][cc];
          }
        }
      }
    }

    if (cosine) {  // block tree reduction of dalpha in a fixed order
      __syncthreads();
      sm.red[threadIdx.x] = dalpha;
      __syncthreads();
      for (int s = kThreads / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) sm.red[threadIdx.x] += sm.red[threadIdx.x + s];
        __syncthreads();
      }
      if (threadIdx.x == 0) p.dalpha_part[tile] = sm.red[0];
    }
  }
}

// ---------------------------------------------------------------------------------------------
// 2. column kernel

struct ColSmem {
  int ld;
  float* k;      // kBwdColKeys x ld (k^ for V2)
  float* v;      // kBwdColKeys x ld
  float* q;      // kColQueryTile x ld (q^ for V2)
  float* dout;   // kColQueryTile x ld
  float* Pt;     // kColQueryTile x kBwdColKeys
  float* dSt;    // kColQueryTile x kBwdColKeys
  float* knorm;  // kBwdColKeys

  static size_t bytes(int64_t d) {
    const int64_t ld = d + 1;
    const int64_t floats = 2 * kBwdColKeys * ld + 2 * kColQueryTile * ld + 2 * kColQueryTile * kBwdColKeys + kBwdColKeys;
    return static_cast<size_t>(floats) * sizeof(float);
  }
  __device__ ColSmem(float* base, int d) {
    ld = d + 1;
    k = base;
    v = k + kBwdColKeys * ld;
    q = v + kBwdColKeys * ld;
    dout = q + kColQueryTile * ld;
    Pt = dout + kColQueryTile * ld;
    dSt = Pt + kColQueryTile * kBwdColKeys;
    knorm = dSt + kColQueryTile * kBwdColKeys;
  }
};

__global__ void __launch_bounds__(kThreads) simt_bwd_cols_kernel(const SimtBwdParams p) {
  extern __shared__ float smem_raw_cols[];
  const SimtInputs& in = p.in;
  const int N = static_cast<int>(in.N), d = static_cast<int>(in.d);
  const bool cosine = in.logit_scale != nullptr;
  ColSmem sm(smem_raw_cols, d);
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int64_t n_key_tiles = (in.N + kBwdColKeys - 1) / kBwdColKeys;
  const int64_t n_tiles = in.B * in.H * n_key_tiles;

  for (int64_t tile = blockIdx.x; tile < n_tiles; tile += gridDim.x) {
    const int64_t bh = tile / n_key_tiles;
    const int64_t j0 = (tile - bh * n_key_tiles) * kBwdColKeys;
    const int64_t b = bh / in.H, h = bh - b * in.H, w = b % in.nW;
    const int64_t stat0 = bh * in.N;
    const float* qg = in.q + b * in.q_sb + h * in.q_sh;
    const float* dog = p.dout + b * p.do_sb + h * p.do_sh;
    const float mult = logit_multiplier(in, h);

    __syncthreads();
    load_rows(sm.k, sm.ld, in.k + b * in.k_sb + h * in.k_sh, in.k_sn, j0, kBwdColKeys, in.N, d);
    load_rows(sm.v, sm.ld, in.v + b * in.v_sb + h * in.v_sh, in.v_sn, j0, kBwdColKeys, in.N, d);
    __syncthreads();
    if (cosine) {
      normalize_rows(sm.k, sm.ld, kBwdColKeys, d, sm.knorm);
      __syncthreads();
    }

    float dk[kKeysPerWarp][kMaxColsPerLane], dv[kKeysPerWarp][kMaxColsPerLane];
#pragma unroll
    for (int m = 0; m < kKeysPerWarp; ++m)
#pragma unroll
      for (int cc = 0; cc < kMaxColsPerLane; ++cc) dk[m][cc] = dv[m][cc] = 0.f;

    for (int i0 = 0; i0 < N; i0 += kColQueryTile) {
      load_rows(sm.q, sm.ld, qg, in.q_sn, i0, kColQueryTile, in.N, d);
      load_rows(sm.dout, sm.ld, dog, p.do_sn, i0, kColQueryTile, in.N, d);
      __syncthreads();
      if (cosine) {
        normalize_rows(sm.q, sm.ld, kColQueryTile, d, nullptr);
        __syncthreads();
      }
      // P and dS for (query lane, keys warp + 4m), exactly as the row kernel computed them.
      {
        const int64_t i = i0 + lane;
        float mi = -CUDART_INF_F, li = 0.f, Di = 0.f;
        if (i < in.N) {
          mi = p.row_max[stat0 + i];
          li = p.row_sum[stat0 + i];
          Di = p.row_D[stat0 + i];
        }
#pragma unroll
        for (int m = 0; m < kKeysPerWarp; ++m) {
          const int jj = warp + kWarps * m;
          const int64_t j = j0 + jj;
          float P = 0.f, dS = 0.f;
          if (i < in.N && j < in.N && mi != -CUDART_INF_F) {
            const float x = dot_blocked(sm.q + lane * sm.ld, sm.k + jj * sm.ld, d);
            const float s = finish_logit(x, mult, in, h, w, i, j);
            P = expf(s - mi) / li;
            const float dP = dot_blocked(sm.dout + lane * sm.ld, sm.v + jj * sm.ld, d);
            dS = P * (dP - Di);
          }
          sm.Pt[lane * kBwdColKeys + jj] = P;
          sm.dSt[lane * kBwdColKeys + jj] = dS;
        }
      }
      __syncthreads();
      // dv += P^T dout, dk += dS^T q. Thread: keys warp + 4m, columns lane + 32cc.
      const int rn = min(kColQueryTile, N - i0);
      for (int r = 0; r < rn; ++r) {
        const float* qrow = sm.q + r * sm.ld;
        const float* dorow = sm.dout + r * sm.ld;
#pragma unroll
        for (int m = 0; m < kKeysPerWarp; ++m) {
          const int jj = warp + kWarps * m;
          const float P = sm.Pt[r * kBwdColKeys + jj], dS = sm.dSt[r * kBwdColKeys + jj];
#pragma unroll
          for (int cc = 0; cc < kMaxColsPerLane; ++cc) {
            const int c = lane + 32 * cc;
            if (c < d) {
              dv[m][cc] = fmaf(P, dorow[c], dv[m][cc]);
              dk[m][cc] = fmaf(dS, qrow[c], dk[m][cc]);
            }
          }
        }
      }
      __syncthreads();
    }

#pragma unroll
    for (int m = 0; m < kKeysPerWarp; ++m) {
      const int jj = warp + kWarps * m;
      const int64_t j = j0 + jj;
#pragma unroll
      for (int cc = 0; cc < kMaxColsPerLane; ++cc) dk[m][cc] *= mult;
      if (cosine) normalize_backward_warp_row(dk[m], sm.k + jj * sm.ld, sm.knorm[jj], d);  // whole warp
      if (j < in.N) {
        float* dkrow = p.dk + b * p.dk_sb + h * p.dk_sh + j * p.dk_sn;
        float* dvrow = p.dv + b * p.dv_sb + h * p.dv_sh + j * p.dv_sn;
#pragma unroll
        for (int cc = 0; cc < kMaxColsPerLane; ++cc) {
          const int c = lane + 32 * cc;
          if (c < d) {
            dkrow[c * p.dk_sd] = dk[m][cc];
            dvrow[c * p.dv_sd] = dv[m][cc];
          }
        }
      }
    }
  }
}

// ---------------------------------------------------------------------------------------------
// 3. / 4. fixed-order reductions of the partials

__global__ void __launch_bounds__(kThreads) simt_dbias_reduce_kernel(const float* part, int64_t n_chunks,
                                                                      int64_t per_chunk, float* dbias) {
  for (int64_t e = blockIdx.x * int64_t(kThreads) + threadIdx.x; e < per_chunk; e += int64_t(gridDim.x) * kThreads) {
    double s = 0;
    for (int64_t c = 0; c < n_chunks; ++c) s += part[c * per_chunk + e];
    dbias[e] = float(s);
  }
}

__global__ void __launch_bounds__(kThreads) simt_dlogit_reduce_kernel(const double* part, const float* logit_scale,
                                                                       int64_t n_chunks, int64_t H,
                                                                       int64_t n_row_tiles, float* dlogit) {
  __shared__ double red[kThreads];
  for (int64_t h = blockIdx.x; h < H; h += gridDim.x) {
    const int64_t n = n_chunks * n_row_tiles;
    double s = 0;
    for (int64_t t = threadIdx.x; t < n; t += kThreads) {
      const int64_t chunk = t / n_row_tiles, rt = t - chunk * n_row_tiles;
      s += part[(chunk * H + h) * n_row_tiles + rt];
    }
    __syncthreads();
    red[threadIdx.x] = s;
    __syncthreads();
    for (int k = kThreads / 2; k > 0; k >>= 1) {
      if (threadIdx.x < k) red[threadIdx.x] += red[threadIdx.x + k];
      __syncthreads();
    }
    if (threadIdx.x == 0) {
      const float ls = logit_scale[h];
      const float alpha = expf(fminf(ls, kLogitScaleMaxF));
      dlogit[h] = ls <= kLogitScaleMaxF ? float(red[0] * double(alpha)) : 0.f;  // clamp(max=) backward
    }
  }
}

}  // namespace

cudaError_t simt_window_attn_bwd(const SimtBwdParams& p, cudaStream_t stream) {
  const SimtInputs& in = p.in;
  if (in.B <= 0 || in.H <= 0) return cudaSuccess;
  const bool cosine = in.logit_scale != nullptr;
  const int64_t n_row_tiles = (in.N + kBwdRows - 1) / kBwdRows;

  const size_t rows_smem = RowSmem::bytes(in.N, in.d, cosine);
  cudaError_t err = prepare_smem(simt_bwd_rows_kernel, rows_smem);
  if (err != cudaSuccess) return err;
  simt_bwd_rows_kernel<<<grid_for(p.n_chunks * in.H * n_row_tiles), kThreads, rows_smem, stream>>>(p);
  if ((err = cudaGetLastError()) != cudaSuccess) return err;

  const size_t cols_smem = ColSmem::bytes(in.d);
  err = prepare_smem(simt_bwd_cols_kernel, cols_smem);
  if (err != cudaSuccess) return err;
  const int64_t n_key_tiles = (in.N + kBwdColKeys - 1) / kBwdColKeys;
  simt_bwd_cols_kernel<<<grid_for(in.B * in.H * n_key_tiles), kThreads, cols_smem, stream>>>(p);
  if ((err = cudaGetLastError()) != cudaSuccess) return err;

  if (p.dbias_part != nullptr && p.dbias != nullptr) {
    const int64_t per_chunk = in.H * in.N * in.N;
    simt_dbias_reduce_kernel<<<grid_for((per_chunk + kThreads - 1) / kThreads), kThreads, 0, stream>>>(
        p.dbias_part, p.n_chunks, per_chunk, p.dbias);
    if ((err = cudaGetLastError()) != cudaSuccess) return err;
  }
  if (cosine && p.dalpha_part != nullptr && p.dlogit != nullptr) {
    simt_dlogit_reduce_kernel<<<grid_for(in.H), kThreads, 0, stream>>>(p.dalpha_part, in.logit_scale, p.n_chunks,
                                                                       in.H, n_row_tiles, p.dlogit);
    if ((err = cudaGetLastError()) != cudaSuccess) return err;
  }
  return cudaSuccess;
}

}  // namespace simt
}  // namespace flash_window_attn
