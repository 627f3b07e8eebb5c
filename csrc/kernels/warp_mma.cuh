// Warp-level building blocks shared by the forward and backward kernels. Each warp owns 16 rows
// of a product; fragments follow the mma.m16n8k16 layouts described in kernel_utils.cuh.
#pragma once
#include <type_traits>

#include "tile_io.cuh"

namespace fwa {

template <int kNT> FWA_DEVICE void zero_acc(float (&acc)[kNT][4]) {
#pragma unroll
    for (int i = 0; i < kNT; ++i) acc[i][0] = acc[i][1] = acc[i][2] = acc[i][3] = 0.f;
}

// acc (16 x 64) += A · Bᵀ: A = rows a_row0..a_row0+15 of the row-major tile tA (kHeadDim
// columns), B = the 64 rows of tile tB stored [n][k] (e.g. S = q kᵀ, dP = dout vᵀ). on_a(a) sees
// every A fragment once (e.g. to accumulate row norms).
template <int kHeadDim, typename Element, typename OnA>
FWA_DEVICE void warp_mma_abt(float (&acc)[kTileN / 8][4], const Element* tA, int a_row0,
                             const Element* tB, int lane, OnA&& on_a) {
#pragma unroll
    for (int ks = 0; ks < kHeadDim / 16; ++ks) {
        uint32_t a[4];
        load_a_frag<kHeadDim>(tA, a_row0, ks * 16, lane, a);
        on_a(a);
#pragma unroll
        for (int np = 0; np < kTileN / 16; ++np) {
            uint32_t b[4];
            load_b_frag_nk<kHeadDim>(tB, np * 16, ks * 16, lane, b);
            mma_16816<Element>(acc[2 * np], a, b[0], b[1]);
            mma_16816<Element>(acc[2 * np + 1], a, b[2], b[3]);
        }
    }
}
template <int kHeadDim, typename Element>
FWA_DEVICE void warp_mma_abt(float (&acc)[kTileN / 8][4], const Element* tA, int a_row0,
                             const Element* tB, int lane) {
    warp_mma_abt<kHeadDim>(acc, tA, a_row0, tB, lane, [](const uint32_t (&)[4]) {});
}

// acc (16 x kHeadDim) += P · B: P (16 x 64) given as the C fragments of an earlier product,
// optionally scaled per column j by col_scale[j] (shared memory; with kScaleGroupPitch > 0 in
// groups of 4 columns kScaleGroupPitch floats apart, col_scale[(j / 4) * kScaleGroupPitch + j % 4]),
// rounded to Element; B = the 64 x kHeadDim tile tB stored [k][n] (e.g. out = P v, dq' = dS k,
// dv = Pᵀ dout).
template <int kHeadDim, typename Element, int kScaleGroupPitch = 0>
FWA_DEVICE void warp_mma_pb(float (&acc)[kHeadDim / 8][4], const float (&p)[kTileN / 8][4],
                            const float* col_scale, const Element* tB, int lane) {
    using Tr = ElementTraits<Element>;
    const int t4 = lane & 3;
#pragma unroll
    for (int kk = 0; kk < kTileN / 16; ++kk) {
        float f[4] = {1.f, 1.f, 1.f, 1.f};
        if (col_scale != nullptr) {
            const int j0 = kk * 16 + 2 * t4;
            const float2 f0 = *reinterpret_cast<const float2*>(col_scale + grouped4_index<kScaleGroupPitch>(j0));
            const float2 f1 = *reinterpret_cast<const float2*>(col_scale + grouped4_index<kScaleGroupPitch>(j0 + 8));
            f[0] = f0.x; f[1] = f0.y; f[2] = f1.x; f[3] = f1.y;
        }
        uint32_t a[4];
        a[0] = Tr::pack(p[2 * kk][0] * f[0], p[2 * kk][1] * f[1]);
        a[1] = Tr::pack(p[2 * kk][2] * f[0], p[2 * kk][3] * f[1]);
        a[2] = Tr::pack(p[2 * kk + 1][0] * f[2], p[2 * kk + 1][1] * f[3]);
        a[3] = Tr::pack(p[2 * kk + 1][2] * f[2], p[2 * kk + 1][3] * f[3]);
#pragma unroll
        for (int dd = 0; dd < kHeadDim / 16; ++dd) {
            uint32_t b[4];
            load_b_frag_kn<kHeadDim>(tB, kk * 16, dd * 16, lane, b);
            mma_16816<Element>(acc[2 * dd], a, b[0], b[1]);
            mma_16816<Element>(acc[2 * dd + 1], a, b[2], b[3]);
        }
    }
}

// Writes the gradient rows a warp holds in `acc` (rows lrow0 + g and lrow0 + g + 8 of a tile):
//   V1 / plain:  f · acc
//   V2 (cosine): f · inv · (acc - x̂ <x̂, acc>), x̂ = inv · x, x the input rows,
// the backward of x̂ = x / max(||x||, eps) scaled by f (the logit scale); the projection is
// dropped where the norm was clamped (norm_projection). Rows >= N and columns >= d are skipped.
// x_pair(r, i): the packed pair of x at row lrow0 + g + 8 r, columns i * 8 + 2 t4 and + 1 (read
// only for V2). Out: Element, or float (an fp32 part of the gradient, summed later).
template <int kHeadDim, typename Element, typename Out, typename XPair>
FWA_DEVICE void warp_store_grad_rows_x(const float (&acc)[kHeadDim / 8][4], bool cosine, XPair&& x_pair,
                                       const float (&inv)[2], float f, Out* dst, int64_t row_stride, int grow0,
                                       int N, int d, int lane) {
    static_assert(std::is_same<Out, Element>::value || std::is_same<Out, float>::value, "Element or fp32 rows");
    using Tr = ElementTraits<Element>;
    constexpr int kDT = kHeadDim / 8;
    const int g = lane >> 2, t4 = lane & 3;
#pragma unroll
    for (int r = 0; r < 2; ++r) {
        float dot = 0.f;
        float xh[kDT][2];
        if (cosine) {
#pragma unroll
            for (int i = 0; i < kDT; ++i) {
                const float2 x = Tr::unpack(x_pair(r, i));
                xh[i][0] = x.x * inv[r];
                xh[i][1] = x.y * inv[r];
                dot = fmaf(xh[i][0], acc[i][2 * r], fmaf(xh[i][1], acc[i][2 * r + 1], dot));
            }
            dot = quad_sum(dot) * norm_projection(inv[r]);
        }
        const float fr = cosine ? f * inv[r] : f;
        const int row = grow0 + g + 8 * r;
        if (row >= N) continue;
#pragma unroll
        for (int i = 0; i < kDT; ++i) {
            const int col = i * 8 + 2 * t4;
            if (col >= d) continue;
            float v0 = acc[i][2 * r], v1 = acc[i][2 * r + 1];
            if (cosine) {
                v0 -= xh[i][0] * dot;
                v1 -= xh[i][1] * dot;
            }
            if constexpr (std::is_same<Out, float>::value)
                *reinterpret_cast<float2*>(dst + int64_t(row) * row_stride + col) = make_float2(v0 * fr, v1 * fr);
            else
                *reinterpret_cast<uint32_t*>(dst + int64_t(row) * row_stride + col) = Tr::pack(v0 * fr, v1 * fr);
        }
    }
}

// The pair x_pair(r, i) of warp_store_grad_rows_x read from tile tX (kSw64: a 64-byte-swizzled
// tile, sw64_offset, head dim 32; else a padded row-major one).
template <int kHeadDim, bool kSw64, typename Element>
FWA_DEVICE uint32_t grad_rows_x_pair(const Element* tX, int lrow0, int r, int i, int lane) {
    const int lrow = lrow0 + (lane >> 2) + 8 * r, t4 = lane & 3;
    if constexpr (kSw64)
        return *reinterpret_cast<const uint32_t*>(reinterpret_cast<const unsigned char*>(tX) + sw64_offset(lrow, i) + 4 * t4);
    else
        return *reinterpret_cast<const uint32_t*>(tX + lrow * TileShape<kHeadDim>::kPitch + i * 8 + 2 * t4);
}

// warp_store_grad_rows_x with x the rows lrow0 + g, lrow0 + g + 8 of tile tX.
template <int kHeadDim, bool kSw64 = false, typename Element, typename Out>
FWA_DEVICE void warp_store_grad_rows(const float (&acc)[kHeadDim / 8][4], bool cosine,
                                     const Element* tX, int lrow0, const float (&inv)[2], float f,
                                     Out* dst, int64_t row_stride, int grow0, int N, int d,
                                     int lane) {
    warp_store_grad_rows_x<kHeadDim, Element>(
        acc, cosine, [&](int r, int i) { return grad_rows_x_pair<kHeadDim, kSw64>(tX, lrow0, r, i, lane); }, inv, f, dst,
        row_stride, grow0, N, d, lane);
}

// A warp computing 16 rows (queries) against 16-key blocks of 64-byte-swizzled tiles on mma.sync
// m16n8k16, with the window's keys split over n_warps such warps (the wgmma forward's row tail,
// RowTailWarp; the backward query side's folded tail rows, bwd_q_wg_kernel.cuh): the lanes'
// ldmatrix rows and chunks, and this warp's key blocks.
struct TailWarpLanes {
    int g, t4;
    // ldmatrix rows: A (q, dout) and the transposed B (v of P v, k of dS k): matrices (rows 0-7 |
    // 8-15) x (chunk 0 | 1) in that order; B (k, v as n): (keys 0-7, chunk 0 | 1), then keys 8-15
    int a_r, a_j, b_r, b_j;
    // this warp's 16-key blocks: blk0 .. blk0 + n_blk - 1 of the ceil(N / 16) that hold keys (split
    // by N, not by the last key block's width: with FWA_WINDOW_WGMMA_TAIL=0 the same sums, bitwise;
    // 9 at N = 129..144: 2, 2, 2, 3 over 4 warps)
    int blk0, n_blk;
    FWA_DEVICE TailWarpLanes(int warp, int lane, int N, int n_warps)
        : g(lane >> 2), t4(lane & 3), a_r((lane & 7) + ((lane >> 3) & 1) * 8), a_j(lane >> 4),
          b_r((lane & 7) + ((lane >> 4) & 1) * 8), b_j((lane >> 3) & 1) {
        const int n_blocks = (N + 15) / 16;
        blk0 = warp * n_blocks / n_warps;
        n_blk = (warp + 1) * n_blocks / n_warps - blk0;
    }
};

}  // namespace fwa
