// Host side shared by the N = 256, d = 32 backward prototypes (wgmma_bwd_kv_n256_d32.cu,
// wgmma_bwd_q_n256_d32.cu), on top of proto_harness.h's forward problem: a random dout, the
// backward's row inputs lse (log2 units) and D = rowsum(dout ∘ out) computed on the GPU in fp32 by
// a plain kernel (as the forward and the preprocess kernel would give them), and the float64
// reference P and dS of one window.
#pragma once
#include "proto_harness.h"

namespace proto {

struct BwdData {
    std::vector<__nv_bfloat16> hdo;   // (W, N, D)
    __nv_bfloat16* d_do = nullptr;
    float *d_lse2 = nullptr, *d_dsum = nullptr;   // (W, N)
};

// Per (window, row), one thread: lse2 = log2 Σ 2^(S2) over the row's log2 logits S2 = scale_log2
// q·k + bm, and D = rowsum(dout ∘ out) with out = softmax · v.
__global__ void lse_dsum_kernel(const __nv_bfloat16* q, const __nv_bfloat16* k, const __nv_bfloat16* v,
                                const __nv_bfloat16* dout, const float* bm, int W, float scale_log2, float* lse2,
                                float* dsum) {
    const int64_t row = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
    if (row >= int64_t(W) * kN) return;
    const int64_t w = row / kN;
    const int i = static_cast<int>(row % kN);
    float qf[kD];
    for (int c = 0; c < kD; ++c) qf[c] = __bfloat162float(q[row * kD + c]);
    float mx = -INFINITY, l = 0.f, o[kD] = {};
    for (int jk = 0; jk < kN; ++jk) {
        const __nv_bfloat16* kr = k + (w * kN + jk) * kD;
        float acc = 0.f;
        for (int c = 0; c < kD; ++c) acc = fmaf(qf[c], __bfloat162float(kr[c]), acc);
        const float x = fmaf(acc, scale_log2, bm[i * kN + jk]);
        const float mn = fmaxf(mx, x);
        const float corr = exp2f(mx - mn), e = exp2f(x - mn);
        l = l * corr + e;
        const __nv_bfloat16* vr = v + (w * kN + jk) * kD;
        for (int c = 0; c < kD; ++c) o[c] = fmaf(o[c], corr, e * __bfloat162float(vr[c]));
        mx = mn;
    }
    float s = 0.f;
    for (int c = 0; c < kD; ++c) s = fmaf(__bfloat162float(dout[row * kD + c]), o[c] / l, s);
    lse2[row] = mx + log2f(l);
    dsum[row] = s;
}

inline BwdData make_bwd_data(const Problem& p) {
    BwdData b;
    const size_t elems = p.hq.size();
    b.hdo.resize(elems);
    uint64_t st = 987654321;
    for (auto& x : b.hdo) x = __float2bfloat16(lcg_uniform(st));
    check(cudaMalloc(&b.d_do, elems * 2), "malloc");
    check(cudaMalloc(&b.d_lse2, size_t(p.W) * kN * 4), "malloc");
    check(cudaMalloc(&b.d_dsum, size_t(p.W) * kN * 4), "malloc");
    check(cudaMemcpy(b.d_do, b.hdo.data(), elems * 2, cudaMemcpyHostToDevice), "copy");
    lse_dsum_kernel<<<(p.W * kN + 127) / 128, 128>>>(p.dq, p.dk, p.dv, b.d_do, p.dbm, p.W, p.scale * float(kLog2e),
                                                    b.d_lse2, b.d_dsum);
    check(cudaGetLastError(), "lse launch");
    check(cudaDeviceSynchronize(), "lse run");
    return b;
}

inline double bf64(__nv_bfloat16 x) { return double(__bfloat162float(x)); }

// float64 P = softmax(S) and dS = P (dP - D) (gradient of the natural-unit logits) of window wi,
// row-major N x N each.
inline void ref_p_ds(const Problem& p, const BwdData& b, int wi, std::vector<double>& P, std::vector<double>& dS) {
    const size_t o0 = size_t(wi) * kN * kD;
    P.assign(size_t(kN) * kN, 0.0);
    dS.assign(size_t(kN) * kN, 0.0);
    for (int i = 0; i < kN; ++i) {
        double mx = -1e300;
        for (int jk = 0; jk < kN; ++jk) {
            double acc = 0.0;
            for (int c = 0; c < kD; ++c) acc += bf64(p.hq[o0 + i * kD + c]) * bf64(p.hk[o0 + jk * kD + c]);
            P[i * kN + jk] = acc * p.scale + double(p.hbm[i * kN + jk]) / kLog2e;
            mx = std::max(mx, P[i * kN + jk]);
        }
        double l = 0.0;
        for (int jk = 0; jk < kN; ++jk) l += (P[i * kN + jk] = std::exp(P[i * kN + jk] - mx));
        for (int jk = 0; jk < kN; ++jk) P[i * kN + jk] /= l;
        double D = 0.0;
        for (int c = 0; c < kD; ++c) {
            double o = 0.0;
            for (int jk = 0; jk < kN; ++jk) o += P[i * kN + jk] * bf64(p.hv[o0 + jk * kD + c]);
            D += bf64(b.hdo[o0 + i * kD + c]) * o;
        }
        for (int jk = 0; jk < kN; ++jk) {
            double dp = 0.0;
            for (int c = 0; c < kD; ++c) dp += bf64(b.hdo[o0 + i * kD + c]) * bf64(p.hv[o0 + jk * kD + c]);
            dS[i * kN + jk] = P[i * kN + jk] * (dp - D);
        }
    }
}

// The backward prototypes' check against float64, printed: max |err| (NaN counts as 1e30) and max
// |ref| of each of dq, dk, dv given (fp32 (W, N, D) host copies; nullptr: not produced) over windows
// 0, 1, W / 2 and W - 1, and for W <= 128 of the n_parts (N, N) dbias partials summed against the
// float64 sum of dS over all windows. References: dq = scale dS k, dk = scale dSᵀ q, dv = Pᵀ dout.
inline void check_bwd(const Problem& p, const BwdData& b, const std::vector<float>* dq, const std::vector<float>* dk,
                      const std::vector<float>* dv, const std::vector<float>* part, int n_parts) {
    const int W = p.W;
    const std::vector<float>* got[3] = {dq, dk, dv};
    const char* names[3] = {"dq", "dk", "dv"};
    double err[3] = {0, 0, 0}, mx[3] = {0, 0, 0};
    std::vector<double> P, dS, dbias_ref(size_t(kN) * kN, 0.0);
    const bool full = part != nullptr && W <= 128;
    for (int wi = 0; wi < W; ++wi) {
        const bool check_w = wi == 0 || wi == 1 || wi == W / 2 || wi == W - 1;
        if (!full && !check_w) continue;
        ref_p_ds(p, b, wi, P, dS);
        if (full)
            for (size_t e = 0; e < dS.size(); ++e) dbias_ref[e] += dS[e];
        if (!check_w) continue;
        const size_t o0 = size_t(wi) * kN * kD;
        for (int i = 0; i < kN; ++i)
            for (int c = 0; c < kD; ++c) {
                double r[3] = {0.0, 0.0, 0.0};
                for (int j = 0; j < kN; ++j) {
                    r[0] += dS[i * kN + j] * bf64(p.hk[o0 + j * kD + c]);
                    // i as the key: dk_i = Σ_q dS[q][i] q_q, dv_i = Σ_q P[q][i] dout_q
                    r[1] += dS[j * kN + i] * bf64(p.hq[o0 + j * kD + c]);
                    r[2] += P[j * kN + i] * bf64(b.hdo[o0 + j * kD + c]);
                }
                r[0] *= p.scale;
                r[1] *= p.scale;
                for (int t = 0; t < 3; ++t) {
                    if (got[t] == nullptr) continue;
                    const double g = (*got[t])[o0 + i * kD + c];
                    err[t] = std::max(err[t], std::isnan(g) ? 1e30 : std::fabs(g - r[t]));
                    mx[t] = std::max(mx[t], std::fabs(r[t]));
                }
            }
    }
    // P and dS enter the products as bf16 (as in the product's kernels): ~3e-3 relative
    for (int t = 0; t < 3; ++t)
        if (got[t] != nullptr)
            std::printf("%s: max |err| %.3e (max |ref| %.3e) over 4 windows\n", names[t], err[t], mx[t]);
    if (full) {
        double err_b = 0, max_b = 0;
        for (size_t e = 0; e < dbias_ref.size(); ++e) {
            double g = 0.0;
            for (int c = 0; c < n_parts; ++c) g += (*part)[size_t(c) * kN * kN + e];
            err_b = std::max(err_b, std::isnan(g) ? 1e30 : std::fabs(g - dbias_ref[e]));
            max_b = std::max(max_b, std::fabs(dbias_ref[e]));
        }
        // dS is fp32 (P from the fp32 logits): ~1e-6 relative per window, summed over W
        std::printf("dbias (partials summed): max |err| %.3e (max |ref| %.3e) over %d windows\n", err_b, max_b, W);
    }
}

}  // namespace proto
