// The packed-qkv window_attention ops: q, k, v come as one (B_, N, 3 * H * d) tensor, the output of
// a qkv projection (timm's Swin modules), and the backward returns the gradient of that tensor in
// the same layout:
//
//   window_attention_qkvpacked_fwd(qkv, num_heads, bias, mask, logit_scale, scale, dropout_p,
//                                  return_inv_norms=False)
//       -> (out, lse, rng_state, qk_inv_norm)          as window_attention_dropout_fwd
//   window_attention_qkvpacked_bwd(dout, qkv, out, lse, bias, mask, logit_scale, scale, num_heads,
//                                  dropout_p, rng_state, qk_inv_norm=None)
//       -> (dqkv, dbias, dlogit_scale)                dqkv: contiguous, qkv's shape and dtype
//
// Same math, kernels and checks as the unpacked dropout ops, run on q, k, v views of qkv
// (qkv.unflatten(2, (3, H, d)).permute(2, 0, 3, 1, 4)); the backward writes dq, dk, dv straight
// into the thirds of dqkv. With the unpacked op, autograd had to stack dq, dk, dv (UnbindBackward)
// and copy the stack into the projection's layout: two extra passes over 3 * B_ * N * H * d
// elements per layer, and several extra ops on the host.
#include <torch/library.h>

#include <array>

#include "ops/window_attention_common.h"

namespace flash_window_attn {

QkvGrads fresh_qkv_grads(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v) {
  return {at::empty_like(q), at::empty_like(k), at::empty_like(v)};
}

QkvViews unpack_qkv(const at::Tensor& qkv, int64_t num_heads, const char* op) {
  TORCH_CHECK_VALUE(qkv.dim() == 3, op, "qkv must be a 3-D tensor of shape (B_, N, 3 * num_heads * head_dim), "
                    "but got ", qkv.dim(), "-D shape ", qkv.sizes());
  TORCH_CHECK_VALUE(num_heads >= 1, op, "num_heads must be >= 1, but got num_heads = ", num_heads);
  const int64_t c3 = qkv.size(2);
  TORCH_CHECK_VALUE(c3 % (3 * num_heads) == 0, op, "qkv.size(2) = ", c3, " must be 3 * num_heads * head_dim, "
                    "but it is not divisible by 3 * num_heads = ", 3 * num_heads, " (qkv shape ", qkv.sizes(), ")");
  TORCH_CHECK_VALUE(qkv.stride(2) == 1 || c3 <= 1, op, "qkv must have a unit stride in its last dimension "
                    "(stride(-1) == 1), but has stride(-1) = ", qkv.stride(2), " (strides ", qkv.strides(), ")");
  // qkv.unflatten(2, (3, H, d)).permute(2, 0, 3, 1, 4)[i] for i = 0, 1, 2, as one as_strided each
  // (the unflatten / permute / select chain was ~10 dispatcher calls per use, twice per backward)
  const int64_t d = c3 / (3 * num_heads), s2 = qkv.stride(2);
  const std::array<int64_t, 4> sizes{qkv.size(0), num_heads, qkv.size(1), d};
  const std::array<int64_t, 4> strides{qkv.stride(0), d * s2, qkv.stride(1), s2};
  auto third = [&](int64_t i) { return qkv.as_strided(sizes, strides, qkv.storage_offset() + i * num_heads * d * s2); };
  return {third(0), third(1), third(2)};
}

at::Tensor make_dqkv(const at::Tensor& qkv, int64_t num_heads, QkvGrads* grads) {
  at::Tensor dqkv = at::empty(qkv.sizes(), qkv.options().memory_format(at::MemoryFormat::Contiguous));
  const QkvViews g = unpack_qkv(dqkv, num_heads, "window_attention_qkvpacked: ");
  *grads = {g.q, g.k, g.v};
  return dqkv;
}

namespace {

constexpr const char* kPackedOp = "window_attention_qkvpacked: ";

using PackedFwd = std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor>;
using DropoutFwdFn = PackedFwd (*)(const at::Tensor&, const at::Tensor&, const at::Tensor&,
                                   const std::optional<at::Tensor>&, const std::optional<at::Tensor>&,
                                   const std::optional<at::Tensor>&, double, double, bool);
using Grads5 = std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor, at::Tensor>;
using DropoutBwdIntoFn = Grads5 (*)(const at::Tensor&, const at::Tensor&, const at::Tensor&, const at::Tensor&,
                                    const at::Tensor&, const at::Tensor&, const std::optional<at::Tensor>&,
                                    const std::optional<at::Tensor>&, const std::optional<at::Tensor>&, double,
                                    double, const at::Tensor&, const std::optional<at::Tensor>&,
                                    const QkvGrads&);

PackedFwd packed_fwd(DropoutFwdFn fwd, const at::Tensor& qkv, int64_t num_heads,
                     const std::optional<at::Tensor>& bias, const std::optional<at::Tensor>& mask,
                     const std::optional<at::Tensor>& logit_scale, double scale, double dropout_p,
                     bool return_inv_norms) {
  const QkvViews x = unpack_qkv(qkv, num_heads, kPackedOp);
  return fwd(x.q, x.k, x.v, bias, mask, logit_scale, scale, dropout_p, return_inv_norms);
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> packed_bwd(
    DropoutBwdIntoFn bwd, const at::Tensor& dout, const at::Tensor& qkv, const at::Tensor& out,
    const at::Tensor& lse, const std::optional<at::Tensor>& bias, const std::optional<at::Tensor>& mask,
    const std::optional<at::Tensor>& logit_scale, double scale, int64_t num_heads, double dropout_p,
    const at::Tensor& rng_state, const std::optional<at::Tensor>& qk_inv_norm) {
  const QkvViews x = unpack_qkv(qkv, num_heads, kPackedOp);
  QkvGrads g;
  at::Tensor dqkv = make_dqkv(qkv, num_heads, &g);
  auto r = bwd(dout, x.q, x.k, x.v, out, lse, bias, mask, logit_scale, scale, dropout_p, rng_state, qk_inv_norm, g);
  return {dqkv, std::get<3>(r), std::get<4>(r)};
}

PackedFwd qkvpacked_fwd_cpu(const at::Tensor& qkv, int64_t num_heads, const std::optional<at::Tensor>& bias,
                            const std::optional<at::Tensor>& mask, const std::optional<at::Tensor>& logit_scale,
                            double scale, double dropout_p, bool return_inv_norms) {
  return packed_fwd(&window_attention_dropout_fwd_cpu, qkv, num_heads, bias, mask, logit_scale, scale, dropout_p,
                    return_inv_norms);
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> qkvpacked_bwd_cpu(
    const at::Tensor& dout, const at::Tensor& qkv, const at::Tensor& out, const at::Tensor& lse,
    const std::optional<at::Tensor>& bias, const std::optional<at::Tensor>& mask,
    const std::optional<at::Tensor>& logit_scale, double scale, int64_t num_heads, double dropout_p,
    const at::Tensor& rng_state, const std::optional<at::Tensor>& qk_inv_norm) {
  return packed_bwd(&window_attention_dropout_bwd_cpu_into, dout, qkv, out, lse, bias, mask, logit_scale, scale,
                    num_heads, dropout_p, rng_state, qk_inv_norm);
}

#ifndef FWA_CPU_ONLY
PackedFwd qkvpacked_fwd_cuda(const at::Tensor& qkv, int64_t num_heads, const std::optional<at::Tensor>& bias,
                             const std::optional<at::Tensor>& mask, const std::optional<at::Tensor>& logit_scale,
                             double scale, double dropout_p, bool return_inv_norms) {
  return packed_fwd(&window_attention_dropout_fwd_cuda, qkv, num_heads, bias, mask, logit_scale, scale, dropout_p,
                    return_inv_norms);
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> qkvpacked_bwd_cuda(
    const at::Tensor& dout, const at::Tensor& qkv, const at::Tensor& out, const at::Tensor& lse,
    const std::optional<at::Tensor>& bias, const std::optional<at::Tensor>& mask,
    const std::optional<at::Tensor>& logit_scale, double scale, int64_t num_heads, double dropout_p,
    const at::Tensor& rng_state, const std::optional<at::Tensor>& qk_inv_norm) {
  return packed_bwd(&window_attention_dropout_bwd_cuda_into, dout, qkv, out, lse, bias, mask, logit_scale, scale,
                    num_heads, dropout_p, rng_state, qk_inv_norm);
}
#endif  // FWA_CPU_ONLY

}  // namespace

TORCH_LIBRARY_FRAGMENT(flash_window_attn, m) {
  m.def("window_attention_qkvpacked_fwd(Tensor qkv, int num_heads, Tensor? bias, Tensor? mask, "
        "Tensor? logit_scale, float scale, float dropout_p, bool return_inv_norms=False) -> "
        "(Tensor, Tensor, Tensor, Tensor)");
  m.def("window_attention_qkvpacked_bwd(Tensor dout, Tensor qkv, Tensor out, Tensor lse, Tensor? bias, "
        "Tensor? mask, Tensor? logit_scale, float scale, int num_heads, float dropout_p, Tensor rng_state, "
        "Tensor? qk_inv_norm=None) -> (Tensor, Tensor, Tensor)");
}

TORCH_LIBRARY_IMPL(flash_window_attn, CPU, m) {
  m.impl("window_attention_qkvpacked_fwd", &qkvpacked_fwd_cpu);
  m.impl("window_attention_qkvpacked_bwd", &qkvpacked_bwd_cpu);
}

#ifndef FWA_CPU_ONLY
TORCH_LIBRARY_IMPL(flash_window_attn, CUDA, m) {
  m.impl("window_attention_qkvpacked_fwd", &qkvpacked_fwd_cuda);
  m.impl("window_attention_qkvpacked_bwd", &qkvpacked_bwd_cuda);
}
#endif  // FWA_CPU_ONLY

}  // namespace flash_window_attn
