// The local_attention op schemas (sliding-window and block-sliding-window attention, the one place
// they are declared), their argument checks shared by every backend, output allocation, and the CPU
// registration. Contract: csrc/ops/local_attention_common.h and docs/local_attention.md; the CPU
// math is in local_attention_cpu.cpp. The CUDA implementation registers itself for the CUDA key in
// its own *_cuda*.cpp file.
//
// The namespace flash_window_attn is opened by TORCH_LIBRARY in window_attention.cpp; this file adds
// its ops with TORCH_LIBRARY_FRAGMENT (a second TORCH_LIBRARY for the same namespace is an error).
#include <torch/library.h>

#include <cmath>

#include "ops/local_attention_common.h"

namespace flash_window_attn {
namespace {

constexpr const char* kLocalOp = "local_attention: ";

bool is_local_dtype(at::ScalarType t) {
  return t == at::kHalf || t == at::kBFloat16 || t == at::kFloat || t == at::kDouble;
}

void check_rank4(const at::Tensor& t, const char* name, const char* shape_desc) {
  TORCH_CHECK_VALUE(t.dim() == 4, kLocalOp, name, " must be a 4-D tensor of shape ", shape_desc, ", but got ",
                    t.dim(), "-D shape ", t.sizes());
}

void check_same_dtype(const at::Tensor& t, const char* name, const at::Tensor& q) {
  TORCH_CHECK_TYPE(t.scalar_type() == q.scalar_type(), kLocalOp, name, " has dtype ", t.scalar_type(),
                   " but q has dtype ", q.scalar_type(), " (q, k, v and dout must have the same dtype)");
}

void check_same_device(const at::Tensor& t, const char* name, const at::Tensor& q) {
  TORCH_CHECK_VALUE(t.device() == q.device(), kLocalOp, name, " is on device ", t.device(),
                    " but q is on device ", q.device(), " (all tensors must be on q's device)");
}

void check_unit_last_stride(const at::Tensor& t, const char* name) {
  TORCH_CHECK_VALUE(t.stride(3) == 1, kLocalOp, name,
                    " must have a unit stride in its last dimension (stride(-1) == 1), but has stride(-1) = ",
                    t.stride(3), " (strides ", t.strides(), ")");
}

LocalAttnSizes check_common(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, int64_t left,
                            int64_t right, int64_t block, double scale) {
  check_rank4(q, "q", "(B, H, L, d)");
  TORCH_CHECK_TYPE(is_local_dtype(q.scalar_type()), kLocalOp,
                   "q must have dtype float16, bfloat16 or float32 (float64 on CPU only), but has dtype ",
                   q.scalar_type());
  TORCH_CHECK_TYPE(q.scalar_type() != at::kDouble || q.device().is_cpu(), kLocalOp,
                   "float64 inputs are supported on CPU only, but q is float64 on device ", q.device(),
                   " (use float32, float16 or bfloat16 there)");
  check_unit_last_stride(q, "q");

  LocalAttnSizes s{};
  s.B = q.size(0);
  s.H = q.size(1);
  s.L = q.size(2);
  s.d = q.size(3);

  const auto check_kv = [&](const at::Tensor& t, const char* name) {
    check_rank4(t, name, "(B, Hkv, L, d)");
    check_same_dtype(t, name, q);
    check_same_device(t, name, q);
    TORCH_CHECK_VALUE(t.size(0) == s.B && t.size(2) == s.L && t.size(3) == s.d, kLocalOp, name,
                      " must have shape (B, Hkv, L, d) with B, L, d as in q = (", s.B, ", ", s.H, ", ", s.L, ", ",
                      s.d, "), i.e. (", s.B, ", Hkv, ", s.L, ", ", s.d, "), but has shape ", t.sizes());
    check_unit_last_stride(t, name);
  };
  check_kv(k, "k");
  check_kv(v, "v");
  TORCH_CHECK_VALUE(v.size(1) == k.size(1), kLocalOp, "v must have k's number of heads Hkv = ", k.size(1),
                    ", but has shape ", v.sizes(), " (k has shape ", k.sizes(), ")");
  s.Hkv = k.size(1);
  TORCH_CHECK_VALUE(s.Hkv >= 1, kLocalOp, "k and v must have at least one head (Hkv = k.size(1) >= 1), but Hkv = ",
                    s.Hkv, " (k shape ", k.sizes(), ")");
  TORCH_CHECK_VALUE(s.H % s.Hkv == 0, kLocalOp, "the number of query heads H = q.size(1) = ", s.H,
                    " must be a multiple of the number of key/value heads Hkv = k.size(1) = ", s.Hkv,
                    " (grouped-query attention)");
  TORCH_CHECK_VALUE(s.d % 8 == 0 && s.d >= kLocalMinHeadDim && s.d <= kLocalMaxHeadDim, kLocalOp,
                    "the head dim d = q.size(3) must be a multiple of 8 in [", kLocalMinHeadDim, ", ",
                    kLocalMaxHeadDim, "], but d = ", s.d, " (q shape ", q.sizes(), ")");
  TORCH_CHECK_VALUE(left >= -1, kLocalOp, "left must be >= -1 (-1 = unbounded), but left = ", left);
  TORCH_CHECK_VALUE(right >= -1, kLocalOp, "right must be >= -1 (-1 = unbounded), but right = ", right);
  TORCH_CHECK_VALUE(block >= 1, kLocalOp, "block must be >= 1, but block = ", block);
  TORCH_CHECK_VALUE(std::isfinite(scale), kLocalOp, "scale must be a finite number, but scale = ", scale);
  return s;
}

}  // namespace

LocalAttnSizes check_local_fwd_args(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, int64_t left,
                                    int64_t right, int64_t block, double scale) {
  return check_common(q, k, v, left, right, block, scale);
}

LocalAttnSizes check_local_bwd_args(const at::Tensor& dout, const at::Tensor& q, const at::Tensor& k,
                                    const at::Tensor& v, const at::Tensor& out, const at::Tensor& lse,
                                    int64_t left, int64_t right, int64_t block, double scale) {
  const LocalAttnSizes s = check_common(q, k, v, left, right, block, scale);
  check_rank4(dout, "dout", "(B, H, L, d)");
  TORCH_CHECK_VALUE(dout.sizes() == q.sizes(), kLocalOp, "dout must have q's shape ", q.sizes(),
                    ", but has shape ", dout.sizes());
  check_same_dtype(dout, "dout", q);
  check_same_device(dout, "dout", q);
  check_unit_last_stride(dout, "dout");
  check_rank4(out, "out", "(B, H, L, d)");
  TORCH_CHECK_VALUE(out.sizes() == q.sizes(), kLocalOp, "out must have q's shape ", q.sizes(), ", but has shape ",
                    out.sizes());
  TORCH_CHECK_TYPE(out.scalar_type() == q.scalar_type(), kLocalOp, "out must have q's dtype ", q.scalar_type(),
                   ", but has dtype ", out.scalar_type());
  check_same_device(out, "out", q);
  check_unit_last_stride(out, "out");
  TORCH_CHECK_VALUE(lse.dim() == 3 && lse.size(0) == s.B && lse.size(1) == s.H && lse.size(2) == s.L, kLocalOp,
                    "lse must have shape (B, H, L) = (", s.B, ", ", s.H, ", ", s.L, "), but has shape ",
                    lse.sizes());
  TORCH_CHECK_TYPE(lse.scalar_type() == at::kFloat, kLocalOp, "lse must have dtype float32, but has dtype ",
                   lse.scalar_type());
  check_same_device(lse, "lse", q);
  return s;
}

bool local_out_lo_applies(const at::Tensor& q) {
  return q.is_cuda() && (q.scalar_type() == at::kHalf || q.scalar_type() == at::kBFloat16);
}

at::Tensor make_local_out_lo(const at::Tensor& q) {
  if (!local_out_lo_applies(q)) return at::empty({0}, q.options().dtype(at::kBFloat16));
  return at::empty({q.size(0), q.size(1), q.size(2), q.size(3)}, q.options().dtype(at::kBFloat16));
}

bool check_local_out_lo(const std::optional<at::Tensor>& out_lo, const at::Tensor& q) {
  if (!out_lo.has_value() || !out_lo->defined() || out_lo->numel() == 0) return false;
  const at::Tensor& t = *out_lo;
  TORCH_CHECK_VALUE(t.sizes() == q.sizes(), kLocalOp, "out_lo must be None, empty, or have q's shape ", q.sizes(),
                    ", but has shape ", t.sizes());
  TORCH_CHECK_TYPE(t.scalar_type() == at::kBFloat16, kLocalOp, "out_lo must have dtype bfloat16, but has dtype ",
                   t.scalar_type());
  check_same_device(t, "out_lo", q);
  TORCH_CHECK_VALUE(t.is_contiguous(), kLocalOp, "out_lo must be contiguous (as local_attention_fwd_res returns it), "
                    "but has strides ", t.strides());
  return true;
}

at::Tensor make_local_out(const at::Tensor& q) {
  return at::empty({q.size(0), q.size(1), q.size(2), q.size(3)}, q.options());
}

at::Tensor make_local_lse(const at::Tensor& q) {
  return at::empty({q.size(0), q.size(1), q.size(2)}, q.options().dtype(at::kFloat));
}

TORCH_LIBRARY_FRAGMENT(flash_window_attn, m) {
  // q: (B, H, L, d); k, v: (B, Hkv, L, d). Query i attends key j iff, with bi = i // block and
  // bj = j // block, (left < 0 or bi - bj <= left) and (right < 0 or bj - bi <= right).
  // Returns out (B, H, L, d) contiguous in q's dtype and lse (B, H, L) fp32.
  m.def("local_attention_fwd(Tensor q, Tensor k, Tensor v, int left, int right, int block, float scale) -> "
        "(Tensor, Tensor)");
  // Returns dq (B, H, L, d), dk and dv (B, Hkv, L, d), all contiguous in q's dtype; dk / dv are
  // summed over the H / Hkv query heads of each group.
  // out_lo (optional): local_attention_fwd_res's third output; where given (fp16 / bf16 on CUDA)
  // the backward may take D = dout · (out + out_lo) instead of its exact-D sums
  // (docs/local_attention.md). Ignored on CPU.
  m.def("local_attention_bwd(Tensor dout, Tensor q, Tensor k, Tensor v, Tensor out, Tensor lse, int left, "
        "int right, int block, float scale, Tensor? out_lo=None) -> (Tensor, Tensor, Tensor)");
  // The forward that autograd records where the backward can use out_lo (local_out_lo_wanted;
  // the plain forward elsewhere): out and lse as local_attention_fwd (bitwise the same), and
  // out_lo: for fp16 / bf16 on CUDA the fp32 output minus out, rounded to bfloat16, contiguous
  // (B, H, L, d); elsewhere an empty (0,) bfloat16 tensor.
  m.def("local_attention_fwd_res(Tensor q, Tensor k, Tensor v, int left, int right, int block, float scale) -> "
        "(Tensor, Tensor, Tensor)");
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> local_attention_fwd_res_cpu(const at::Tensor& q, const at::Tensor& k,
                                                                           const at::Tensor& v, int64_t left,
                                                                           int64_t right, int64_t block, double scale) {
  auto [out, lse] = local_attention_fwd_cpu(q, k, v, left, right, block, scale);
  return {out, lse, make_local_out_lo(q)};
}

TORCH_LIBRARY_IMPL(flash_window_attn, CPU, m) {
  m.impl("local_attention_fwd", &local_attention_fwd_cpu);
  m.impl("local_attention_fwd_res", &local_attention_fwd_res_cpu);
  m.impl("local_attention_bwd", &local_attention_bwd_cpu);
}

}  // namespace flash_window_attn
