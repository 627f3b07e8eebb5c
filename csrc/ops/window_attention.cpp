// The window_attention op schemas (the one place they are declared), the argument checks shared by
// every backend, output allocation helpers, and the CPU registration. The op contract is in
// csrc/README.md; the CPU math is in window_attention_cpu.cpp, the CUDA registration in
// window_attention_cuda.cpp.
//
// The module is abi3: Py_LIMITED_API is defined on the command line (by torch's BuildExtension
// for py_limited_api=True, see setup.py), and nothing below uses more of the C API than
// PyModule_Create.
#include <Python.h>

#include <torch/library.h>

#include <cmath>

#include "ops/window_attention_common.h"

extern "C" {
// `import flash_window_attn._C` loads this shared library, which runs the TORCH_LIBRARY static
// initialisers below. The module itself is empty: the ops live under torch.ops.flash_window_attn.
PyObject* PyInit__C(void) {
  static struct PyModuleDef module_def = {
      PyModuleDef_HEAD_INIT,
      "_C",  // name
      nullptr,  // doc
      -1,  // no per-interpreter state
      nullptr,  // methods
  };
  return PyModule_Create(&module_def);
}
}

namespace flash_window_attn {
namespace {

constexpr const char* kOp = "window_attention: ";

bool is_qkv_dtype(at::ScalarType t) {
  return t == at::kHalf || t == at::kBFloat16 || t == at::kFloat || t == at::kDouble;
}

// Rank, shape (against q), dtype (against q), device (against q) and unit last stride of one of
// q / k / v / dout. q itself is checked against itself first.
void check_qkv_tensor(const at::Tensor& t, const char* name, const at::Tensor& q) {
  TORCH_CHECK_VALUE(t.dim() == 4, kOp, name, " must be a 4-D tensor of shape (B_, H, N, d), but got ",
                    t.dim(), "-D shape ", t.sizes());
  TORCH_CHECK_VALUE(t.sizes() == q.sizes(), kOp, name, " has shape ", t.sizes(), " but q has shape ",
                    q.sizes(), " (q, k, v", " and dout must all have the same shape)");
  TORCH_CHECK_TYPE(t.scalar_type() == q.scalar_type(), kOp, name, " has dtype ", t.scalar_type(),
                   " but q has dtype ", q.scalar_type(), " (q, k, v and dout must have the same dtype)");
  TORCH_CHECK_VALUE(t.device() == q.device(), kOp, name, " is on device ", t.device(),
                    " but q is on device ", q.device(), " (all tensors must be on q's device)");
  TORCH_CHECK_VALUE(t.stride(3) == 1, kOp, name,
                    " must have a unit stride in its last dimension (stride(-1) == 1), but has stride(-1) = ",
                    t.stride(3), " (strides ", t.strides(), ")");
}

void check_aux_device(const at::Tensor& t, const char* name, const at::Tensor& q) {
  TORCH_CHECK_VALUE(t.device() == q.device(), kOp, name, " is on device ", t.device(),
                    " but q is on device ", q.device(), " (all tensors must be on q's device)");
}

void check_aux_floating(const at::Tensor& t, const char* name) {
  TORCH_CHECK_TYPE(at::isFloatingType(t.scalar_type()), kOp, name,
                   " must have a floating-point dtype, but has dtype ", t.scalar_type());
}

// Everything both directions check: q/k/v, sizes, bias, mask, logit_scale, scale.
WindowAttnSizes check_common(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                             const std::optional<at::Tensor>& bias, const std::optional<at::Tensor>& mask,
                             const std::optional<at::Tensor>& logit_scale, double scale) {
  TORCH_CHECK_VALUE(q.dim() == 4, kOp, "q must be a 4-D tensor of shape (B_, H, N, d), but got ", q.dim(),
                    "-D shape ", q.sizes());
  TORCH_CHECK_TYPE(is_qkv_dtype(q.scalar_type()), kOp,
                   "q must have dtype float16, bfloat16 or float32 (float64 on CPU only), but has dtype ",
                   q.scalar_type());
  TORCH_CHECK_TYPE(q.scalar_type() != at::kDouble || q.device().is_cpu(), kOp,
                   "float64 inputs are supported on CPU only, but q is float64 on device ", q.device(),
                   " (use float32, float16 or bfloat16 there)");
  check_qkv_tensor(q, "q", q);
  check_qkv_tensor(k, "k", q);
  check_qkv_tensor(v, "v", q);

  WindowAttnSizes s{};
  s.B = q.size(0);
  s.H = q.size(1);
  s.N = q.size(2);
  s.d = q.size(3);
  s.nW = 1;
  s.has_bias = bias.has_value();
  s.has_mask = mask.has_value();
  s.cosine = logit_scale.has_value();

  TORCH_CHECK_VALUE(s.N >= 1 && s.N <= kMaxN, kOp, "the window length N = q.size(2) must satisfy 1 <= N <= ",
                    kMaxN, ", but N = ", s.N, " (q shape ", q.sizes(), ")");
  TORCH_CHECK_VALUE(s.d % 8 == 0 && s.d >= kMinHeadDim && s.d <= kMaxHeadDim, kOp,
                    "the head dim d = q.size(3) must be a multiple of 8 in [", kMinHeadDim, ", ", kMaxHeadDim,
                    "], but d = ", s.d, " (q shape ", q.sizes(), ")");

  if (s.has_bias) {
    const at::Tensor& b = *bias;
    check_aux_device(b, "bias", q);
    check_aux_floating(b, "bias");
    const bool hnn = b.dim() == 3 && b.size(0) == s.H && b.size(1) == s.N && b.size(2) == s.N;
    const bool one_hnn =
        b.dim() == 4 && b.size(0) == 1 && b.size(1) == s.H && b.size(2) == s.N && b.size(3) == s.N;
    TORCH_CHECK_VALUE(hnn || one_hnn, kOp, "bias must have shape (H, N, N) = (", s.H, ", ", s.N, ", ", s.N,
                      ") or (1, H, N, N) = (1, ", s.H, ", ", s.N, ", ", s.N, "), but has shape ", b.sizes());
  }
  if (s.has_mask) {
    const at::Tensor& m = *mask;
    check_aux_device(m, "mask", q);
    check_aux_floating(m, "mask");
    TORCH_CHECK_VALUE(m.dim() == 3 && m.size(1) == s.N && m.size(2) == s.N, kOp,
                      "mask must have shape (nW, N, N) = (nW, ", s.N, ", ", s.N, "), but has shape ", m.sizes());
    s.nW = m.size(0);
    TORCH_CHECK_VALUE(s.nW >= 1, kOp, "mask must have at least one window (nW >= 1), but has shape ", m.sizes());
    TORCH_CHECK_VALUE(s.B % s.nW == 0, kOp, "mask has ", s.nW, " windows but B_=", s.B,
                      " is not a multiple of it (B_ % nW must be 0)");
  }
  if (s.cosine) {
    const at::Tensor& ls = *logit_scale;
    check_aux_device(ls, "logit_scale", q);
    check_aux_floating(ls, "logit_scale");
    const bool ok = (ls.dim() == 1 && ls.size(0) == s.H) ||
                    (ls.dim() == 3 && ls.size(0) == s.H && ls.size(1) == 1 && ls.size(2) == 1) ||
                    (ls.dim() == 4 && ls.size(0) == 1 && ls.size(1) == s.H && ls.size(2) == 1 && ls.size(3) == 1);
    TORCH_CHECK_VALUE(ok, kOp, "logit_scale must have H = ", s.H, " elements with shape (H,), (H, 1, 1) or ",
                      "(1, H, 1, 1), but has shape ", ls.sizes());
  }
  TORCH_CHECK_VALUE(std::isfinite(scale), kOp, "scale must be a finite number, but scale = ", scale);
  return s;
}

// A backward's qk_inv_norm argument: true when it holds the norms (V2, (2, B_, H, N) fp32), false
// when it is None or an empty tensor (the backward then computes them).
bool check_qk_inv_norm(const std::optional<at::Tensor>& qk_inv_norm, const at::Tensor& q, const WindowAttnSizes& s) {
  if (!qk_inv_norm.has_value() || !qk_inv_norm->defined()) return false;
  const at::Tensor& t = *qk_inv_norm;
  if (!s.cosine) {
    TORCH_CHECK_VALUE(t.numel() == 0, kOp, "qk_inv_norm must be None or empty without logit_scale (Swin V1 "
                      "logits are not normalised), but has shape ", t.sizes());
    return false;
  }
  if (t.dim() == 1 && t.size(0) == 0) return false;
  TORCH_CHECK_VALUE(t.dim() == 4 && t.size(0) == 2 && t.size(1) == s.B && t.size(2) == s.H && t.size(3) == s.N, kOp,
                    "qk_inv_norm must have shape (2, B_, H, N) = (2, ", s.B, ", ", s.H, ", ", s.N,
                    ") (the forward's last result), but has shape ", t.sizes());
  TORCH_CHECK_TYPE(t.scalar_type() == at::kFloat, kOp, "qk_inv_norm must have dtype float32, but has dtype ",
                   t.scalar_type());
  check_aux_device(t, "qk_inv_norm", q);
  return true;
}

}  // namespace

WindowAttnSizes check_fwd_args(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                               const std::optional<at::Tensor>& bias, const std::optional<at::Tensor>& mask,
                               const std::optional<at::Tensor>& logit_scale, double scale, bool return_inv_norms) {
  WindowAttnSizes s = check_common(q, k, v, bias, mask, logit_scale, scale);
  s.inv_norms = return_inv_norms;
  return s;
}

WindowAttnSizes check_bwd_args(const at::Tensor& dout, const at::Tensor& q, const at::Tensor& k,
                               const at::Tensor& v, const at::Tensor& out, const at::Tensor& lse,
                               const std::optional<at::Tensor>& bias, const std::optional<at::Tensor>& mask,
                               const std::optional<at::Tensor>& logit_scale, double scale,
                               const std::optional<at::Tensor>& qk_inv_norm) {
  WindowAttnSizes s = check_common(q, k, v, bias, mask, logit_scale, scale);
  check_qkv_tensor(dout, "dout", q);
  TORCH_CHECK_VALUE(out.sizes() == q.sizes(), kOp, "out must have q's shape ", q.sizes(), ", but has shape ",
                    out.sizes());
  TORCH_CHECK_TYPE(out.scalar_type() == q.scalar_type(), kOp, "out must have q's dtype ", q.scalar_type(),
                   ", but has dtype ", out.scalar_type());
  check_aux_device(out, "out", q);
  TORCH_CHECK_VALUE(lse.dim() == 3 && lse.size(0) == s.B && lse.size(1) == s.H && lse.size(2) == s.N, kOp,
                    "lse must have shape (B_, H, N) = (", s.B, ", ", s.H, ", ", s.N, "), but has shape ",
                    lse.sizes());
  TORCH_CHECK_TYPE(lse.scalar_type() == at::kFloat, kOp, "lse must have dtype float32, but has dtype ",
                   lse.scalar_type());
  check_aux_device(lse, "lse", q);
  s.inv_norms = check_qk_inv_norm(qk_inv_norm, q, s);
  return s;
}

void check_dropout_p(double dropout_p) {
  TORCH_CHECK_VALUE(dropout_p >= 0.0 && dropout_p <= 1.0, kOp,
                    "dropout_p must be a probability in [0, 1], but dropout_p = ", dropout_p);
}

void check_rng_state(const at::Tensor& rng_state, double dropout_p, const at::Tensor& q) {
  const int64_t want = dropout_p > 0.0 ? 2 : 0;
  TORCH_CHECK_VALUE(rng_state.dim() == 1 && rng_state.size(0) == want && rng_state.scalar_type() == at::kLong,
                    kOp, "rng_state must be the int64 tensor of shape (", want,
                    ",) that the dropout forward returned for dropout_p = ", dropout_p, ", but has shape ",
                    rng_state.sizes(), " and dtype ", rng_state.scalar_type());
  check_aux_device(rng_state, "rng_state", q);
}

at::Tensor bias_as_hnn(const at::Tensor& bias, int64_t H, int64_t N) {
  (void)H;
  (void)N;
  return bias.dim() == 4 ? bias.select(0, 0) : bias;  // check_*_args has validated the shape
}

at::Tensor logit_scale_as_h(const at::Tensor& logit_scale, int64_t H) {
  return logit_scale.reshape({H});  // a view: every accepted shape has exactly H elements in one run
}

at::Tensor make_out(const at::Tensor& q) {
  // (one call for empty (B_, N, H, d) then transpose(1, 2))
  const int64_t H = q.size(1), N = q.size(2), d = q.size(3);
  return at::empty_strided({q.size(0), H, N, d}, {N * H * d, d, H * d, 1}, q.options());
}

at::Tensor make_lse(const at::Tensor& q) {
  return at::empty({q.size(0), q.size(1), q.size(2)}, q.options().dtype(at::kFloat));
}

at::Tensor make_qk_inv_norm(const at::Tensor& q, const WindowAttnSizes& s) {
  return s.cosine && s.inv_norms ? at::empty({2, s.B, s.H, s.N}, q.options().dtype(at::kFloat))
                                 : at::empty({0}, q.options().dtype(at::kFloat));
}

at::Tensor qk_inv_norm_aten(const at::Tensor& q, const at::Tensor& k, const WindowAttnSizes& s) {
  if (!s.cosine || !s.inv_norms) return make_qk_inv_norm(q, s);
  // 1 / max(||x||, eps) over the head dim in fp32, as F.normalize divides
  auto inv = [](const at::Tensor& x) {
    return at::linalg_vector_norm(x.to(at::kFloat), 2, at::IntArrayRef{-1}).clamp_min(1e-12).reciprocal();
  };
  return at::stack({inv(q), inv(k)});
}

at::Tensor finish_dbias(const at::Tensor& dbias_hnn_fp32, const std::optional<at::Tensor>& bias,
                        const at::Tensor& q) {
  if (!bias.has_value()) {
    return at::empty({0}, q.options().dtype(at::kFloat));
  }
  // (the usual case, an fp32 (H, N, N) bias, needs none of the three dispatcher calls below)
  if (dbias_hnn_fp32.scalar_type() == bias->scalar_type() && dbias_hnn_fp32.sizes() == bias->sizes() &&
      dbias_hnn_fp32.is_contiguous())
    return dbias_hnn_fp32;
  return dbias_hnn_fp32.reshape(bias->sizes()).to(bias->scalar_type()).contiguous();
}

at::Tensor finish_dlogit(const at::Tensor& dlogit_h_fp32, const std::optional<at::Tensor>& logit_scale,
                         const at::Tensor& q) {
  if (!logit_scale.has_value()) {
    return at::empty({0}, q.options().dtype(at::kFloat));
  }
  at::Tensor r = dlogit_h_fp32.reshape(logit_scale->sizes());
  return r.scalar_type() == logit_scale->scalar_type() && r.is_contiguous()
             ? r : r.to(logit_scale->scalar_type()).contiguous();
}

TORCH_LIBRARY(flash_window_attn, m) {
  // The forwards' last result is qk_inv_norm (make_qk_inv_norm: with return_inv_norms, V2's inverse
  // norms of q and k, (2, B_, H, N) fp32; empty otherwise), which the backwards take back as their
  // optional last argument. The autograd kernels ask for it (and save it) where a backward will
  // follow and read it (window_attention_autograd.cpp: ask_inv_norms); without, the forward kernels
  // skip the writes.
  m.def("window_attention_fwd(Tensor q, Tensor k, Tensor v, Tensor? bias, Tensor? mask, Tensor? logit_scale, "
        "float scale, bool return_inv_norms=False) -> (Tensor, Tensor, Tensor)");
  m.def("window_attention_bwd(Tensor dout, Tensor q, Tensor k, Tensor v, Tensor out, Tensor lse, Tensor? bias, "
        "Tensor? mask, Tensor? logit_scale, float scale, Tensor? qk_inv_norm=None) -> "
        "(Tensor, Tensor, Tensor, Tensor, Tensor)");
  // Attention dropout: the forward returns (out, lse, rng_state, qk_inv_norm), rng_state the (seed,
  // offset) its keep mask was drawn from (int64, shape (2,), on q's device; (0,) for dropout_p == 0); the backward redraws
  // the same mask from it. Drawn from torch's default generator of q's device.
  m.def("window_attention_dropout_fwd(Tensor q, Tensor k, Tensor v, Tensor? bias, Tensor? mask, "
        "Tensor? logit_scale, float scale, float dropout_p, bool return_inv_norms=False) -> "
        "(Tensor, Tensor, Tensor, Tensor)");
  m.def("window_attention_dropout_bwd(Tensor dout, Tensor q, Tensor k, Tensor v, Tensor out, Tensor lse, "
        "Tensor? bias, Tensor? mask, Tensor? logit_scale, float scale, float dropout_p, Tensor rng_state, "
        "Tensor? qk_inv_norm=None) -> (Tensor, Tensor, Tensor, Tensor, Tensor)");
  // Testing aid: the (B, H, N, N) bool keep mask a dropout forward with this rng_state used.
  m.def("dropout_keep_mask(Tensor rng_state, int B, int H, int N, float dropout_p) -> Tensor");
}

TORCH_LIBRARY_IMPL(flash_window_attn, CPU, m) {
  m.impl("window_attention_fwd", &window_attention_fwd_cpu);
  m.impl("window_attention_bwd", &window_attention_bwd_cpu);
  m.impl("window_attention_dropout_fwd", &window_attention_dropout_fwd_cpu);
  m.impl("window_attention_dropout_bwd", &window_attention_dropout_bwd_cpu);
  m.impl("dropout_keep_mask", &dropout_keep_mask_cpu);
}

}  // namespace flash_window_attn
