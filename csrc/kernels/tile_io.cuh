// Shared-memory tiles and fragment loads used by all window-attention kernels.
//
// A tile holds 64 rows x kHeadDim columns of q, k, v or dout in shared memory with a row pitch of
// kHeadDim + 8 elements: the 16-byte pad puts the 8 rows that one ldmatrix phase reads in 8
// different bank groups, so every ldmatrix below is conflict-free. Rows >= N and columns >= d
// are zero-filled by the async copy.
#pragma once
#include "kernel_utils.cuh"
#include "window_attn.h"

namespace fwa {

template <int kHeadDim> struct TileShape {
    static constexpr int kPitch = kHeadDim + 8;        // elements per smem row
    static constexpr int kElems = kTileM * kPitch;      // elements per 64-row tile
    static constexpr int kChunksPerRow = kHeadDim / 8;  // 16-byte chunks per row
};

// Async copy of rows [row0, row0 + 64) of one (window, head) slice into a tile. Thread tid copies
// the 16-byte column chunk tid % kChunksPerRow of rows tid / kChunksPerRow + i * kRowStep: written
// as a loop over i with the thread's row and column hoisted, the compiler strength-reduces the
// addresses (written as a loop over c = tid, tid + 128, ... it re-derived row, column, a 64-bit
// row offset and a trip-count branch per chunk: ncu, H100, ~25 instructions per 16-byte copy, a
// third of the forward kernel's instructions at N = 256).
template <typename Element, int kHeadDim>
FWA_DEVICE void load_tile_async(Element* tile, const Element* src, int64_t row_stride, int row0,
                                int N, int d, int tid) {
    using S = TileShape<kHeadDim>;
    constexpr int kTotal = kTileM * S::kChunksPerRow;
    static_assert(kTotal % kNumThreads == 0 && kNumThreads % S::kChunksPerRow == 0,
                  "every thread copies the same number of chunks, all in one column");
    constexpr int kIters = kTotal / kNumThreads;
    constexpr int kRowStep = kNumThreads / S::kChunksPerRow;
    const int r = tid / S::kChunksPerRow;
    const int cc = (tid % S::kChunksPerRow) * 8;
    const bool col_ok = cc < d;
    const Element* g = src + int64_t(row0 + r) * row_stride + cc;
    const int64_t g_step = int64_t(kRowStep) * row_stride;
    const uint32_t s = smem_u32(tile + r * S::kPitch + cc);
#pragma unroll
    for (int i = 0; i < kIters; ++i) {
        const bool valid = col_ok && row0 + r + i * kRowStep < N;
        cp_async_16(s + uint32_t(i * kRowStep * S::kPitch * sizeof(Element)), valid ? g + i * g_step : src,
                    valid ? 16 : 0);
    }
}

// The same copy with the row, column and address of every chunk derived inside the loop: more
// instructions per chunk, fewer live registers. For the kernels whose register allocation grows
// past an occupancy step with the hoisted form above (ptxas, sm_90a: the small-window backward at
// d = 64 168 -> 232 registers; the sliding-window query side 128 -> 166 at d = 32 and 164 -> 236
// at d = 64; its key side spilled at d = 128).
template <typename Element, int kHeadDim>
FWA_DEVICE void load_tile_async_compact(Element* tile, const Element* src, int64_t row_stride,
                                        int row0, int N, int d, int tid) {
    using S = TileShape<kHeadDim>;
    constexpr int kTotal = kTileM * S::kChunksPerRow;
#pragma unroll
    for (int c = tid; c < kTotal; c += kNumThreads) {
        const int r = c / S::kChunksPerRow;
        const int cc = c - r * S::kChunksPerRow;
        const int row = row0 + r;
        const bool valid = row < N && cc * 8 < d;
        const Element* g = valid ? src + row * row_stride + cc * 8 : src;
        cp_async_16(smem_u32(tile + r * S::kPitch + cc * 8), g, valid ? 16 : 0);
    }
}

// load_tile_async (kHoisted) or load_tile_async_compact: the form a kernel uses, per head dim, is
// the one whose register count (ptxas -v, sm_90a) does not cost it an occupancy step.
template <bool kHoisted, typename Element, int kHeadDim>
FWA_DEVICE void load_tile_async_form(Element* tile, const Element* src, int64_t row_stride, int row0,
                                     int N, int d, int tid) {
    if constexpr (kHoisted) load_tile_async<Element, kHeadDim>(tile, src, row_stride, row0, N, d, tid);
    else load_tile_async_compact<Element, kHeadDim>(tile, src, row_stride, row0, N, d, tid);
}

// The copy of load_tile_async into a 64-byte-swizzled tile (the wgmma kernels' operand layout, head
// dim d <= 32 at 16 bits; `tile`: its shared-memory address, 512-byte aligned): thread tid copies
// chunk tid % 4 of rows tid / 4 and tid / 4 + 32 (same swizzled position in both: 32 rows are 4
// swizzle periods). Rows >= N and columns >= d are zero-filled.
template <typename Element>
FWA_DEVICE void load_tile_sw64_async(uint32_t tile, const Element* src, int64_t row_stride, int row0, int N,
                                     int d, int tid) {
    static_assert(kNumThreads == 128 && kTileM == 64, "two 16-byte chunks per thread");
    const int r = tid >> 2, j = tid & 3;
    const bool col_ok = j * 8 < d;
    const Element* g = src + int64_t(row0 + r) * row_stride + j * 8;
    const uint32_t s = tile + sw64_offset(r, j);
#pragma unroll
    for (int i = 0; i < 2; ++i) {
        const bool valid = col_ok && row0 + r + 32 * i < N;
        cp_async_16(s + uint32_t(i) * 2048u, valid ? g + i * 32 * row_stride : src, valid ? 16 : 0);
    }
}

// Async copy of a 64x64 fp32 block of the padded bias+mask slice (row pitch src_pitch, always in
// bounds: the slice is Npad x Npad) into a tile with row pitch dst_pitch (a multiple of 4). Same
// thread-to-chunk map as load_tile_async: column chunk tid % 16, rows tid / 16 + 8 i.
FWA_DEVICE void load_bm_tile_async(float* dst, int dst_pitch, const float* src, int64_t src_pitch,
                                   int tid) {
    constexpr int kChunks = kTileN / 4;   // 16-byte chunks per row
    static_assert(kTileM * kChunks % kNumThreads == 0 && kNumThreads % kChunks == 0, "even split");
    constexpr int kIters = kTileM * kChunks / kNumThreads;
    constexpr int kRowStep = kNumThreads / kChunks;
    const int r = tid / kChunks, cc = (tid % kChunks) * 4;
    const float* g = src + int64_t(r) * src_pitch + cc;
    const int64_t g_step = int64_t(kRowStep) * src_pitch;
    const uint32_t s = smem_u32(dst + r * dst_pitch + cc);
    const uint32_t s_step = uint32_t(kRowStep * dst_pitch * sizeof(float));
#pragma unroll
    for (int i = 0; i < kIters; ++i) cp_async_16(s + i * s_step, g + i * g_step, 16);
}

// A fragment (16 rows x 16 columns starting at (row0, col0)) of a row-major tile.
template <int kHeadDim, typename Element>
FWA_DEVICE void load_a_frag(const Element* tile, int row0, int col0, int lane, uint32_t (&a)[4]) {
    const Element* p = tile + (row0 + (lane & 15)) * TileShape<kHeadDim>::kPitch + col0 +
                       (lane >> 4) * 8;
    ldmatrix_x4(smem_u32(p), a[0], a[1], a[2], a[3]);
}

// B fragments of two n8 tiles for a product X · Tᵀ, where the tile T is stored [n][k]
// (e.g. K in Q·Kᵀ): n rows n0..n0+15, k columns k0..k0+15.
// b[0], b[1]: n-tile n0; b[2], b[3]: n-tile n0 + 8.
template <int kHeadDim, typename Element>
FWA_DEVICE void load_b_frag_nk(const Element* tile, int n0, int k0, int lane, uint32_t (&b)[4]) {
    const Element* p = tile + (n0 + (lane & 7) + (lane >> 4) * 8) * TileShape<kHeadDim>::kPitch +
                       k0 + ((lane >> 3) & 1) * 8;
    ldmatrix_x4(smem_u32(p), b[0], b[1], b[2], b[3]);
}

// B fragments of two n8 tiles for a product X · T, where the tile T is stored [k][n]
// (e.g. V in P·V): k rows k0..k0+15, n columns n0..n0+15.
template <int kHeadDim, typename Element>
FWA_DEVICE void load_b_frag_kn(const Element* tile, int k0, int n0, int lane, uint32_t (&b)[4]) {
    const Element* p = tile + (k0 + (lane & 7) + ((lane >> 3) & 1) * 8) *
                                  TileShape<kHeadDim>::kPitch +
                       n0 + (lane >> 4) * 8;
    ldmatrix_x4_trans(smem_u32(p), b[0], b[1], b[2], b[3]);
}

// A fragment of Tᵀ (16 rows x 16 columns of the transpose, starting at (row0, col0) of Tᵀ)
// for a tile T stored row-major with pitch kPitch: Tᵀ rows are T columns.
template <int kPitch, typename Element>
FWA_DEVICE void load_a_frag_trans(const Element* tile, int row0, int col0, int lane,
                                  uint32_t (&a)[4]) {
    // a0: T[col0 + 0..7][row0 + 0..7]ᵀ, a1: rows +8, a2: cols +8, a3: both +8.
    const Element* p = tile + (col0 + (lane & 7) + (lane >> 4) * 8) * kPitch + row0 +
                       ((lane >> 3) & 1) * 8;
    ldmatrix_x4_trans(smem_u32(p), a[0], a[1], a[2], a[3]);
}

// Sum of squares of the two rows (g and g + 8) that an A fragment holds pieces of.
template <typename Element>
FWA_DEVICE void accumulate_sumsq(const uint32_t (&a)[4], float& ss0, float& ss1) {
    using Tr = ElementTraits<Element>;
    float2 x;
    x = Tr::unpack(a[0]); ss0 = fmaf(x.x, x.x, fmaf(x.y, x.y, ss0));
    x = Tr::unpack(a[2]); ss0 = fmaf(x.x, x.x, fmaf(x.y, x.y, ss0));
    x = Tr::unpack(a[1]); ss1 = fmaf(x.x, x.x, fmaf(x.y, x.y, ss1));
    x = Tr::unpack(a[3]); ss1 = fmaf(x.x, x.x, fmaf(x.y, x.y, ss1));
}

// Sum of the squares of the 8 16-bit elements of a 16-byte chunk, added to acc in a fixed order
// (fp32; each square exact): the V2 norms' sums of tile_row_inv_norms and of the wgmma forward at
// head dim 32. (The tiled backward's preprocess sums q's and k's squares in this order too,
// interleaved in one loop: written with this helper its loads were scheduled differently.)
template <typename Element>
FWA_DEVICE float chunk_sumsq(const uint4& u, float acc) {
    using Tr = ElementTraits<Element>;
    const uint32_t w[4] = {u.x, u.y, u.z, u.w};
#pragma unroll
    for (int e = 0; e < 4; ++e) {
        const float2 x = Tr::unpack(w[e]);
        acc = fmaf(x.x, x.x, fmaf(x.y, x.y, acc));
    }
    return acc;
}

// Inverse norms of the 64 rows of a tile, 2 threads per row, written to out[row] (kFast: through
// inv_norm_from_sumsq_fast, for the forward), or with kGroupPitch > 0 in groups of 4 rows
// kGroupPitch floats apart, out[(row / 4) * kGroupPitch + row % 4] (the small-window backward).
template <typename Element, int kHeadDim, bool kFast = false, int kGroupPitch = 0>
FWA_DEVICE void tile_row_inv_norms(const Element* tile, float* out, int tid) {
    const int row = tid >> 1, half = tid & 1;
    const Element* p = tile + row * TileShape<kHeadDim>::kPitch + half * (kHeadDim / 2);
    float ss = 0.f;
#pragma unroll
    for (int c = 0; c < kHeadDim / 2; c += 8) ss = chunk_sumsq<Element>(*reinterpret_cast<const uint4*>(p + c), ss);
    ss += __shfl_xor_sync(0xffffffffu, ss, 1);
    if (half == 0) out[grouped4_index<kGroupPitch>(row)] = kFast ? inv_norm_from_sumsq_fast(ss) : inv_norm_from_sumsq(ss);
}

}  // namespace fwa
