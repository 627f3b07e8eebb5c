// SIMT fp32 forward of window attention (the float32 CUDA path; no tensor cores, no tf32).
//
// For window b, head h, query rows i, keys j < N:
//   S_ij = mult * <q_i, k_j> + bias[h,i,j] + mask[b % nW, i, j],   mult = scale (V1) or
//          exp(min(logit_scale[h], float32(ln 100))) with q, k replaced by F.normalize(q), F.normalize(k) (V2)
//   m_i = max_j S_ij, l_i = sum_j exp(S_ij - m_i), out_i = sum_j exp(S_ij - m_i) v_j / l_i,
//   lse_i = m_i + log(l_i); a row of -inf logits gives out_i = 0, lse_i = +inf.
// Layouts: q, k, v, out (B_, H, N, d) with unit head-dim stride and int64 strides otherwise;
// lse (B_, H, N) contiguous; bias (H, N, N), mask (nW, N, N), logit_scale (H,) contiguous fp32.
// Work: one block of 128 threads per (window, head, tile of kFwdRows = 16 query rows), grid-stride
// over all tiles (grid.x <= 2^20, y = z = 1). The block keeps its 16 rows of S (16 x N floats) in
// shared memory and streams K and V through a 32-key tile: at most 90 KiB of shared memory
// (N = 1024, d = 128). Limits: N <= 1024, d <= 128, d % 8 == 0.
#include "kernels/simt/simt_common.cuh"

#include <math_constants.h>

namespace flash_window_attn {
namespace simt {
namespace {

constexpr int kRowsPerWarp = kFwdRows / kWarps;  // 4

struct FwdSmem {
  int Npad, ldkv;
  float* q;     // kFwdRows x d (normalised for V2)
  float* kv;    // kKeyTile x (d + 1): K tile, then V tile
  float* s;     // kFwdRows x Npad: logits, then exp(S - m)
  float* lsum;  // kFwdRows: l_i (0 for a fully masked row)

  __host__ __device__ static size_t floats(int64_t N, int64_t d) {
    const int64_t Npad = (N + kKeyTile - 1) / kKeyTile * kKeyTile;
    return static_cast<size_t>(kFwdRows * d + kKeyTile * (d + 1) + kFwdRows * Npad + kFwdRows);
  }
  __device__ FwdSmem(float* base, int N, int d) {
    Npad = (N + kKeyTile - 1) / kKeyTile * kKeyTile;
    ldkv = d + 1;  // odd: lanes reading different rows hit different banks
    q = base;
    kv = q + kFwdRows * d;
    s = kv + kKeyTile * ldkv;
    lsum = s + kFwdRows * Npad;
  }
};

__global__ void __launch_bounds__(kThreads) simt_fwd_kernel(const SimtFwdParams p) {
  extern __shared__ float smem_raw[];
  const SimtInputs& in = p.in;
  const int N = static_cast<int>(in.N), d = static_cast<int>(in.d);
  FwdSmem sm(smem_raw, N, d);
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const bool cosine = in.logit_scale != nullptr;
  const int64_t n_row_tiles = (in.N + kFwdRows - 1) / kFwdRows;
  const int64_t n_tiles = in.B * in.H * n_row_tiles;

  for (int64_t tile = blockIdx.x; tile < n_tiles; tile += gridDim.x) {
    const int64_t bh = tile / n_row_tiles;
    const int64_t r0 = (tile - bh * n_row_tiles) * kFwdRows;
    const int64_t b = bh / in.H, h = bh - b * in.H, w = b % in.nW;
    const float* qg = in.q + b * in.q_sb + h * in.q_sh;
    const float* kg = in.k + b * in.k_sb + h * in.k_sh;
    const float* vg = in.v + b * in.v_sb + h * in.v_sh;
    const float mult = logit_multiplier(in, h);

    __syncthreads();  // the previous tile's readers are done with shared memory
    load_rows(sm.q, d, qg, in.q_sn, r0, kFwdRows, in.N, d);
    __syncthreads();
    if (cosine) {
      normalize_rows(sm.q, d, kFwdRows, d, nullptr);
      __syncthreads();
    }

    // S = mult * Q K^T + bias + mask, one 32-key tile at a time. Thread: key lane, rows warp + 4m.
    for_each_key_tile(sm.kv, sm.ldkv, kg, in.k_sn, N, in.N, d, cosine, [&](int j0) {
      tile_logits<kRowsPerWarp>(sm.q, sm.kv, sm.ldkv, j0, r0, N, mult, in, h, w, d,
                                [&](int r, int j, float, float sv) { sm.s[r * sm.Npad + j] = sv; });
    });

    // Row softmax statistics: one warp per row.
    for (int r = warp; r < kFwdRows; r += kWarps) {
      const int64_t i = r0 + r;
      if (i >= in.N) {  // padding row: keep it finite for the P V loop below
        for (int j = lane; j < sm.Npad; j += 32) sm.s[r * sm.Npad + j] = 0.f;
        if (lane == 0) sm.lsum[r] = 0.f;
        continue;
      }
      float* srow = sm.s + r * sm.Npad;
      float mx = -CUDART_INF_F;
      for (int j = lane; j < N; j += 32) mx = max_nan(mx, srow[j]);
      mx = warp_max(mx);
      double l = 0;
      if (mx == -CUDART_INF_F) {
        for (int j = lane; j < N; j += 32) srow[j] = 0.f;
      } else {
        for (int j = lane; j < N; j += 32) {
          const float e = expf(srow[j] - mx);
          srow[j] = e;
          l += e;
        }
      }
      l = warp_sum(l);
      if (lane == 0) {
        sm.lsum[r] = float(l);
        p.lse[(b * in.H + h) * in.N + i] = mx == -CUDART_INF_F ? CUDART_INF_F : float(double(mx) + log(l));
      }
    }
    __syncthreads();

    // out = P V / l. Thread: rows warp + 4m, columns lane + 32cc.
    float acc[kRowsPerWarp][kMaxColsPerLane];
    rows_times_key_tiles(acc, sm.s, sm.Npad, sm.kv, sm.ldkv, vg, in.v_sn, N, in.N, d, false);
#pragma unroll
    for (int m = 0; m < kRowsPerWarp; ++m) {
      const int r = warp + kWarps * m;
      const int64_t i = r0 + r;
      if (i >= in.N) continue;
      const float l = sm.lsum[r];
      float* orow = p.out + b * p.o_sb + h * p.o_sh + i * p.o_sn;
#pragma unroll
      for (int cc = 0; cc < kMaxColsPerLane; ++cc) {
        const int c = lane + 32 * cc;
        if (c < d) orow[c] = l != 0.f ? acc[m][cc] / l : 0.f;  // NaN l propagates
      }
    }
  }
}

}  // namespace

cudaError_t simt_window_attn_fwd(const SimtFwdParams& p, cudaStream_t stream) {
  if (p.in.B <= 0 || p.in.H <= 0) return cudaSuccess;
  const size_t smem = FwdSmem::floats(p.in.N, p.in.d) * sizeof(float);
  cudaError_t err = prepare_smem(simt_fwd_kernel, smem);
  if (err != cudaSuccess) return err;
  const int64_t tiles = p.in.B * p.in.H * ((p.in.N + kFwdRows - 1) / kFwdRows);
  simt_fwd_kernel<<<grid_for(tiles), kThreads, smem, stream>>>(p);
  return cudaGetLastError();
}

}  // namespace simt
}  // namespace flash_window_attn
