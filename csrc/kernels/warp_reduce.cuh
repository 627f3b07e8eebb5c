// Warp-level reductions over mma.sync C fragments shared by the backward kernels of both families.
#pragma once
#include "kernel_utils.cuh"

namespace fwa {

// Column sums of a warp's 16 x 64 C-fragment tile (kNT = 8 n8 tiles) over its 16 rows, once each
// lane has summed its two rows: v[2 nt + e] is the lane's value for column nt * 8 + 2 * t4 + e
// (t4 = lane & 3). A reduce-scatter over the 8 lanes g = lane >> 2 sharing t4 (14 shuffles instead
// of 48): lane (g, t4) returns the sums of columns g * 8 + 2 * t4 + {0, 1} in `out`. The order of
// the additions is fixed, so the result is bitwise reproducible. v is clobbered.
template <int kHalf, int kMask, int kN>
FWA_DEVICE void column_sums_step(float (&v)[kN], int lane) {
    static_assert(2 * kHalf <= kN, "the live values fit the array");
    // Lanes with this bit of g set keep the upper half of the live values, the others the lower
    // half; each sends the half it gives away to its partner.
    const bool upper = (lane & kMask) != 0;
#pragma unroll
    for (int i = 0; i < kHalf; ++i) {
        const float give = upper ? v[i] : v[i + kHalf];
        const float keep = upper ? v[i + kHalf] : v[i];
        v[i] = keep + __shfl_xor_sync(0xffffffffu, give, kMask);
    }
}
FWA_DEVICE void column_sums_over_g(float (&v)[16], float (&out)[2]) {
    const int lane = threadIdx.x & 31;
    column_sums_step<8, 16>(v, lane);
    column_sums_step<4, 8>(v, lane);
    column_sums_step<2, 4>(v, lane);
    out[0] = v[0];
    out[1] = v[1];
}

// A warp's per-query sums of P dP over its 16 keys, from a 16 x 64 tile of Pᵀ (keys are the rows,
// queries the columns): pdp[2 nt + e] is the lane's P dP for column nt * 8 + 2 * t4 + e summed over
// its two rows (clobbered). Lane (g, t4) writes columns g * 8 + 2 * t4 + {0, 1} of the warp's
// staging row sPdp + row_off.
FWA_DEVICE void stage_warp_pdp_sums(float (&pdp)[16], float* sPdp, int row_off) {
    const int lane = threadIdx.x & 31;
    const int off = row_off + (lane >> 2) * 8 + 2 * (lane & 3);
    float col[2];
    column_sums_over_g(pdp, col);
    *reinterpret_cast<float2*>(sPdp + off) = make_float2(col[0], col[1]);
}

// The window family's key-side part of D_i = sum_j P_ij dP_ij / sum_j P_ij: stage_warp_pdp_sums,
// and the same for the sums of P (p: the C fragment of Pᵀ) into sPsum + row_off.
FWA_DEVICE void stage_warp_column_sums(float (&pdp)[16], const float (&p)[8][4], float* sPdp, float* sPsum,
                                       int row_off) {
    stage_warp_pdp_sums(pdp, sPdp, row_off);
    float psum[16];
#pragma unroll
    for (int nt = 0; nt < 8; ++nt) {
        psum[2 * nt] = p[nt][0] + p[nt][2];
        psum[2 * nt + 1] = p[nt][1] + p[nt][3];
    }
    stage_warp_pdp_sums(psum, sPsum, row_off);
}

// Column `off` of kWarps staging rows `stride` floats apart (stage_warp_pdp_sums), added in warp
// order over the CTA's keys: bitwise reproducible.
template <int kWarps>
FWA_DEVICE float sum_staged_pdp(const float* sPdp, int off, int stride) {
    float sum = sPdp[off];
#pragma unroll
    for (int w = 1; w < kWarps; ++w) sum += sPdp[off + w * stride];
    return sum;
}

// (sum of P dP, sum of P) of column `off` (stage_warp_column_sums), each added in warp order.
template <int kWarps>
FWA_DEVICE float2 sum_staged_columns(const float* sPdp, const float* sPsum, int off, int stride) {
    float2 sum = make_float2(sPdp[off], sPsum[off]);
#pragma unroll
    for (int w = 1; w < kWarps; ++w) {
        sum.x += sPdp[off + w * stride];
        sum.y += sPsum[off + w * stride];
    }
    return sum;
}

}  // namespace fwa
