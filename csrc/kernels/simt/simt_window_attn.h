// SIMT (plain fp32 FMA, no tensor cores, no tf32) CUDA kernels of window attention for float32
// inputs: the full-precision CUDA path. Same math as the CPU implementation
// (csrc/ops/window_attention_cpu.cpp) and the contract in csrc/README.md.
//
// Torch-free: raw pointers, int64 element strides, sizes. The ATen glue that fills these structs is
// csrc/ops/window_attention_cuda_fp32.cpp. Launchers return the first CUDA error (cudaSuccess if
// none) so that the glue can raise it with C10_CUDA_CHECK.
//
// Limits: 1 <= N <= 1024, 16 <= d <= 128 with d % 8 == 0 (any B_, H); q/k/v/dout/out must have
// unit stride in the head dim; bias (H,N,N), mask (nW,N,N), logit_scale (H,) contiguous fp32.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace flash_window_attn {
namespace simt {

constexpr int kThreads = 128;       // every kernel: 4 warps
constexpr int kFwdRows = 16;        // query rows per forward block
constexpr int kBwdRows = 8;         // query rows per block of the backward row kernel (dq, dbias, dalpha)
constexpr int kBwdColKeys = 16;     // keys per block of the backward column kernel (dk, dv)
constexpr int kKeyTile = 32;        // keys staged in shared memory at a time
constexpr float kLogitScaleMaxF = 4.60517018598809136804f;  // float32(ln 100)
constexpr float kNormEpsF = 1e-12f;  // F.normalize's eps

// The (B_, H, N, d) inputs and the optional terms of the logits.
struct SimtInputs {
  const float* q;
  const float* k;
  const float* v;
  int64_t q_sb, q_sh, q_sn;  // element strides of batch, head, row; the head-dim stride is 1
  int64_t k_sb, k_sh, k_sn;
  int64_t v_sb, v_sh, v_sn;
  const float* bias;         // (H, N, N) contiguous, or nullptr
  const float* mask;         // (nW, N, N) contiguous, or nullptr
  const float* logit_scale;  // (H,) contiguous, or nullptr (V1: S = scale * q k^T)
  float scale;               // V1 only
  int64_t B, H, N, d, nW;    // nW = 1 when there is no mask
};

struct SimtFwdParams {
  SimtInputs in;
  float* out;  // (B_, H, N, d), strides below, unit head-dim stride
  int64_t o_sb, o_sh, o_sn;
  float* lse;  // (B_, H, N) contiguous
};

struct SimtBwdParams {
  SimtInputs in;
  const float* dout;
  int64_t do_sb, do_sh, do_sn;  // unit head-dim stride
  float* dq;                    // (B_, H, N, d), any strides
  int64_t dq_sb, dq_sh, dq_sn, dq_sd;
  float* dk;
  int64_t dk_sb, dk_sh, dk_sn, dk_sd;
  float* dv;
  int64_t dv_sb, dv_sh, dv_sn, dv_sd;
  // Workspaces (see simt_bwd_workspace below for their sizes).
  float* row_max;       // (B_, H, N): row max of S (-inf for a fully masked row)
  float* row_sum;       // (B_, H, N): sum_j exp(S - max)
  float* row_D;         // (B_, H, N): D_i = sum_j P_ij dP_ij
  float* dbias_part;    // (n_chunks, H, N, N) if bias, else nullptr
  double* dalpha_part;  // (n_chunks, H, n_row_tiles) if logit_scale, else nullptr
  int64_t n_chunks, windows_per_chunk;
  // Outputs of the final reduction (fp32): dbias (H, N, N) and dlogit_scale (H,), or nullptr.
  float* dbias;
  float* dlogit;
};

// Windows are split into fixed chunks (dependent on sizes only, so results are bitwise
// reproducible): one dbias partial per (chunk, head), summed in chunk order by a final kernel.
struct SimtBwdWorkspace {
  int64_t n_chunks, windows_per_chunk, n_row_tiles;
  int64_t dbias_part_elems;   // floats
  int64_t dalpha_part_elems;  // doubles
};

inline SimtBwdWorkspace simt_bwd_workspace(int64_t B, int64_t H, int64_t N, bool has_bias, bool cosine) {
  constexpr int64_t kDbiasPartBudget = int64_t(1) << 25;  // floats (128 MiB)
  SimtBwdWorkspace w{};
  w.n_row_tiles = (N + kBwdRows - 1) / kBwdRows;
  int64_t n_chunks = B > 0 ? B : 1;
  if (has_bias) {
    const int64_t per_chunk = H * N * N > 0 ? H * N * N : 1;
    int64_t cap = kDbiasPartBudget / per_chunk;
    if (cap < 1) cap = 1;
    if (n_chunks > cap) n_chunks = cap;
  }
  const int64_t Bpos = B > 0 ? B : 1;
  w.windows_per_chunk = (Bpos + n_chunks - 1) / n_chunks;
  w.n_chunks = (Bpos + w.windows_per_chunk - 1) / w.windows_per_chunk;
  w.dbias_part_elems = has_bias ? w.n_chunks * H * N * N : 0;
  w.dalpha_part_elems = cosine ? w.n_chunks * H * w.n_row_tiles : 0;
  return w;
}

// Forward: out, lse. Requires B_ >= 1.
cudaError_t simt_window_attn_fwd(const SimtFwdParams& p, cudaStream_t stream);
// Backward: dq, dk, dv, and (if requested) dbias, dlogit. Requires B_ >= 1.
cudaError_t simt_window_attn_bwd(const SimtBwdParams& p, cudaStream_t stream);

}  // namespace simt
}  // namespace flash_window_attn
