// Shared ATen-side pieces of the window_attention ops: argument checks (one implementation used
// by every backend, so CPU and CUDA raise the same errors), output allocation in the contract's
// layouts, and the finishing of the dbias / dlogit_scale reductions. See csrc/README.md.
#pragma once

#include <ATen/ATen.h>

#include <cstdint>
#include <optional>
#include <tuple>

namespace flash_window_attn {

// nW = 1 when no mask; inv_norms: qk_inv_norm holds the norms (forward: return_inv_norms asks for
// them, V2; backward: the caller gave them)
struct WindowAttnSizes { int64_t B, H, N, d, nW; bool has_bias, has_mask, cosine; bool inv_norms = false; };

WindowAttnSizes check_fwd_args(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
    const std::optional<at::Tensor>& bias, const std::optional<at::Tensor>& mask,
    const std::optional<at::Tensor>& logit_scale, double scale, bool return_inv_norms);
WindowAttnSizes check_bwd_args(const at::Tensor& dout, const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
    const at::Tensor& out, const at::Tensor& lse, const std::optional<at::Tensor>& bias,
    const std::optional<at::Tensor>& mask, const std::optional<at::Tensor>& logit_scale, double scale,
    const std::optional<at::Tensor>& qk_inv_norm);   // s.inv_norms: given (None or empty: not)
at::Tensor bias_as_hnn(const at::Tensor& bias, int64_t H, int64_t N);      // view (1,H,N,N)->(H,N,N)
at::Tensor logit_scale_as_h(const at::Tensor& logit_scale, int64_t H);      // view any H-element shape -> (H,)
at::Tensor make_out(const at::Tensor& q);   // empty (B_,N,H,d) then transpose(1,2): shape (B_,H,N,d), q's dtype
at::Tensor make_lse(const at::Tensor& q);   // empty (B_,H,N) fp32
// The forward ops' last result, qk_inv_norm: with return_inv_norms=True and V2 (cosine) the inverse
// norms 1 / max(||x||, 1e-12) of q's rows ([0]) and k's rows ([1]) that the forward normalised with,
// (2, B_, H, N) fp32; otherwise an empty (0,) tensor. The backward takes it back (optional) so that
// it need not read q and k again for them.
at::Tensor make_qk_inv_norm(const at::Tensor& q, const WindowAttnSizes& s);   // empty, that shape
at::Tensor qk_inv_norm_aten(const at::Tensor& q, const at::Tensor& k, const WindowAttnSizes& s);  // computed
// dbias / dlogit_scale finishing: fp32 accumulators -> caller-visible shape and dtype
at::Tensor finish_dbias(const at::Tensor& dbias_hnn_fp32, const std::optional<at::Tensor>& bias, const at::Tensor& q);
at::Tensor finish_dlogit(const at::Tensor& dlogit_h_fp32, const std::optional<at::Tensor>& logit_scale, const at::Tensor& q);
constexpr int64_t kMaxN = 1024, kMinHeadDim = 16, kMaxHeadDim = 128;

// The gradient buffers the backward implementations write dq, dk, dv into: fresh tensors
// (empty_like, for the unpacked ops) or the three thirds of one (B_, N, 3 * H * d) dqkv tensor (the
// packed op, whose gradient then reaches the qkv projection without a stack or a copy).
struct QkvGrads { at::Tensor dq, dk, dv; };
QkvGrads fresh_qkv_grads(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v);
// Packed qkv: (B_, N, 3 * num_heads * head_dim) with unit last stride, as a qkv projection returns
// it -> its q, k, v views (B_, H, N, d) (no copy). Checks the packing (names "qkv" / "num_heads").
struct QkvViews { at::Tensor q, k, v; };
QkvViews unpack_qkv(const at::Tensor& qkv, int64_t num_heads, const char* op);
// A contiguous tensor shaped like qkv (its gradient) and, in *grads, its q, k, v views.
at::Tensor make_dqkv(const at::Tensor& qkv, int64_t num_heads, QkvGrads* grads);

// float32(ln 100): the clamp bound of logit_scale (V2). Values <= it get a gradient, values above
// it are clamped (torch.clamp(max=...) semantics).
constexpr float kLogitScaleMax = 4.60517018598809136804f;

// CPU implementations registered in window_attention.cpp (they run check_*_args themselves).
std::tuple<at::Tensor, at::Tensor, at::Tensor> window_attention_fwd_cpu(const at::Tensor& q, const at::Tensor& k,
    const at::Tensor& v, const std::optional<at::Tensor>& bias, const std::optional<at::Tensor>& mask,
    const std::optional<at::Tensor>& logit_scale, double scale, bool return_inv_norms);
std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor, at::Tensor> window_attention_bwd_cpu(
    const at::Tensor& dout, const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
    const at::Tensor& out, const at::Tensor& lse, const std::optional<at::Tensor>& bias,
    const std::optional<at::Tensor>& mask, const std::optional<at::Tensor>& logit_scale, double scale,
    const std::optional<at::Tensor>& qk_inv_norm);

// Attention dropout (the *_dropout_* ops): dropout_p in [0, 1]; rng_state is the int64 tensor
// (seed, offset) the forward returned ((0,) when dropout_p == 0), on q's device.
void check_dropout_p(double dropout_p);
void check_rng_state(const at::Tensor& rng_state, double dropout_p, const at::Tensor& q);

std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor> window_attention_dropout_fwd_cpu(const at::Tensor& q,
    const at::Tensor& k, const at::Tensor& v, const std::optional<at::Tensor>& bias,
    const std::optional<at::Tensor>& mask, const std::optional<at::Tensor>& logit_scale, double scale,
    double dropout_p, bool return_inv_norms);
std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor, at::Tensor> window_attention_dropout_bwd_cpu(
    const at::Tensor& dout, const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
    const at::Tensor& out, const at::Tensor& lse, const std::optional<at::Tensor>& bias,
    const std::optional<at::Tensor>& mask, const std::optional<at::Tensor>& logit_scale, double scale,
    double dropout_p, const at::Tensor& rng_state, const std::optional<at::Tensor>& qk_inv_norm);
// The dropout backward writing dq, dk, dv into `grads` (returned as the first three results).
std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor, at::Tensor> window_attention_dropout_bwd_cpu_into(
    const at::Tensor& dout, const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
    const at::Tensor& out, const at::Tensor& lse, const std::optional<at::Tensor>& bias,
    const std::optional<at::Tensor>& mask, const std::optional<at::Tensor>& logit_scale, double scale,
    double dropout_p, const at::Tensor& rng_state, const std::optional<at::Tensor>& qk_inv_norm,
    const QkvGrads& grads);
// The (B, H, N, N) bool keep mask of a dropout forward with this rng_state (CPU tensor): for tests.
at::Tensor dropout_keep_mask_cpu(const at::Tensor& rng_state, int64_t B, int64_t H, int64_t N, double dropout_p);

#ifndef FWA_CPU_ONLY
// CUDA path for float32 inputs (SIMT fp32 FMA kernels in csrc/kernels/simt/, no tf32). The caller
// has run check_*_args; `s` is what it returned.
std::tuple<at::Tensor, at::Tensor, at::Tensor> window_attention_fwd_cuda_fp32(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
    const std::optional<at::Tensor>& bias, const std::optional<at::Tensor>& mask, const std::optional<at::Tensor>& logit_scale, double scale, const WindowAttnSizes& s);
std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor, at::Tensor> window_attention_bwd_cuda_fp32(const at::Tensor& dout,
    const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, const at::Tensor& out, const at::Tensor& lse,
    const std::optional<at::Tensor>& bias, const std::optional<at::Tensor>& mask, const std::optional<at::Tensor>& logit_scale, double scale, const WindowAttnSizes& s,
    const QkvGrads& grads);
// CUDA ops used by the packed-qkv ops (window_attention_cuda.cpp).
std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor> window_attention_dropout_fwd_cuda(const at::Tensor& q,
    const at::Tensor& k, const at::Tensor& v, const std::optional<at::Tensor>& bias,
    const std::optional<at::Tensor>& mask, const std::optional<at::Tensor>& logit_scale, double scale,
    double dropout_p, bool return_inv_norms);
std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor, at::Tensor> window_attention_dropout_bwd_cuda_into(
    const at::Tensor& dout, const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
    const at::Tensor& out, const at::Tensor& lse, const std::optional<at::Tensor>& bias,
    const std::optional<at::Tensor>& mask, const std::optional<at::Tensor>& logit_scale, double scale,
    double dropout_p, const at::Tensor& rng_state, const std::optional<at::Tensor>& qk_inv_norm,
    const QkvGrads& grads);
#endif  // FWA_CPU_ONLY

}  // namespace flash_window_attn
