// CUDA implementations of flash_window_attn::window_attention_fwd / _bwd: argument checks (shared
// with the CPU path), tensors -> kernel params, workspace allocation, dispatch. fp16/bf16 run the
// tensor-core kernels in csrc/kernels/; fp32 runs the full-precision SIMT kernels.
#include <ATen/cuda/CUDAContext.h>
#include <ATen/cuda/CUDAGeneratorImpl.h>
#include <c10/cuda/CUDAGuard.h>
#include <torch/library.h>

#include <cmath>
#include <cstdlib>
#include <mutex>

#include "kernels/window_attn.h"
#include "ops/window_attention_common.h"
#include "ops/cuda_tensor_glue.h"

namespace flash_window_attn {
namespace {

void check_cuda(cudaError_t err, const char* what) {
    TORCH_CHECK(err == cudaSuccess, "window_attention: ", what, " failed: ", cudaGetErrorString(err));
}

// Everything the forward and backward share: sizes, the fp32 bias and mask (bias_f / mask_f, in
// p.bias / p.mask), the padded log2(e)-scaled bias+mask tensor built from them (kept alive by
// `bm` while the kernels run; none for a forward that reads them itself, direct_bias_mask:
// fwa::window_attn_fwd_reads_bias_mask; built by the backward's first kernel with defer_build),
// the fp32 logit scale and the window chunking.
struct Prepared {
    fwa::BwdParams p;
    at::Tensor bm, bias_f, mask_f, logit_scale;
};

Prepared prepare(const at::Tensor& q, const std::optional<at::Tensor>& bias,
                 const std::optional<at::Tensor>& mask,
                 const std::optional<at::Tensor>& logit_scale, double scale,
                 const WindowAttnSizes& s, bool direct_bias_mask = false, bool defer_build = false) {
    Prepared r;
    fwa::BwdParams& p = r.p;
    p.B = static_cast<int>(s.B);
    p.H = static_cast<int>(s.H);
    p.N = static_cast<int>(s.N);
    p.d = static_cast<int>(s.d);
    p.Npad = fwa::round_up_tile(p.N);
    p.nW = s.has_mask ? static_cast<int>(s.nW) : 1;
    p.scale = static_cast<float>(scale);
    auto stream = at::cuda::getCurrentCUDAStream();

    if (s.cosine) {
        // H values in order: every accepted shape ((H,), (H, 1, 1), (1, H, 1, 1)) when contiguous
        // (converted before the bm build, so that the build is prepare's last launch: see
        // FwdParams::bm_pdl)
        const at::Tensor& ls = *logit_scale;
        r.logit_scale = ls.scalar_type() == at::kFloat && ls.is_contiguous()
                            ? ls : logit_scale_as_h(ls, s.H).to(at::kFloat).contiguous();
        p.logit_scale = r.logit_scale.data_ptr<float>();
    }
    if (s.has_bias || s.has_mask) {
        // (fp32 bias and mask, the usual case, skip the dispatcher calls of .to) Converted copies
        // stay alive in r until the op returns: the forward's kernel, and the backward's first
        // kernel, which builds bm (BwdParams::bm_build), read them.
        at::Tensor& bias_f = r.bias_f;
        at::Tensor& mask_f = r.mask_f;
        if (s.has_bias) {
            bias_f = bias_as_hnn(*bias, s.H, s.N);
            if (bias_f.scalar_type() != at::kFloat) bias_f = bias_f.to(at::kFloat);
        }
        if (s.has_mask) mask_f = mask->scalar_type() == at::kFloat ? *mask : mask->to(at::kFloat);
        // The kernels read these only where bm is null (the forwards that build their rows
        // themselves) or to build bm (window_attn_build_bm, BwdParams::bm_build)
        if (s.has_bias) {
            p.bias = bias_f.data_ptr<float>();
            p.bias_s0 = bias_f.stride(0);
            p.bias_s1 = bias_f.stride(1);
            p.bias_s2 = bias_f.stride(2);
        }
        if (s.has_mask) {
            p.mask = mask_f.data_ptr<float>();
            p.mask_s0 = mask_f.stride(0);
            p.mask_s1 = mask_f.stride(1);
            p.mask_s2 = mask_f.stride(2);
        }
        if (direct_bias_mask) return r;
        const int Hb = s.has_bias ? p.H : 1, nWb = s.has_mask ? p.nW : 1;
        r.bm = at::empty({nWb, Hb, p.Npad, p.Npad}, q.options().dtype(at::kFloat));
        p.bm_win_stride = s.has_mask ? int64_t(Hb) * p.Npad * p.Npad : 0;
        p.bm_head_stride = s.has_bias ? int64_t(p.Npad) * p.Npad : 0;
        p.bm_build = r.bm.data_ptr<float>();
        p.bm = p.bm_build;
        if (defer_build) return r;   // built by the backward's first kernel (BwdParams::bm_build)
        check_cuda(fwa::window_attn_build_bm(p, stream), "building the bias+mask tile");
        p.bm_build = nullptr;
    }
    return r;
}

// FWA_WINDOW_GIVEN_NORMS=0: the backward ignores a given qk_inv_norm and computes the norms itself
// (A/B timing, tests; the results differ only by the norms' rounding).
bool use_given_inv_norms() {
    static const bool on = [] {
        const char* e = std::getenv("FWA_WINDOW_GIVEN_NORMS");
        return e == nullptr || e[0] != '0';
    }();
    return on;
}

// Kernel-side dropout arguments for dropout_p and the (device) rng_state tensor.
fwa::DropoutArgs dropout_args(double dropout_p, const at::Tensor& rng_state) {
    fwa::DropoutArgs d;
    if (dropout_p <= 0.0) return d;
    d.threshold = fwa::dropout_threshold(static_cast<float>(dropout_p));
    // threshold 0 means "off" to the kernels; p > 0 this small keeps everything anyway.
    d.scale = dropout_p < 1.0 ? static_cast<float>(1.0 / (1.0 - dropout_p)) : 0.f;
    d.rng_state = rng_state.data_ptr<int64_t>();
    return d;
}

void check_no_fp32_dropout(const at::Tensor& q, double dropout_p) {
    TORCH_CHECK_NOT_IMPLEMENTED(q.scalar_type() != at::kFloat || dropout_p == 0.0,
                                "window_attention: attention dropout (dropout_p = ", dropout_p,
                                ") is not implemented for float32 CUDA inputs; run under torch.autocast "
                                "(float16 / bfloat16) or on the CPU, or use dropout_p = 0");
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> fwd_cuda_impl(
    const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
    const std::optional<at::Tensor>& bias, const std::optional<at::Tensor>& mask,
    const std::optional<at::Tensor>& logit_scale, double scale, const WindowAttnSizes& s,
    const fwa::DropoutArgs& drop) {
    if (q.scalar_type() == at::kFloat)
        return window_attention_fwd_cuda_fp32(q, k, v, bias, mask, logit_scale, scale, s);

    at::Tensor out = make_out(q);
    at::Tensor lse = make_lse(q);
    at::Tensor qk_inv_norm = make_qk_inv_norm(q, s);   // written by the forward kernels (V2, asked for)
    if (s.B == 0 || s.H == 0) return {out, lse, qk_inv_norm};

    const at::Tensor q_ = as_kernel_ready(q), k_ = as_kernel_ready(k), v_ = as_kernel_ready(v);
    // Whether the forward kernel reads the bias and mask itself (then no bm build is launched)
    fwa::FwdParams shape;
    shape.N = static_cast<int>(s.N);
    shape.Npad = fwa::round_up_tile(shape.N);
    shape.d = static_cast<int>(s.d);
    shape.q = ref(q_);
    shape.k = ref(k_);
    shape.v = ref(v_);
    const bool direct = fwa::window_attn_fwd_reads_bias_mask(shape, drop.threshold != 0);
    Prepared prep = prepare(q, bias, mask, logit_scale, scale, s, direct);
    fwa::FwdParams& p = prep.p;
    p.q = ref(q_);
    p.k = ref(k_);
    p.v = ref(v_);
    p.out = ref(out);
    p.lse = lse.data_ptr<float>();
    if (s.cosine && s.inv_norms) {
        p.q_inv_norm = qk_inv_norm.data_ptr<float>();
        p.k_inv_norm = p.q_inv_norm + s.B * s.H * s.N;
    }
    p.dropout = drop;
    p.bm_pdl = p.bm != nullptr;   // nothing is launched between prepare's bm build and the kernel
    check_cuda(fwa::window_attn_fwd(kernel_dtype(q), p, at::cuda::getCurrentCUDAStream()),
               "forward kernel launch");
    return {out, lse, qk_inv_norm};
}

}  // namespace

// The op implementations (registered below; the packed-qkv ops call the dropout ones too).

std::tuple<at::Tensor, at::Tensor, at::Tensor> window_attention_fwd_cuda(
    const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
    const std::optional<at::Tensor>& bias, const std::optional<at::Tensor>& mask,
    const std::optional<at::Tensor>& logit_scale, double scale, bool return_inv_norms) {
    const WindowAttnSizes s = check_fwd_args(q, k, v, bias, mask, logit_scale, scale, return_inv_norms);
    const c10::cuda::CUDAGuard guard(q.device());
    return fwd_cuda_impl(q, k, v, bias, mask, logit_scale, scale, s, fwa::DropoutArgs{});
}

std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor> window_attention_dropout_fwd_cuda(
    const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
    const std::optional<at::Tensor>& bias, const std::optional<at::Tensor>& mask,
    const std::optional<at::Tensor>& logit_scale, double scale, double dropout_p, bool return_inv_norms) {
    const WindowAttnSizes s = check_fwd_args(q, k, v, bias, mask, logit_scale, scale, return_inv_norms);
    check_dropout_p(dropout_p);
    check_no_fp32_dropout(q, dropout_p);
    const c10::cuda::CUDAGuard guard(q.device());
    at::Tensor rng_state = at::empty({dropout_p > 0.0 ? 2 : 0}, q.options().dtype(at::kLong));
    if (dropout_p > 0.0) {
        // Torch's generator of q's device: torch.manual_seed reproduces the mask, and inside a
        // CUDA-graph capture every replay draws a fresh one (philox_cuda_state's captured form).
        auto gen = at::get_generator_or_default<at::CUDAGeneratorImpl>(
            std::nullopt, at::cuda::detail::getDefaultCUDAGenerator(q.device().index()));
        at::PhiloxCudaState st;
        {
            std::lock_guard<std::mutex> lock(gen->mutex_);
            st = gen->philox_cuda_state(4);   // one counter block per call (see kernels/dropout.h)
        }
        fwa::PhiloxSeedArgs a;
        a.captured = st.captured_;
        if (st.captured_) {
            a.seed_ptr = st.seed_.ptr;
            a.offset_ptr = st.offset_.ptr;
            a.offset_intragraph = st.offset_intragraph_;
        } else {
            a.seed = st.seed_.val;
            a.offset = st.offset_.val;
        }
        check_cuda(fwa::window_attn_write_rng_state(rng_state.data_ptr<int64_t>(), a,
                                                    at::cuda::getCurrentCUDAStream()),
                   "dropout rng state");
    }
    auto [out, lse, qk_inv_norm] =
        fwd_cuda_impl(q, k, v, bias, mask, logit_scale, scale, s, dropout_args(dropout_p, rng_state));
    return {out, lse, rng_state, qk_inv_norm};
}

std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor, at::Tensor> bwd_cuda_impl(
    const at::Tensor& dout, const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
    const at::Tensor& out, const at::Tensor& lse, const std::optional<at::Tensor>& bias,
    const std::optional<at::Tensor>& mask, const std::optional<at::Tensor>& logit_scale,
    double scale, const WindowAttnSizes& s, const fwa::DropoutArgs& drop, const QkvGrads& grads,
    const std::optional<at::Tensor>& qk_inv_norm) {
    const bool norms_given = s.inv_norms && use_given_inv_norms();
    if (q.scalar_type() == at::kFloat)
        return window_attention_bwd_cuda_fp32(dout, q, k, v, out, lse, bias, mask, logit_scale,
                                              scale, s, grads);

    at::Tensor dq = grads.dq, dk = grads.dk, dv = grads.dv;
    const auto f32 = q.options().dtype(at::kFloat);
    if (s.B == 0 || s.H == 0) {   // nothing to launch; the reductions over no windows are 0
        at::Tensor dbias0 = s.has_bias ? at::zeros({s.H, s.N, s.N}, f32) : at::Tensor();
        at::Tensor dlogit0 = s.cosine ? at::zeros({s.H}, f32) : at::Tensor();
        return {dq, dk, dv, finish_dbias(dbias0, bias, q), finish_dlogit(dlogit0, logit_scale, q)};
    }
    at::Tensor dbias_hnn = s.has_bias ? at::empty({s.H, s.N, s.N}, f32) : at::Tensor();
    at::Tensor dlogit_h = s.cosine ? at::empty({s.H}, f32) : at::Tensor();
    auto stream = at::cuda::getCurrentCUDAStream();

    // (bm, where needed, is built by the backward: its first kernel on the tiled path)
    Prepared prep = prepare(q, bias, mask, logit_scale, scale, s, /*direct_bias_mask=*/false, /*defer_build=*/true);
    fwa::BwdParams& p = prep.p;
    at::Tensor workspace;   // the kernels' fp32 scratch buffers, carved out of one allocation
    int n_dbias_partials = 0, n_dalpha_partials = 0;
    if (s.B > 0) {
        TORCH_CHECK(kernel_ready(dq) && kernel_ready(dk) && kernel_ready(dv),
                    "window_attention: internal error: gradient buffers are not 16-byte aligned");
        const at::Tensor q_ = as_kernel_ready(q), k_ = as_kernel_ready(k), v_ = as_kernel_ready(v);
        // out and lse come from the caller of the raw op: any strides (the kernels want unit last
        // stride and 16-byte rows for out, a contiguous (B_, H, N) lse).
        const at::Tensor dout_ = as_kernel_ready(dout);
        const at::Tensor out_ = as_kernel_ready(out);   // also copies a non-unit last stride
        const at::Tensor lse_ = lse.contiguous();
        // the forward's inverse norms (V2), where given: the tiled path's preprocess then reads
        // out and dout only (the N <= 64 path and fp32 compute their own)
        const at::Tensor norms_ = norms_given ? qk_inv_norm->contiguous() : at::Tensor();
        p.q = ref(q_);
        p.k = ref(k_);
        p.v = ref(v_);
        p.out = ref(out_);
        p.dout = ref(dout_);
        p.dq = ref(dq);
        p.dk = ref(dk);
        p.dv = ref(dv);
        p.lse = const_cast<float*>(lse_.data_ptr<float>());
        p.dropout = drop;
        // The chunking of windows over CTAs sizes the partial buffers (the forward plans its own);
        // the query side's key ranges depend on the tensors' strides (set above).
        fwa::window_attn_plan_bwd(kernel_dtype(q), p);
        const bool small = fwa::window_attn_bwd_uses_small_path(p);
        if (small) {   // (the tiled path's preprocess builds bm itself: BwdParams::bm_build)
            check_cuda(fwa::window_attn_build_bm(p, stream), "building the bias+mask tile");
            p.bm_build = nullptr;
        }
        n_dbias_partials = p.nW * p.n_chunks;
        n_dalpha_partials = n_dbias_partials * (small ? 1 : p.num_m_blocks * p.n_key_ranges);
        // One allocation for the scratch buffers (a dispatcher call per at::empty costs host time
        // in every layer's backward): each buffer at a 256-byte aligned offset (the kernels read
        // them as float / float2 and with 4-byte async copies). Sizes as their own tensors had:
        //   dbias_partial (H, nW * n_chunks, Npad, Npad), dalpha_partial (H, its partials),
        //   tiled path: dsum (B_, H, N), dsum_partial (key blocks, B_, H, N, 2), q_inv / k_inv (B_, H, N),
        //   dq_partial (key ranges, B_, H, N, d) where the query side has key ranges
        const int64_t rows = s.B * s.H * s.N;
        const int64_t sizes[7] = {
            s.has_bias ? s.H * n_dbias_partials * int64_t(p.Npad) * p.Npad : 0,
            s.cosine ? s.H * n_dalpha_partials : 0,
            small ? 0 : rows,
            small ? 0 : (s.N + fwa::kTileN - 1) / fwa::kTileN * rows * 2,
            (!small && s.cosine && !norms_given) ? rows : 0,
            (!small && s.cosine && !norms_given) ? rows : 0,
            small ? 0 : fwa::window_bwd_dq_partial_elems(p)};
        int64_t offsets[7], total = 0;
        for (int i = 0; i < 7; ++i) {
            offsets[i] = total;
            total += (sizes[i] + 63) / 64 * 64;
        }
        workspace = at::empty({total}, f32);
        float* base = workspace.data_ptr<float>();
        float** dst[7] = {&p.dbias_partial, &p.dalpha_partial, &p.dsum, &p.dsum_partial, &p.q_inv_norm,
                          &p.k_inv_norm, &p.dq_partial};
        for (int i = 0; i < 7; ++i)
            if (sizes[i] > 0) *dst[i] = base + offsets[i];
        if (!small && s.cosine && norms_given) {
            p.q_inv_norm = const_cast<float*>(norms_.data_ptr<float>());
            p.k_inv_norm = p.q_inv_norm + rows;
            p.inv_norms_given = true;
        }
        check_cuda(fwa::window_attn_bwd(kernel_dtype(q), p, stream), "backward kernel launch");
    } else {
        p.n_chunks = 0;
    }
    check_cuda(fwa::window_attn_reduce_partials(p, n_dbias_partials, n_dalpha_partials,
                                                s.has_bias ? dbias_hnn.data_ptr<float>() : nullptr,
                                                s.cosine ? dlogit_h.data_ptr<float>() : nullptr,
                                                stream),
               "gradient reduction");
    return {dq, dk, dv, finish_dbias(dbias_hnn, bias, q), finish_dlogit(dlogit_h, logit_scale, q)};
}

std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor, at::Tensor> window_attention_bwd_cuda(
    const at::Tensor& dout, const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
    const at::Tensor& out, const at::Tensor& lse, const std::optional<at::Tensor>& bias,
    const std::optional<at::Tensor>& mask, const std::optional<at::Tensor>& logit_scale,
    double scale, const std::optional<at::Tensor>& qk_inv_norm) {
    const WindowAttnSizes s = check_bwd_args(dout, q, k, v, out, lse, bias, mask, logit_scale, scale, qk_inv_norm);
    const c10::cuda::CUDAGuard guard(q.device());
    return bwd_cuda_impl(dout, q, k, v, out, lse, bias, mask, logit_scale, scale, s, fwa::DropoutArgs{},
                         fresh_qkv_grads(q, k, v), qk_inv_norm);
}

std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor, at::Tensor> window_attention_dropout_bwd_cuda(
    const at::Tensor& dout, const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
    const at::Tensor& out, const at::Tensor& lse, const std::optional<at::Tensor>& bias,
    const std::optional<at::Tensor>& mask, const std::optional<at::Tensor>& logit_scale,
    double scale, double dropout_p, const at::Tensor& rng_state, const std::optional<at::Tensor>& qk_inv_norm) {
    const WindowAttnSizes s = check_bwd_args(dout, q, k, v, out, lse, bias, mask, logit_scale, scale, qk_inv_norm);
    check_dropout_p(dropout_p);
    check_rng_state(rng_state, dropout_p, q);
    check_no_fp32_dropout(q, dropout_p);
    const c10::cuda::CUDAGuard guard(q.device());
    return bwd_cuda_impl(dout, q, k, v, out, lse, bias, mask, logit_scale, scale, s,
                         dropout_args(dropout_p, rng_state), fresh_qkv_grads(q, k, v), qk_inv_norm);
}

std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor, at::Tensor> window_attention_dropout_bwd_cuda_into(
    const at::Tensor& dout, const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
    const at::Tensor& out, const at::Tensor& lse, const std::optional<at::Tensor>& bias,
    const std::optional<at::Tensor>& mask, const std::optional<at::Tensor>& logit_scale,
    double scale, double dropout_p, const at::Tensor& rng_state, const std::optional<at::Tensor>& qk_inv_norm,
    const QkvGrads& grads) {
    const WindowAttnSizes s = check_bwd_args(dout, q, k, v, out, lse, bias, mask, logit_scale, scale, qk_inv_norm);
    check_dropout_p(dropout_p);
    check_rng_state(rng_state, dropout_p, q);
    check_no_fp32_dropout(q, dropout_p);
    const c10::cuda::CUDAGuard guard(q.device());
    return bwd_cuda_impl(dout, q, k, v, out, lse, bias, mask, logit_scale, scale, s,
                         dropout_args(dropout_p, rng_state), grads, qk_inv_norm);
}


TORCH_LIBRARY_IMPL(flash_window_attn, CUDA, m) {
    m.impl("window_attention_fwd", &window_attention_fwd_cuda);
    m.impl("window_attention_bwd", &window_attention_bwd_cuda);
    m.impl("window_attention_dropout_fwd", &window_attention_dropout_fwd_cuda);
    m.impl("window_attention_dropout_bwd", &window_attention_dropout_bwd_cuda);
}

}  // namespace flash_window_attn
