// CUDA implementations of flash_window_attn::local_attention_fwd / _bwd: shared argument checks
// (local_attention_common.h), tensors -> kernel params (csrc/kernels/local/local_attn.h),
// workspace allocation on the current stream, dispatch over the fp16 / bf16 tensor-core kernels.
//
// fp16 / bf16 run the tensor-core kernels (d <= 128; d > 128 raises NotImplementedError: the
// register tiles of the backward do not fit); float32 runs full-precision SIMT kernels (d <= 256).
//
// Validated on an H100 (tests/gpu/local_validate.py: 1377 cases, fp16 / bf16 / fp32, against a
// float64 dense reference) before the CUDA impls were enabled.
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>
#include <torch/library.h>

#include <climits>

#include "kernels/local/local_attn.h"
#include "ops/local_attention_common.h"
#include "ops/cuda_tensor_glue.h"

namespace flash_window_attn {
namespace {

constexpr const char* kLocalCudaOp = "local_attention (CUDA): ";

void check_cuda_launch(cudaError_t err, const char* what) {
    TORCH_CHECK(err == cudaSuccess, kLocalCudaOp, what, " failed: ", cudaGetErrorString(err));
}

// What the CUDA kernels support beyond the shared checks (dtype, head dim, 32-bit row indices).
void check_cuda_support(const at::Tensor& q, const LocalAttnSizes& s) {
    TORCH_CHECK_TYPE(q.scalar_type() == at::kHalf || q.scalar_type() == at::kBFloat16 ||
                         q.scalar_type() == at::kFloat,
                     kLocalCudaOp, "q must have dtype float16, bfloat16 or float32, but has dtype ", q.scalar_type());
    if (q.scalar_type() == at::kFloat) {
        TORCH_CHECK_NOT_IMPLEMENTED(s.d <= fwa::kLocalSimtMaxHeadDim, kLocalCudaOp,
                                    "head dims d > 256 are not implemented for float32 on CUDA (d = ", s.d, ")");
    } else {
        TORCH_CHECK_NOT_IMPLEMENTED(fwa::local_attn_head_dim_bucket(static_cast<int>(s.d)) != 0, kLocalCudaOp,
                                    "head dims d > 128 are not implemented for float16 / bfloat16 on CUDA yet (d = ",
                                    s.d, "); use d <= 128, float32 inputs, or the CPU");
    }
    // Row indices are 32-bit inside the kernels (with a tile of slack).
    TORCH_CHECK_VALUE(s.L <= int64_t(INT_MAX) - 2 * fwa::kLocalTile, kLocalCudaOp,
                      "sequence length L = q.size(2) must be at most ", int64_t(INT_MAX) - 2 * fwa::kLocalTile,
                      " on CUDA, but L = ", s.L);
    TORCH_CHECK_VALUE(s.B <= INT_MAX && s.H <= INT_MAX, kLocalCudaOp, "B = ", s.B, " and H = ", s.H,
                      " must each be at most ", INT_MAX, " on CUDA");
}

void fill_common(fwa::LocalFwdParams& p, const LocalAttnSizes& s, int64_t left, int64_t right, int64_t block,
                 double scale) {
    p.B = static_cast<int>(s.B);
    p.H = static_cast<int>(s.H);
    p.Hkv = static_cast<int>(s.Hkv);
    p.L = static_cast<int>(s.L);
    p.d = static_cast<int>(s.d);
    p.group = static_cast<int>(s.H / s.Hkv);
    // Normalised band: block <= L and each side < number of blocks, so all fit in int (L >= 1).
    const fwa::LocalBand band = fwa::normalize_local_band(s.L, left, right, block);
    p.left = static_cast<int>(band.left);
    p.right = static_cast<int>(band.right);
    p.block = static_cast<int>(band.block);
    p.scale = static_cast<float>(scale);
    // Bytes per slice that the resident CTAs of one tile rank read in full: k / v of a query head's
    // kv head (shared by the group's query heads), q / dout of a kv head's query heads.
    const int64_t elem = 2, kv_bytes = s.L * s.d * elem * 2;
    p.tile_group = fwa::local_tile_group(band, s.B * s.H, (kv_bytes + p.group - 1) / p.group);
    p.kv_tile_group = fwa::local_tile_group(band, s.B * s.Hkv, kv_bytes * p.group);
}

// out, lse, and where `with_lo` the residual out_lo (make_local_out_lo: filled by the fp16 / bf16
// kernels, an empty (0,) tensor for float32).
std::tuple<at::Tensor, at::Tensor, at::Tensor> local_attention_fwd_impl(const at::Tensor& q, const at::Tensor& k,
                                                                        const at::Tensor& v, int64_t left,
                                                                        int64_t right, int64_t block, double scale,
                                                                        bool with_lo) {
    const LocalAttnSizes s = check_local_fwd_args(q, k, v, left, right, block, scale);
    check_cuda_support(q, s);
    const c10::cuda::CUDAGuard guard(q.device());

    at::Tensor out = make_local_out(q);
    at::Tensor lse = make_local_lse(q);
    at::Tensor out_lo = with_lo ? make_local_out_lo(q) : at::Tensor();
    if (s.B == 0 || s.H == 0 || s.L == 0) return {out, lse, out_lo};   // nothing to compute, no launch

    const at::Tensor q_ = as_kernel_ready(q), k_ = as_kernel_ready(k), v_ = as_kernel_ready(v);
    TORCH_CHECK(kernel_ready(out), kLocalCudaOp, "internal error: out is not 16-byte aligned");
    fwa::LocalFwdParams p;
    fill_common(p, s, left, right, block, scale);
    p.q = ref(q_);
    p.k = ref(k_);
    p.v = ref(v_);
    p.out = ref(out);
    if (with_lo && out_lo.numel() > 0) p.out_lo = ref(out_lo);
    p.lse = lse.data_ptr<float>();
    // out normalised by the 16-bit P's row sums wherever the residual-D backward runs, whether or not
    // this call returns out_lo: the plain forward and local_attention_fwd_res give the same bits.
    p.norm16 = local_out_lo_wanted(q, k) ? 1 : 0;
    const cudaStream_t stream = at::cuda::getCurrentCUDAStream();
    check_cuda_launch(q.scalar_type() == at::kFloat ? fwa::local_attn_fwd_fp32(p, stream)
                                                    : fwa::local_attn_fwd(kernel_dtype(q), p, stream),
                      "forward kernel launch");
    return {out, lse, out_lo};
}

std::tuple<at::Tensor, at::Tensor> local_attention_fwd_cuda(const at::Tensor& q, const at::Tensor& k,
                                                            const at::Tensor& v, int64_t left, int64_t right,
                                                            int64_t block, double scale) {
    auto [out, lse, unused] = local_attention_fwd_impl(q, k, v, left, right, block, scale, false);
    return {out, lse};
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> local_attention_fwd_res_cuda(const at::Tensor& q, const at::Tensor& k,
                                                                            const at::Tensor& v, int64_t left,
                                                                            int64_t right, int64_t block,
                                                                            double scale) {
    return local_attention_fwd_impl(q, k, v, left, right, block, scale, true);
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> local_attention_bwd_cuda(
    const at::Tensor& dout, const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, const at::Tensor& out,
    const at::Tensor& lse, int64_t left, int64_t right, int64_t block, double scale,
    const std::optional<at::Tensor>& out_lo) {
    const LocalAttnSizes s = check_local_bwd_args(dout, q, k, v, out, lse, left, right, block, scale);
    const bool has_lo = check_local_out_lo(out_lo, q) && q.scalar_type() != at::kFloat;
    check_cuda_support(q, s);
    const c10::cuda::CUDAGuard guard(q.device());

    at::Tensor dq = at::empty(q.sizes(), q.options());   // contiguous
    at::Tensor dk = at::empty(k.sizes(), k.options());
    at::Tensor dv = at::empty(v.sizes(), v.options());
    if (s.B == 0 || s.L == 0) return {dq, dk, dv};   // empty tensors
    if (s.H == 0) {
        // Hkv >= 1 divides H = 0: dk, dv are non-empty sums over no query heads.
        dk.zero_();
        dv.zero_();
        return {dq, dk, dv};
    }
    TORCH_CHECK(kernel_ready(dq) && kernel_ready(dk) && kernel_ready(dv), kLocalCudaOp,
                "internal error: gradient buffers are not 16-byte aligned");

    const at::Tensor q_ = as_kernel_ready(q), k_ = as_kernel_ready(k), v_ = as_kernel_ready(v);
    const at::Tensor dout_ = as_kernel_ready(dout), out_ = as_kernel_ready(out);
    // (out_lo is contiguous (check_local_out_lo); a view whose data pointer is not 16-byte aligned
    // is copied, as q, k, v are, for the preprocess's 16-byte row loads)
    const at::Tensor lo_ = has_lo ? as_kernel_ready(*out_lo) : at::Tensor();
    const at::Tensor lse_ = lse.contiguous();
    // Workspace, one allocation: D~ (B, H, L) fp32, and for the fp16 / bf16 kernels the exact-D
    // sums: d_acc (B, H, L) int64, d_bad (B, H, L) int32, absmax (B (H + Hkv)) fp32, zeroed by the
    // launcher (LocalBwdParams::sums_bytes) unless it runs the residual-D backward, which uses D~
    // only. (One allocation and one memset instead of four allocations and three fills: the
    // backward of a small problem is bound by its host work; cudaMemsetAsync is one driver call
    // where at::zeros went through the dispatcher to a fill kernel.)
    const bool exact_d = q.scalar_type() != at::kFloat;
    const int64_t rows = s.B * s.H * s.L;
    const int64_t ws_bytes = exact_d ? rows * (8 + 4 + 4) + s.B * (s.H + s.Hkv) * 4 : rows * 4;
    const at::Tensor ws = at::empty({ws_bytes}, q.options().dtype(at::kByte));
    unsigned char* ws_ptr = ws.data_ptr<uint8_t>();   // 256-byte aligned (caching allocator)
    const cudaStream_t stream = at::cuda::getCurrentCUDAStream();

    fwa::LocalBwdParams p;
    fill_common(p, s, left, right, block, scale);
    p.q = ref(q_);
    p.k = ref(k_);
    p.v = ref(v_);
    p.out = ref(out_);
    p.dout = ref(dout_);
    p.dq = ref(dq);
    p.dk = ref(dk);
    p.dv = ref(dv);
    p.lse = const_cast<float*>(lse_.data_ptr<float>());
    if (exact_d) {
        p.d_acc = reinterpret_cast<unsigned long long*>(ws_ptr);             // offset 0
        p.dsum = reinterpret_cast<float*>(ws_ptr + rows * 8);                // 8-byte aligned
        p.d_bad = reinterpret_cast<int*>(ws_ptr + rows * 12);
        p.absmax = reinterpret_cast<float*>(ws_ptr + rows * 16);
        p.sums_bytes = static_cast<size_t>(ws_bytes);
        if (has_lo) p.out_lo = ref(lo_);
    } else {
        p.dsum = reinterpret_cast<float*>(ws_ptr);
    }
    check_cuda_launch(q.scalar_type() == at::kFloat ? fwa::local_attn_bwd_fp32(p, stream)
                                                    : fwa::local_attn_bwd(kernel_dtype(q), p, stream),
                      "backward kernel launch");
    return {dq, dk, dv};
}

}  // namespace

bool local_out_lo_wanted(const at::Tensor& q, const at::Tensor& k) {
  // (no visible GPU: a trace of fake CUDA tensors on a host without one; no CUDA backward runs here)
  if (!local_out_lo_applies(q) || q.dim() != 4 || k.dim() != 4 || c10::cuda::device_count() == 0) return false;
  // The backward's rule (launch_local_bwd_impl): the residual-D form runs where both of its sides
  // are warp-specialised, decided by grid size against q's device (its SM count and arch) and the
  // FWA_LOCAL_BWD_*_WS switches, which are read once per process. In sizes that may be symbolic
  // (torch.compile with dynamic shapes), so a compiled graph guards on the outcome, not on L.
  const c10::cuda::CUDAGuard guard(q.device());
  const fwa::LocalBwdWsGrid g = fwa::local_bwd_ws_grid(static_cast<int>(q.sym_size(3).guard_int(__FILE__, __LINE__)));
  if (!g.wgmma) return false;
  const c10::SymInt kv_items = fwa::local_bwd_ws_items(q.sym_size(0), k.sym_size(1), q.sym_size(2), g.kv_tiles_per_item);
  const c10::SymInt q_items = fwa::local_bwd_ws_items(q.sym_size(0), q.sym_size(1), q.sym_size(2), g.q_tiles_per_item);
  return kv_items.sym_ge(g.kv_min_items).sym_and(q_items.sym_ge(g.q_min_items)).guard_bool(__FILE__, __LINE__);
}

TORCH_LIBRARY_IMPL(flash_window_attn, CUDA, m) {
    m.impl("local_attention_fwd", &local_attention_fwd_cuda);
    m.impl("local_attention_fwd_res", &local_attention_fwd_res_cuda);
    m.impl("local_attention_bwd", &local_attention_bwd_cuda);
}

}  // namespace flash_window_attn
