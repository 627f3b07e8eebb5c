// ATen glue of the float32 CUDA path: maps tensors to the torch-free SIMT kernels in
// csrc/kernels/simt/ (full fp32 FMA arithmetic, no tensor cores / tf32). Called by the CUDA
// registration (window_attention_cuda.cpp) for float32 inputs after check_*_args.
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>

#include "kernels/simt/simt_window_attn.h"
#include "ops/window_attention_common.h"

namespace flash_window_attn {
namespace {

void check_fp32_cuda(const at::Tensor& q, const char* fn) {
  TORCH_CHECK(q.is_cuda() && q.scalar_type() == at::kFloat, fn, ": expects float32 CUDA tensors, got ",
              q.scalar_type(), " on ", q.device());
}

// bias / mask / logit_scale as contiguous fp32 on the device (a copy only if needed).
struct AuxFp32 {
  at::Tensor bias, mask, ls;
};

AuxFp32 aux_fp32(const std::optional<at::Tensor>& bias, const std::optional<at::Tensor>& mask,
                 const std::optional<at::Tensor>& logit_scale, const WindowAttnSizes& s) {
  AuxFp32 a;
  if (bias.has_value()) a.bias = bias_as_hnn(*bias, s.H, s.N).to(at::kFloat).contiguous();
  if (mask.has_value()) a.mask = mask->to(at::kFloat).contiguous();
  if (logit_scale.has_value()) a.ls = logit_scale_as_h(*logit_scale, s.H).to(at::kFloat).contiguous();
  return a;
}

const float* ptr_or_null(const at::Tensor& t) { return t.defined() ? t.const_data_ptr<float>() : nullptr; }

simt::SimtInputs make_inputs(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, const AuxFp32& aux,
                             double scale, const WindowAttnSizes& s) {
  simt::SimtInputs in{};
  in.q = q.const_data_ptr<float>();
  in.k = k.const_data_ptr<float>();
  in.v = v.const_data_ptr<float>();
  in.q_sb = q.stride(0), in.q_sh = q.stride(1), in.q_sn = q.stride(2);
  in.k_sb = k.stride(0), in.k_sh = k.stride(1), in.k_sn = k.stride(2);
  in.v_sb = v.stride(0), in.v_sh = v.stride(1), in.v_sn = v.stride(2);
  in.bias = ptr_or_null(aux.bias);
  in.mask = ptr_or_null(aux.mask);
  in.logit_scale = ptr_or_null(aux.ls);
  in.scale = static_cast<float>(scale);
  in.B = s.B, in.H = s.H, in.N = s.N, in.d = s.d, in.nW = s.has_mask ? s.nW : 1;
  return in;
}

}  // namespace

std::tuple<at::Tensor, at::Tensor, at::Tensor> window_attention_fwd_cuda_fp32(const at::Tensor& q, const at::Tensor& k,
                                                                  const at::Tensor& v,
                                                                  const std::optional<at::Tensor>& bias,
                                                                  const std::optional<at::Tensor>& mask,
                                                                  const std::optional<at::Tensor>& logit_scale,
                                                                  double scale, const WindowAttnSizes& s) {
  check_fp32_cuda(q, "window_attention_fwd_cuda_fp32");
  const c10::cuda::CUDAGuard device_guard(q.device());
  at::Tensor out = make_out(q);
  at::Tensor lse = make_lse(q);
  if (s.B == 0 || s.H == 0) return {out, lse, make_qk_inv_norm(q, s)};
  const AuxFp32 aux = aux_fp32(bias, mask, logit_scale, s);

  simt::SimtFwdParams p{};
  p.in = make_inputs(q, k, v, aux, scale, s);
  p.out = out.data_ptr<float>();
  p.o_sb = out.stride(0), p.o_sh = out.stride(1), p.o_sn = out.stride(2);
  p.lse = lse.data_ptr<float>();
  C10_CUDA_CHECK(simt::simt_window_attn_fwd(p, at::cuda::getCurrentCUDAStream().stream()));
  // (the fp32 backward recomputes the norms: these are for the op's callers)
  return {out, lse, qk_inv_norm_aten(q, k, s)};
}

std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor, at::Tensor> window_attention_bwd_cuda_fp32(
    const at::Tensor& dout, const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, const at::Tensor& out,
    const at::Tensor& lse, const std::optional<at::Tensor>& bias, const std::optional<at::Tensor>& mask,
    const std::optional<at::Tensor>& logit_scale, double scale, const WindowAttnSizes& s, const QkvGrads& grads) {
  (void)out;  // D_i is recomputed as sum_j P_ij dP_ij; out is only checked by the caller
  (void)lse;  // P is renormalised from S's recomputed row max and sum (see the kernel file)
  check_fp32_cuda(q, "window_attention_bwd_cuda_fp32");
  const c10::cuda::CUDAGuard device_guard(q.device());
  const auto f32 = q.options().dtype(at::kFloat);
  at::Tensor dq = grads.dq, dk = grads.dk, dv = grads.dv;
  at::Tensor dbias_f, dlogit_f;
  if (s.B == 0 || s.H == 0) {
    if (s.has_bias) dbias_f = at::zeros({s.H, s.N, s.N}, f32);
    if (s.cosine) dlogit_f = at::zeros({s.H}, f32);
    return {dq, dk, dv, finish_dbias(dbias_f, bias, q), finish_dlogit(dlogit_f, logit_scale, q)};
  }
  const AuxFp32 aux = aux_fp32(bias, mask, logit_scale, s);
  const simt::SimtBwdWorkspace ws = simt::simt_bwd_workspace(s.B, s.H, s.N, s.has_bias, s.cosine);
  at::Tensor row_stats = at::empty({3, s.B, s.H, s.N}, f32);
  at::Tensor dbias_part = at::empty({ws.dbias_part_elems}, f32);
  at::Tensor dalpha_part = at::empty({ws.dalpha_part_elems}, q.options().dtype(at::kDouble));
  if (s.has_bias) dbias_f = at::empty({s.H, s.N, s.N}, f32);
  if (s.cosine) dlogit_f = at::empty({s.H}, f32);

  simt::SimtBwdParams p{};
  p.in = make_inputs(q, k, v, aux, scale, s);
  p.dout = dout.const_data_ptr<float>();
  p.do_sb = dout.stride(0), p.do_sh = dout.stride(1), p.do_sn = dout.stride(2);
  p.dq = dq.data_ptr<float>();
  p.dq_sb = dq.stride(0), p.dq_sh = dq.stride(1), p.dq_sn = dq.stride(2), p.dq_sd = dq.stride(3);
  p.dk = dk.data_ptr<float>();
  p.dk_sb = dk.stride(0), p.dk_sh = dk.stride(1), p.dk_sn = dk.stride(2), p.dk_sd = dk.stride(3);
  p.dv = dv.data_ptr<float>();
  p.dv_sb = dv.stride(0), p.dv_sh = dv.stride(1), p.dv_sn = dv.stride(2), p.dv_sd = dv.stride(3);
  p.row_max = row_stats[0].data_ptr<float>();
  p.row_sum = row_stats[1].data_ptr<float>();
  p.row_D = row_stats[2].data_ptr<float>();
  p.dbias_part = s.has_bias ? dbias_part.data_ptr<float>() : nullptr;
  p.dalpha_part = s.cosine ? dalpha_part.data_ptr<double>() : nullptr;
  p.n_chunks = ws.n_chunks;
  p.windows_per_chunk = ws.windows_per_chunk;
  p.dbias = s.has_bias ? dbias_f.data_ptr<float>() : nullptr;
  p.dlogit = s.cosine ? dlogit_f.data_ptr<float>() : nullptr;
  C10_CUDA_CHECK(simt::simt_window_attn_bwd(p, at::cuda::getCurrentCUDAStream().stream()));
  return {dq, dk, dv, finish_dbias(dbias_f, bias, q), finish_dlogit(dlogit_f, logit_scale, q)};
}

}  // namespace flash_window_attn
