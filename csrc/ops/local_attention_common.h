// Shared ATen-side pieces of the local (sliding-window / block-sliding-window) attention ops:
// argument checks (one implementation for every backend, so CPU and CUDA raise the same errors),
// output allocation, and the mask arithmetic. The ops are declared in local_attention.cpp:
//
//   local_attention_fwd(Tensor q, Tensor k, Tensor v, int left, int right, int block, float scale)
//       -> (Tensor out, Tensor lse)
//   local_attention_bwd(Tensor dout, Tensor q, Tensor k, Tensor v, Tensor out, Tensor lse,
//       int left, int right, int block, float scale, Tensor? out_lo=None) -> (Tensor dq, Tensor dk, Tensor dv)
//   local_attention_fwd_res(Tensor q, Tensor k, Tensor v, int left, int right, int block, float scale)
//       -> (Tensor out, Tensor lse, Tensor out_lo)   (the forward autograd records; out_lo: see below)
//
// q: (B, H, L, d); k, v: (B, Hkv, L, d), H % Hkv == 0, query head h reads kv head h / (H / Hkv).
// Query i may attend key j iff, with bi = i / block and bj = j / block,
//   (left < 0 || bi - bj <= left) && (right < 0 || bj - bi <= right).
// left, right >= -1 (-1 = unbounded), block >= 1; key j = i is always allowed (no empty row).
// out: (B, H, L, d) contiguous, q's dtype; lse: (B, H, L) fp32 contiguous, natural log of
// sum_j exp(scale * q_i . k_j) over the allowed keys. dq (B, H, L, d) contiguous, dk / dv contiguous
// (B, Hkv, L, d), summed over the H / Hkv query heads of each group in a fixed order.
#pragma once

#include <ATen/ATen.h>

#include <algorithm>
#include <cstdint>
#include <optional>
#include <tuple>

namespace flash_window_attn {

struct LocalAttnSizes { int64_t B, H, Hkv, L, d; };

// Both raise ValueError (TORCH_CHECK_VALUE) for ranks, shapes, sizes, strides, devices, left /
// right / block / scale, and TypeError (TORCH_CHECK_TYPE) for dtypes, naming the argument with the
// expected and the actual value.
LocalAttnSizes check_local_fwd_args(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
    int64_t left, int64_t right, int64_t block, double scale);
LocalAttnSizes check_local_bwd_args(const at::Tensor& dout, const at::Tensor& q, const at::Tensor& k,
    const at::Tensor& v, const at::Tensor& out, const at::Tensor& lse, int64_t left, int64_t right,
    int64_t block, double scale);

at::Tensor make_local_out(const at::Tensor& q);  // empty contiguous (B, H, L, d), q's dtype and device
// local_attention_fwd_res's out_lo: an empty contiguous (B, H, L, d) bfloat16 tensor on q's device
// where local_out_lo_applies (fp16 / bf16 on CUDA), else an empty (0,) one.
bool local_out_lo_applies(const at::Tensor& q);
at::Tensor make_local_out_lo(const at::Tensor& q);
// Whether the backward of local_attention_fwd on these q, k may run its residual-D form, so that
// the autograd forward has local_attention_fwd_res compute out_lo for it: out_lo applies and both
// of the CUDA backward's sides are warp-specialised on this grid (local_attention_cuda.cpp; false
// in a CPU-only build). Elsewhere the forward skips writing out_lo (the backward could not read it:
// its exact-D form runs) and saves no out_lo for the backward.
bool local_out_lo_wanted(const at::Tensor& q, const at::Tensor& k);
// True where out_lo is given (not None, not empty); raises ValueError / TypeError unless it then has
// q's shape, dtype bfloat16, q's device and contiguous strides.
bool check_local_out_lo(const std::optional<at::Tensor>& out_lo, const at::Tensor& q);
at::Tensor make_local_lse(const at::Tensor& q);  // empty contiguous (B, H, L) fp32, q's device

constexpr int64_t kLocalMinHeadDim = 8, kLocalMaxHeadDim = 256;

// The contiguous range of keys [key_lo, key_hi] (inclusive) that query row i may attend, for a
// sequence of length L. Blocks bi - left ... bi + right, clipped to [0, L - 1]; always contains i.
inline int64_t local_key_lo(int64_t i, int64_t left, int64_t block) {
  if (left < 0) return 0;
  const int64_t bi = i / block;
  return std::max<int64_t>(bi - left, 0) * block;
}
inline int64_t local_key_hi(int64_t i, int64_t right, int64_t block, int64_t L) {
  if (right < 0) return L - 1;
  const int64_t bi = i / block;
  // (bi + right + 1) * block - 1 can overflow for huge right: clip the block index first.
  const int64_t last_block = (L - 1) / block;
  const int64_t bj = std::min<int64_t>(bi + std::min<int64_t>(right, last_block), last_block);
  return std::min<int64_t>((bj + 1) * block - 1, L - 1);
}

// CPU implementations registered in local_attention.cpp (they run check_local_*_args themselves).
std::tuple<at::Tensor, at::Tensor> local_attention_fwd_cpu(const at::Tensor& q, const at::Tensor& k,
    const at::Tensor& v, int64_t left, int64_t right, int64_t block, double scale);
std::tuple<at::Tensor, at::Tensor, at::Tensor> local_attention_bwd_cpu(const at::Tensor& dout,
    const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, const at::Tensor& out,
    const at::Tensor& lse, int64_t left, int64_t right, int64_t block, double scale,
    const std::optional<at::Tensor>& out_lo);

}  // namespace flash_window_attn
