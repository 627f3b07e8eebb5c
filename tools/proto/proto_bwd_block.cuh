// The first half of one (64-key block, 64-query block) step of the N = 256, d = 32 key-side backward
// prototypes (wgmma_bwd_kv_n256_d32.cu, cluster_bwd_n256_d32.cu), shared by both: Sᵀ = k qᵀ and
// dPᵀ = v doutᵀ on wgmma, then Pᵀ = exp2(Sᵀ scale_log2 + bm - lse) and dSᵀ = Pᵀ (dPᵀ - D) in
// registers, packed to bf16 as the register A operands of the dv / dk products.
#pragma once
#include <cuda_bf16.h>

#include "kernels/wgmma.cuh"
#include "proto_sw64.cuh"

namespace proto {

// sK, sV: the key block's 64-row tiles; sQ, sO: the window's 256-row q / dout tiles (64-byte
// swizzle); lse_s, dsum_s: the window's rows; sBm: the strip [query][key of the block] at pitch
// bm_pitch. Thread's element (nt, e): key row warp * 16 + g + 8 (e >> 1), query qb * 64 + nt * 8 +
// 2 t4 + (e & 1). kDbias: also db (this block pair's dSᵀ sums, fp32) += dSᵀ.
template <bool kDbias>
__device__ __forceinline__ void kv_block_p_ds(uint32_t sK, uint32_t sV, uint32_t sQ, uint32_t sO, const float* lse_s,
                                              const float* dsum_s, const float* sBm, int bm_pitch, int qb, int warp,
                                              int g, int t4, float scale_log2, float (&db)[8][4], uint32_t (&pa)[4][4],
                                              uint32_t (&da)[4][4]) {
    using fwa::ElementTraits;
    float s[8][4], dp[8][4];
    fwa::wgmma_fence();
#pragma unroll
    for (int ks = 0; ks < 2; ++ks) fwa::wgmma_m64n64k16_ss_bf16(s, kmaj_desc(sK, ks), kmaj_desc(sQ + qb * 64 * 64, ks), ks > 0);
#pragma unroll
    for (int ks = 0; ks < 2; ++ks) fwa::wgmma_m64n64k16_ss_bf16(dp, kmaj_desc(sV, ks), kmaj_desc(sO + qb * 64 * 64, ks), ks > 0);
    fwa::wgmma_commit();
    fwa::wgmma_wait<0>();
    fwa::wgmma_fence_operand(s);
    fwa::wgmma_fence_operand(dp);
#pragma unroll
    for (int nt = 0; nt < 8; ++nt) {
        const int qc = qb * 64 + nt * 8 + 2 * t4;
        const float l0 = lse_s[qc], l1 = lse_s[qc + 1], d0 = dsum_s[qc], d1 = dsum_s[qc + 1];
#pragma unroll
        for (int e = 0; e < 4; ++e) {
            const int key = warp * 16 + g + 8 * (e >> 1), qq = qc + (e & 1);
            const float x = fmaf(s[nt][e], scale_log2, sBm[qq * bm_pitch + key]) - ((e & 1) ? l1 : l0);
            const float pr = fwa::fast_exp2(x);
            s[nt][e] = pr;
            dp[nt][e] = pr * (dp[nt][e] - ((e & 1) ? d1 : d0));
            if constexpr (kDbias) db[nt][e] += dp[nt][e];
        }
    }
#pragma unroll
    for (int kk = 0; kk < 4; ++kk) {
        pa[kk][0] = ElementTraits<__nv_bfloat16>::pack(s[2 * kk][0], s[2 * kk][1]);
        pa[kk][1] = ElementTraits<__nv_bfloat16>::pack(s[2 * kk][2], s[2 * kk][3]);
        pa[kk][2] = ElementTraits<__nv_bfloat16>::pack(s[2 * kk + 1][0], s[2 * kk + 1][1]);
        pa[kk][3] = ElementTraits<__nv_bfloat16>::pack(s[2 * kk + 1][2], s[2 * kk + 1][3]);
        da[kk][0] = ElementTraits<__nv_bfloat16>::pack(dp[2 * kk][0], dp[2 * kk][1]);
        da[kk][1] = ElementTraits<__nv_bfloat16>::pack(dp[2 * kk][2], dp[2 * kk][3]);
        da[kk][2] = ElementTraits<__nv_bfloat16>::pack(dp[2 * kk + 1][0], dp[2 * kk + 1][1]);
        da[kk][3] = ElementTraits<__nv_bfloat16>::pack(dp[2 * kk + 1][2], dp[2 * kk + 1][3]);
    }
}

}  // namespace proto
