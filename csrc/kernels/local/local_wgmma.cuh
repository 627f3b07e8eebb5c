// Shared pieces of the sliding-window kernels' Hopper warpgroup-MMA (wgmma, sm_90a) paths: the
// 128-byte-swizzled shared-memory tiles and their descriptors (all kernels), and the products of
// the backward kernels, one warpgroup (the CTA's 4 warps; warp w owns rows 16 w .. 16 w + 15) per
// 64-row tile (the forward issues the same instructions itself, see local_fwd_wgmma_kernel.cuh):
//   wg_abt_issue:  acc (64 x 64) = A Bᵀ, A and B 64 x kHeadDim tiles (K-major), issued only;
//   wg_pb_issue:   acc (64 x kHeadDim) += A B, A the packed 16-bit register operand, issued only;
//   wg_pb2:        acc (64 x kHeadDim) += P B, twice, P (64 x 64) the fp32 C fragments of an
//                  earlier product (rounded to Element: the register A operand), B a
//                  64 x kHeadDim tile read [k][n] (MN-major).
// Each thread's accumulators are laid out as the mma.sync C fragments of its warp's 16 rows, so
// the kernels' softmax and gradient code is shared with their mma.sync paths.
#pragma once
#include <type_traits>

#include "../wgmma.cuh"
#include "local_attn.h"

namespace fwa {

// 128-byte swizzle layout of a 64 x kHeadDim tile: 64-column panels of 64 rows x 128 bytes (8 KB,
// 1024-byte aligned), the 16-byte chunk j of row r at chunk position j ^ (r % 8) of its row: the
// byte offset of chunk j (0 .. kHeadDim / 8 - 1) of row r.
FWA_DEVICE uint32_t sw128_tile_offset(int r, int j) {
    return uint32_t((j >> 3) * (kTileM * 128) + r * 128 + (((j & 7) ^ (r & 7)) << 4));
}
// Async copy of rows [row0, row0 + 64) by kThreads threads (tid < kThreads): each thread keeps one
// column chunk and steps kRowStep rows (a multiple of 8, so its swizzled position is fixed); where
// kRowStep does not divide 64 (kThreads = 384) the last step is partial. Rows >= L and columns >= d
// are zero-filled.
template <typename Element, int kHeadDim, int kThreads = kNumThreads>
FWA_DEVICE void load_tile_sw128_async(uint32_t tile, const Element* src, int64_t row_stride, int row0,
                                      int L, int d, int tid) {
    constexpr int kCPR = kHeadDim / 8;
    static_assert(kHeadDim == 64 || kHeadDim == 128, "64-column panels");
    static_assert(kThreads % (8 * kCPR) == 0, "whole 8-row groups per step");
    constexpr int kRowStep = kThreads / kCPR;
    constexpr int kIters = (kTileM + kRowStep - 1) / kRowStep;
    const int r = tid / kCPR, j = tid % kCPR;
    const uint32_t s = tile + sw128_tile_offset(r, j);
    const bool col_ok = j * 8 < d;
    const Element* g = src + int64_t(row0 + r) * row_stride + j * 8;
    const int64_t g_step = int64_t(kRowStep) * row_stride;
#pragma unroll
    for (int i = 0; i < kIters; ++i) {
        if (kTileM % kRowStep != 0 && r + i * kRowStep >= kTileM) break;
        const bool valid = col_ok && row0 + r + i * kRowStep < L;
        cp_async_16(s + uint32_t(i * kRowStep * 128), valid ? g + i * g_step : src, valid ? 16 : 0);
    }
}

// The same copy of a tile whose 64 rows are all < L, at d = kHeadDim (no zero fill): `rows` points
// at the tile's first row. Each thread's swizzled offset and row offset depend only on tid and
// the stride, so a kernel issuing it per step keeps them across steps (the predicated form
// re-derived rows, predicates and 64-bit addresses per copy: ~290 of the one-warpgroup d = 128
// forward's SASS instructions per step and warp, for 16 copies).
template <typename Element, int kHeadDim, int kThreads = kNumThreads>
FWA_DEVICE void load_full_tile_sw128_async(uint32_t tile, const Element* rows, int64_t row_stride, int tid) {
    constexpr int kCPR = kHeadDim / 8;
    constexpr int kRowStep = kThreads / kCPR;
    constexpr int kIters = (kTileM + kRowStep - 1) / kRowStep;
    const int r = tid / kCPR, j = tid % kCPR;
    const uint32_t s = tile + sw128_tile_offset(r, j);
    const Element* g = rows + int64_t(r) * row_stride + j * 8;
    const int64_t g_step = int64_t(kRowStep) * row_stride;
#pragma unroll
    for (int i = 0; i < kIters; ++i) {
        if (kTileM % kRowStep != 0 && r + i * kRowStep >= kTileM) break;
        cp_async_16_full(s + uint32_t(i * kRowStep * 128), g + i * g_step);
    }
}

// A streamed tile's copy in the form it allows: load_full_tile_sw128_async where its 64 rows are
// all < L at d = kHeadDim (every tile of a band but those reaching past L; the condition is
// uniform over the copying threads), load_tile_sw128_async otherwise. `src`: the slice's row 0.
// (Session 60, H200: the small-grid kernels' copies in the full form, win(256,256) B1 H4 L4096
// d128 forward 24.5 -> 22.0 us, query side 47.6 -> 43.9 us.)
template <typename Element, int kHeadDim, int kThreads = kNumThreads>
FWA_DEVICE void load_streamed_tile_sw128_async(uint32_t tile, const Element* src, int64_t row_stride, int row0, int L,
                                               int d, int tid) {
    if (row0 + kTileM <= L && d == kHeadDim)
        load_full_tile_sw128_async<Element, kHeadDim, kThreads>(tile, src + int64_t(row0) * row_stride, row_stride, tid);
    else
        load_tile_sw128_async<Element, kHeadDim, kThreads>(tile, src, row_stride, row0, L, d, tid);
}

// Descriptors of the swizzled tiles (offsets measured on the H100, session 9): q / k are K-major,
// 8-row groups 1024 bytes apart (the leading offset is unused); a k16 step is 32 bytes within a
// panel. v is MN-major: 64-column panels 8 KB apart (leading), 8-key groups 1024 bytes (stride);
// a k16 step (16 keys) is 2048 bytes.
// Built as wgmma_desc(tile + off, lbo, sbo, 1) but from the tile's 14-bit address field, which the
// compiler computes once per tile: a k16 step's descriptor is then one integer add of a constant
// (off >> 4 plus the leading offset's field) instead of an add, mask, shift and or per wgmma. No
// carry leaves the field: shared addresses and offsets stay below 256 KB.
FWA_DEVICE uint64_t sw128_desc(uint32_t tile, uint32_t off, uint32_t lbo, uint32_t sbo) {
    const uint32_t lo = ((tile & 0x3FFFFu) >> 4) + ((off >> 4) | (((lbo & 0x3FFFFu) >> 4) << 16));
    const uint32_t hi = ((sbo & 0x3FFFFu) >> 4) | (1u << 30);   // 128-byte swizzle: mode 1, bits 62-63
    return (uint64_t(hi) << 32) | lo;
}
FWA_DEVICE uint64_t qk_desc(uint32_t tile, int ks) {
    return sw128_desc(tile, (ks >> 2) * (kTileM * 128) + (ks & 3) * 32, 16, 1024);
}
FWA_DEVICE uint64_t v_desc(uint32_t tile, int kk) { return sw128_desc(tile, kk * 2048, kTileM * 128, 1024); }
// [v | 1] at d = 64 (wgmma m64n72k16): k16 step kk of the one-panel v tile at `tile`, its second
// panel (columns 64..71) the 16 x 64 tile of ones at `ones` (1024-aligned, after every v tile: the
// leading byte offset, ones - tile - 2048 kk, stays positive and below 256 KB). With the offset
// in the add, a step's descriptor is the first one's low word plus a constant.
FWA_DEVICE uint64_t v1_desc(uint32_t tile, uint32_t ones, int kk) {
    const uint64_t d0 = sw128_desc(tile, 0, ones - tile, 1024);
    const uint32_t step = uint32_t(kk) * (2048u >> 4);
    return (d0 & 0xFFFFFFFF00000000ull) | uint32_t(uint32_t(d0) + step - (step << 16));
}

// The products alone (no fence, commit or wait; the kernels and wg_pb2 below add those).
template <typename Element, int kHeadDim>
FWA_DEVICE void wg_abt_issue(float (&acc)[kTileN / 8][4], uint32_t tA, uint32_t tB) {
#pragma unroll
    for (int ks = 0; ks < kHeadDim / 16; ++ks) wgmma_s64<Element>(acc, qk_desc(tA, ks), qk_desc(tB, ks), ks > 0);
}
// P (64 x 8 kNT fp32 C fragments) rounded to Element as the register A operands of kNT / 2 k16
// steps.
template <typename Element, int kNT>
FWA_DEVICE void pack_p16(const float (&p)[kNT][4], uint32_t (&a)[kNT / 2][4]) {
    using Tr = ElementTraits<Element>;
#pragma unroll
    for (int kk = 0; kk < kNT / 2; ++kk) {
        a[kk][0] = Tr::pack(p[2 * kk][0], p[2 * kk][1]);
        a[kk][1] = Tr::pack(p[2 * kk][2], p[2 * kk][3]);
        a[kk][2] = Tr::pack(p[2 * kk + 1][0], p[2 * kk + 1][1]);
        a[kk][3] = Tr::pack(p[2 * kk + 1][2], p[2 * kk + 1][3]);
    }
}
// Two 16-bit ones, packed: the operand of ones behind the tensor-core row sums of P (p16_row_sums
// and the d = 64 warp-specialised forward's [v | 1] tile).
template <typename Element> constexpr uint32_t packed_ones() {
    return std::is_same<Element, __nv_bfloat16>::value ? 0x3f803f80u : 0x3c003c00u;
}

// The row sums of P as the P v product sees it (pack_p16's 16-bit A operands), on the tensor cores:
// A x ones by mma.sync m16n8k16, whose A fragment is the warp's 16 rows of the wgmma register A
// operand, in fp32. Every thread of a quad gets the whole sums of its rows g and g + 8 (no quad
// reduction). The wgmma forwards at 64-key steps and the d = 128 warp-specialised one normalise out
// by them (local_exp_row's row_sum16 in the mma.sync one; the d = 64 warp-specialised forward takes
// them from its P [v | 1] product, local_fwd_ws_ones); summing the rounded P with FADDs instead
// cost the d = 64 forward 10-20 % (H200, session 56).
// Added to the running sums row_sum16 after their rescale by corr (1 where the step keeps the max).
template <typename Element, int kK>
FWA_DEVICE void p16_row_sums(const uint32_t (&a)[kK][4], const float (&corr)[2], float (&row_sum16)[2]) {
    const uint32_t one2 = packed_ones<Element>();
    float c[4] = {0.f, 0.f, 0.f, 0.f};
#pragma unroll
    for (int kk = 0; kk < kK; ++kk) mma_16816<Element>(c, a[kk], one2, one2);
    row_sum16[0] = row_sum16[0] * corr[0] + c[0];
    row_sum16[1] = row_sum16[1] * corr[1] + c[2];
}

template <typename Element, int kHeadDim>
FWA_DEVICE void wg_pb_issue(float (&acc)[kHeadDim / 8][4], const uint32_t (&a)[kTileN / 16][4], uint32_t tB) {
#pragma unroll
    for (int kk = 0; kk < kTileN / 16; ++kk) wgmma_pv<Element, kHeadDim>(acc, a[kk], v_desc(tB, kk), 1);
}

// acc1 += P1 B1 and acc2 += P2 B2, one wait. (P is packed before the fence: packing between the
// wgmmas makes ptxas insert a warpgroup.arrive before each.)
template <typename Element, int kHeadDim>
FWA_DEVICE void wg_pb2(float (&acc1)[kHeadDim / 8][4], const float (&p1)[kTileN / 8][4], uint32_t tB1,
                       float (&acc2)[kHeadDim / 8][4], const float (&p2)[kTileN / 8][4], uint32_t tB2) {
    uint32_t a1[kTileN / 16][4], a2[kTileN / 16][4];
    pack_p16<Element>(p1, a1);
    pack_p16<Element>(p2, a2);
    wgmma_fence();
    wg_pb_issue<Element, kHeadDim>(acc1, a1, tB1);
    wg_pb_issue<Element, kHeadDim>(acc2, a2, tB2);
    wgmma_commit();
    wgmma_wait<0>();
    wgmma_fence_operand(acc1);
    wgmma_fence_operand(acc2);
}

// The first 1024-byte-aligned address at or after p (shared memory).
FWA_DEVICE unsigned char* align_1024(unsigned char* p) {
    return p + ((1024u - (smem_u32(p) & 1023u)) & 1023u);
}

}  // namespace fwa
