// Local attention for float32 CUDA inputs: full-precision SIMT kernels (fp32 FMA, no tf32, expf),
// the same math and contract as the tensor-core kernels (local_attn.h), for d up to 256.
//
// Work split: one warp per row, rows flattened over (b, head, row) and walked by a grid-stride
// loop (1-D grid, 64-bit row ids).
//  - forward: warp per query row i; it visits only the allowed keys [key_lo(i), key_hi(i)]
//    (local_band.h), 32 at a time, one key per lane for the logit (q_i staged in shared memory),
//    online softmax across the warp, then out += p_j v_j with each lane owning float4 columns.
//  - backward: D_i = dout_i · out_i (warp per row); dq: warp per query row over its allowed keys;
//    dk, dv: warp per key row j of kv head hk over the query heads of its group in ascending order
//    and, for each, over the allowed queries [query_lo(j), query_hi(j)].
// Nothing outside the band is touched, so the cost is O(L x window x d). Every sum has a fixed
// order inside one warp: bitwise deterministic, no atomics.
// Layout requirements as for the tensor-core path: unit last stride, 16-byte aligned rows (d is a
// multiple of 8 so rows are 32-byte multiples; the op copies anything misaligned).
#include <cmath>

#include "../kernel_utils.cuh"
#include "local_attn.h"

namespace fwa {
namespace {

constexpr int kSimtWarps = 4;
constexpr int kSimtThreads = kSimtWarps * 32;
constexpr int kSimtVec = kLocalSimtMaxHeadDim / 128;   // float4 column chunks per lane

FWA_DEVICE float warp_max_f(float x) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, o));
    return x;
}

FWA_DEVICE const float* row_ptr(const TensorRef& t, int64_t b, int64_t h, int64_t i) {
    return static_cast<const float*>(t.ptr) + b * t.batch_stride + h * t.head_stride + i * t.row_stride;
}
FWA_DEVICE float* row_ptr_w(const TensorRef& t, int64_t b, int64_t h, int64_t i) {
    return static_cast<float*>(t.ptr) + b * t.batch_stride + h * t.head_stride + i * t.row_stride;
}

// x · y over d floats (both 16-byte aligned; x usually a shared-memory row), by one lane.
FWA_DEVICE float dot_row(const float* x, const float* y, int d) {
    float acc0 = 0.f, acc1 = 0.f;
    for (int c = 0; c < d; c += 8) {
        const float4 a0 = *reinterpret_cast<const float4*>(x + c);
        const float4 b0 = __ldg(reinterpret_cast<const float4*>(y + c));
        const float4 a1 = *reinterpret_cast<const float4*>(x + c + 4);
        const float4 b1 = __ldg(reinterpret_cast<const float4*>(y + c + 4));
        acc0 = fmaf(a0.x, b0.x, fmaf(a0.y, b0.y, fmaf(a0.z, b0.z, fmaf(a0.w, b0.w, acc0))));
        acc1 = fmaf(a1.x, b1.x, fmaf(a1.y, b1.y, fmaf(a1.z, b1.z, fmaf(a1.w, b1.w, acc1))));
    }
    return acc0 + acc1;
}

// Copies a d-float global row into this warp's shared buffer.
FWA_DEVICE void stage_row(float* dst, const float* src, int d, int lane) {
    __syncwarp();
    for (int c = lane * 4; c < d; c += 128)
        *reinterpret_cast<float4*>(dst + c) = __ldg(reinterpret_cast<const float4*>(src + c));
    __syncwarp();
}

struct Acc {
    float4 v[kSimtVec];
    FWA_DEVICE void zero() {
#pragma unroll
        for (int t = 0; t < kSimtVec; ++t) v[t] = make_float4(0.f, 0.f, 0.f, 0.f);
    }
    FWA_DEVICE void scale(float f) {
#pragma unroll
        for (int t = 0; t < kSimtVec; ++t) { v[t].x *= f; v[t].y *= f; v[t].z *= f; v[t].w *= f; }
    }
    // acc += w * row[lane's columns]
    FWA_DEVICE void axpy(float w, const float* row, int d, int lane) {
#pragma unroll
        for (int t = 0; t < kSimtVec; ++t) {
            const int c = lane * 4 + 128 * t;
            if (c < d) {
                const float4 x = __ldg(reinterpret_cast<const float4*>(row + c));
                v[t].x = fmaf(w, x.x, v[t].x);
                v[t].y = fmaf(w, x.y, v[t].y);
                v[t].z = fmaf(w, x.z, v[t].z);
                v[t].w = fmaf(w, x.w, v[t].w);
            }
        }
    }
    FWA_DEVICE void add(const Acc& o) {
#pragma unroll
        for (int t = 0; t < kSimtVec; ++t) {
            v[t].x += o.v[t].x; v[t].y += o.v[t].y; v[t].z += o.v[t].z; v[t].w += o.v[t].w;
        }
    }
    FWA_DEVICE void store(float* row, float f, int d, int lane) const {
#pragma unroll
        for (int t = 0; t < kSimtVec; ++t) {
            const int c = lane * 4 + 128 * t;
            if (c < d) *reinterpret_cast<float4*>(row + c) = make_float4(v[t].x * f, v[t].y * f, v[t].z * f, v[t].w * f);
        }
    }
};

__global__ void __launch_bounds__(kSimtThreads) local_fwd_fp32_kernel(const LocalFwdParams p) {
    __shared__ __align__(16) float sq[kSimtWarps][kLocalSimtMaxHeadDim];
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const LocalBand band = p.band();
    const int L = p.L, d = p.d;
    const int64_t total = int64_t(p.B) * p.H * L;
    for (int64_t row_id = int64_t(blockIdx.x) * kSimtWarps + warp; row_id < total;
         row_id += int64_t(gridDim.x) * kSimtWarps) {
        const int64_t i = row_id % L, bh = row_id / L;
        const int64_t h = bh % p.H, b = bh / p.H, hk = h / p.group;
        stage_row(sq[warp], row_ptr(p.q, b, h, i), d, lane);
        const int64_t lo = band.key_lo(i), hi = band.key_hi(i);   // non-empty: i itself
        float m = -INFINITY, l = 0.f;
        Acc acc;
        acc.zero();
        for (int64_t j0 = lo; j0 <= hi; j0 += 32) {
            const int64_t j = j0 + lane;
            const bool valid = j <= hi;
            // __fmul_rn: the scaled logit is rounded once, here and in the backward, and never contracted
            // into the exp's argument: at |logits| ~ 1e8 an fma would shift P by exp(ulp) ~ e^8.
            const float s = valid ? __fmul_rn(dot_row(sq[warp], row_ptr(p.k, b, hk, j), d), p.scale) : -INFINITY;
            const float m_new = fmaxf(m, warp_max_f(s));   // finite: lane 0 is valid
            const float corr = expf(m - m_new);
            const float e = valid ? expf(s - m_new) : 0.f;
            l = l * corr + warp_sum(e);
            acc.scale(corr);
            m = m_new;
            const int n = static_cast<int>(hi - j0 + 1 < 32 ? hi - j0 + 1 : 32);
            for (int jj = 0; jj < n; ++jj) {
                const float w = __shfl_sync(0xffffffffu, e, jj);
                acc.axpy(w, row_ptr(p.v, b, hk, j0 + jj), d, lane);
            }
        }
        acc.store(row_ptr_w(p.out, b, h, i), 1.f / l, d, lane);
        if (lane == 0) p.lse[row_id] = m + logf(l);
    }
}

// D_i = dout_i · out_i, one row per thread with dot_row: the same summation order as the
// dout_i · v_j of the dq / dkv kernels, so where row i has a single allowed key (out_i == v_j bitwise,
// P = 1) dP - D is exactly 0 and so are dq and dk, as in exact arithmetic (a warp-parallel sum here
// left a rounding residue of ~1e-5).
__global__ void __launch_bounds__(kSimtThreads) local_bwd_fp32_dsum_kernel(const LocalBwdParams p) {
    const int L = p.L, d = p.d;
    const int64_t total = int64_t(p.B) * p.H * L;
    for (int64_t row_id = int64_t(blockIdx.x) * kSimtThreads + threadIdx.x; row_id < total;
         row_id += int64_t(gridDim.x) * kSimtThreads) {
        const int64_t i = row_id % L, bh = row_id / L;
        const int64_t h = bh % p.H, b = bh / p.H;
        p.dsum[row_id] = dot_row(row_ptr(p.out, b, h, i), row_ptr(p.dout, b, h, i), d);
    }
}

// dq_i = scale Σ_j P_ij (dout_i · v_j - D_i) k_j over the allowed keys of query row i.
__global__ void __launch_bounds__(kSimtThreads) local_bwd_fp32_dq_kernel(const LocalBwdParams p) {
    __shared__ __align__(16) float sq[kSimtWarps][kLocalSimtMaxHeadDim];
    __shared__ __align__(16) float sdo[kSimtWarps][kLocalSimtMaxHeadDim];
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const LocalBand band = p.band();
    const int L = p.L, d = p.d;
    const int64_t total = int64_t(p.B) * p.H * L;
    for (int64_t row_id = int64_t(blockIdx.x) * kSimtWarps + warp; row_id < total;
         row_id += int64_t(gridDim.x) * kSimtWarps) {
        const int64_t i = row_id % L, bh = row_id / L;
        const int64_t h = bh % p.H, b = bh / p.H, hk = h / p.group;
        stage_row(sq[warp], row_ptr(p.q, b, h, i), d, lane);
        stage_row(sdo[warp], row_ptr(p.dout, b, h, i), d, lane);
        const float lse = p.lse[row_id], dsum = p.dsum[row_id];
        const int64_t lo = band.key_lo(i), hi = band.key_hi(i);
        Acc acc;
        acc.zero();
        for (int64_t j0 = lo; j0 <= hi; j0 += 32) {
            const int64_t j = j0 + lane;
            float ds = 0.f;
            if (j <= hi) {
                const float s = dot_row(sq[warp], row_ptr(p.k, b, hk, j), d);
                const float dp = dot_row(sdo[warp], row_ptr(p.v, b, hk, j), d);
                ds = expf(__fmul_rn(s, p.scale) - lse) * (dp - dsum);
            }
            const int n = static_cast<int>(hi - j0 + 1 < 32 ? hi - j0 + 1 : 32);
            for (int jj = 0; jj < n; ++jj)
                acc.axpy(__shfl_sync(0xffffffffu, ds, jj), row_ptr(p.k, b, hk, j0 + jj), d, lane);
        }
        acc.store(row_ptr_w(p.dq, b, h, i), p.scale, d, lane);
    }
}

// dk_j = scale Σ_h Σ_i dS_ij q_i, dv_j = Σ_h Σ_i P_ij dout_i over the query heads h of kv head hk
// (ascending) and the allowed queries of key row j.
// __maxnreg__: with __launch_bounds__ alone ptxas (13.0, sm_90a) settles on 72 registers and spills.
__global__ void __maxnreg__(128) local_bwd_fp32_dkv_kernel(const LocalBwdParams p) {
    __shared__ __align__(16) float sk[kSimtWarps][kLocalSimtMaxHeadDim];
    __shared__ __align__(16) float sv[kSimtWarps][kLocalSimtMaxHeadDim];
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const LocalBand band = p.band();
    const int L = p.L, d = p.d;
    const int64_t total = int64_t(p.B) * p.Hkv * L;
    for (int64_t row_id = int64_t(blockIdx.x) * kSimtWarps + warp; row_id < total;
         row_id += int64_t(gridDim.x) * kSimtWarps) {
        const int64_t j = row_id % L, bh = row_id / L;
        const int64_t hk = bh % p.Hkv, b = bh / p.Hkv;
        stage_row(sk[warp], row_ptr(p.k, b, hk, j), d, lane);
        stage_row(sv[warp], row_ptr(p.v, b, hk, j), d, lane);
        const int64_t lo = band.query_lo(j), hi = band.query_hi(j);
        Acc dk, dv;
        dk.zero();
        dv.zero();
        for (int gi = 0; gi < p.group; ++gi) {
            const int64_t h = hk * p.group + gi;
            const int64_t stat_base = (b * p.H + h) * L;
            const float* q_h = row_ptr(p.q, b, h, 0);
            const float* do_h = row_ptr(p.dout, b, h, 0);
            const int64_t q_rs = p.q.row_stride, do_rs = p.dout.row_stride;
            for (int64_t i0 = lo; i0 <= hi; i0 += 32) {
                const int64_t i = i0 + lane;
                float pr = 0.f, ds = 0.f;
                if (i <= hi) {
                    const float s = dot_row(sk[warp], q_h + i * q_rs, d);
                    const float dp = dot_row(sv[warp], do_h + i * do_rs, d);
                    pr = expf(__fmul_rn(s, p.scale) - p.lse[stat_base + i]);
                    ds = pr * (dp - p.dsum[stat_base + i]);
                }
                const int n = static_cast<int>(hi - i0 + 1 < 32 ? hi - i0 + 1 : 32);
                const float* qr = q_h + i0 * q_rs;
                const float* dr = do_h + i0 * do_rs;
                // Blocked summation: a 32-row partial, then one add into the total. dk / dv of a
                // key sum up to group * L terms (32k at L = 4096, GQA 8); one running fp32 sum
                // over all of them lost ~5x more than PyTorch's blocked matmul reductions.
                Acc dk_part, dv_part;
                dk_part.zero();
                dv_part.zero();
                for (int ii = 0; ii < n; ++ii, qr += q_rs, dr += do_rs) {
                    dk_part.axpy(__shfl_sync(0xffffffffu, ds, ii), qr, d, lane);
                    dv_part.axpy(__shfl_sync(0xffffffffu, pr, ii), dr, d, lane);
                }
                dk.add(dk_part);
                dv.add(dv_part);
            }
        }
        dk.store(row_ptr_w(p.dk, b, hk, j), p.scale, d, lane);
        dv.store(row_ptr_w(p.dv, b, hk, j), 1.f, d, lane);
    }
}

unsigned simt_grid(int64_t rows) {
    const int64_t blocks = (rows + kSimtWarps - 1) / kSimtWarps;
    return static_cast<unsigned>(blocks < (int64_t(1) << 20) ? blocks : (int64_t(1) << 20));
}

}  // namespace

cudaError_t local_attn_fwd_fp32(const LocalFwdParams& p, cudaStream_t s) {
    if (p.d > kLocalSimtMaxHeadDim || p.d % 8 != 0) return cudaErrorInvalidValue;
    const int64_t rows = int64_t(p.B) * p.H * p.L;
    if (rows == 0) return cudaSuccess;
    local_fwd_fp32_kernel<<<simt_grid(rows), kSimtThreads, 0, s>>>(p);
    return cudaGetLastError();
}

cudaError_t local_attn_bwd_fp32(const LocalBwdParams& p, cudaStream_t s) {
    if (p.d > kLocalSimtMaxHeadDim || p.d % 8 != 0) return cudaErrorInvalidValue;
    const int64_t q_rows = int64_t(p.B) * p.H * p.L, kv_rows = int64_t(p.B) * p.Hkv * p.L;
    if (q_rows == 0 || kv_rows == 0) return cudaSuccess;
    cudaError_t err;
    const int64_t dsum_blocks = (q_rows + kSimtThreads - 1) / kSimtThreads;
    local_bwd_fp32_dsum_kernel<<<static_cast<unsigned>(dsum_blocks < (int64_t(1) << 20) ? dsum_blocks : (int64_t(1) << 20)),
                                 kSimtThreads, 0, s>>>(p);
    if ((err = cudaGetLastError()) != cudaSuccess) return err;
    local_bwd_fp32_dkv_kernel<<<simt_grid(kv_rows), kSimtThreads, 0, s>>>(p);
    if ((err = cudaGetLastError()) != cudaSuccess) return err;
    local_bwd_fp32_dq_kernel<<<simt_grid(q_rows), kSimtThreads, 0, s>>>(p);
    return cudaGetLastError();
}

}  // namespace fwa
