// Local-attention forward, fp16/bf16 on tensor cores (mma.sync m16n8k16, fp32 accumulation).
//
//   S = scale q kᵀ on the allowed band, P = softmax(S) (online over 64-key tiles, fp32),
//   out = P v, lse = log Σ exp S (natural log)
//
// Work split: one CTA (4 warps, 16 query rows each) per (64-query tile m, query head h, batch b),
// flattened into a 1-D grid with m fastest (neighbouring CTAs share most of their key band in L2)
// and m reversed (the longest rows of causal-like bands start first). Query head h reads kv head
// h / group (GQA).
// What is skipped: the CTA visits only key tiles [key_tile_first(m), key_tile_last(m)] of
// local_band.h, which are exactly the tiles holding at least one allowed pair of its rows; cost is
// O(L x window). Tiles entirely inside the band (key_tile_full) run without a mask; the tiles on
// the band's edges mask per element with each row's exact interval [key_lo(i), key_hi(i)], which
// also excludes keys >= L. Every real row has its diagonal key, so no row is empty (lse finite).
// Pipeline: q is loaded once (its fragments then live in registers); k and v tiles are
// double-buffered with cp.async (the next tile's copy overlaps this tile's products).
// Determinism: no atomics; each output row is produced by one warp in a fixed order.
#pragma once
#include <type_traits>

#include "../launch_utils.h"
#include "../warp_mma.cuh"
#include "local_attn.h"

namespace fwa {

// CTA order (LocalFwdParams::tile_group / kv_tile_group, chosen by local_tile_group): the grid
// walks `slices` (b, head) slices of n tiles each. Group 0: slice-major, the tiles of one slice
// consecutive (blockIdx = slice n + t). Group G > 0: the slices in consecutive groups of G, and
// within a group tile-major, the i-th heaviest tile of each of its slices before the (i + 1)-th
// (longest first). Returns the slice and the rank i of the CTA's tile within it (0 = the heaviest,
// or, slice-major, the first tile visited). Only which CTA computes what changes: every output is
// computed by the same instructions either way (bitwise the same).
struct LocalCtaTile {
    uint32_t slice;
    int i;
};
// (32-bit arithmetic: the launchers cap the grid at 2^31 - 1 CTAs, so every index and product here
// is below that; with 64-bit divisions ptxas serialised the 128-key forward's wgmmas, C7511.)
FWA_DEVICE LocalCtaTile local_cta_tile(int group, int64_t slices, int n, uint32_t bid = blockIdx.x) {
    const uint32_t un = static_cast<uint32_t>(n);
    LocalCtaTile c;
    if (group > 0) {
        const uint32_t g = static_cast<uint32_t>(group), per_group = g * un;
        const uint32_t gi = bid / per_group, first = gi * g;
        const uint32_t left = static_cast<uint32_t>(slices) - first;
        const uint32_t gs = left < g ? left : g;   // the last group may be smaller
        const uint32_t rem = bid - gi * per_group;
        const uint32_t i = rem / gs;
        c.i = static_cast<int>(i);
        c.slice = first + (rem - i * gs);
    } else {
        c.slice = bid / un;
        c.i = static_cast<int>(bid - c.slice * un);
    }
    return c;
}

// The (query tile, query head, batch) of a query-side CTA (the forward kernels and the backward's
// query side) over n_m query tiles (of 64 rows, or of kWG x 64 in the multi-warpgroup forward),
// slices (b, h) = b H + h; the tile of rank i is m_block = n_m - 1 - i (slice-major, and tile-major
// with the left side unbounded: later queries see more keys) or i (tile-major, right unbounded).
struct LocalQueryBlock {
    int m_block, h, hk;   // hk: the kv head of query head h
    int64_t b;
};
// (bid: the CTA's index in that order; a persistent kernel passes each work item's.)
FWA_DEVICE LocalQueryBlock local_query_block(const LocalFwdParams& p, int n_m, uint32_t bid = blockIdx.x) {
    const LocalCtaTile c = local_cta_tile(p.tile_group, int64_t(p.B) * p.H, n_m, bid);
    LocalQueryBlock q;
    q.m_block = p.tile_group > 0 && p.left >= 0 ? c.i : n_m - 1 - c.i;
    q.h = static_cast<int>(c.slice % static_cast<uint32_t>(p.H));
    q.b = c.slice / static_cast<uint32_t>(p.H);
    q.hk = q.h / p.group;
    return q;
}

// The residual of a thread's output pairs (LocalFwdParams::out_lo, bf16): x - float(out) for the
// kDT pairs (x0, x1) of row `row` at columns i 8 + 2 t4 whose 16-bit values `packed` the epilogue
// stores in out; only where out_lo is given, for rows in [0, L) and columns < d. Stored straight
// from registers (a quad's 4 threads write 16 contiguous bytes).
template <typename Element, int kDT>
FWA_DEVICE void local_store_out_lo(const LocalFwdParams& p, int64_t b, int h, int row, int t4, const float (&x)[kDT][2],
                                   const uint32_t (&packed)[kDT]) {
    if (p.out_lo.ptr == nullptr || row < 0 || row >= p.L) return;
    __nv_bfloat16* dst = static_cast<__nv_bfloat16*>(p.out_lo.ptr) + b * p.out_lo.batch_stride +
                         int64_t(h) * p.out_lo.head_stride + int64_t(row) * p.out_lo.row_stride + 2 * t4;
#pragma unroll
    for (int i = 0; i < kDT; ++i) {
        if (i * 8 >= p.d) break;
        const float2 r = ElementTraits<Element>::unpack(packed[i]);
        *reinterpret_cast<__nv_bfloat162*>(dst + i * 8) = __floats2bfloat162_rn(x[i][0] - r.x, x[i][1] - r.y);
    }
}

// One key step's logits (a warp's 16 rows x 8 kNT keys from key0, C-fragment layout): scaled to
// log2 units (sl), keys outside each of the thread's two rows' allowed interval set to -inf (not
// for kFull steps, which hold allowed pairs only), then the online softmax (kernel_utils.cuh):
// s becomes P, and corr[r] is the factor the output row r must be rescaled by. (A row with no
// allowed key in this step and none before keeps max -inf.)
// kFold (the wgmma and warp-specialised forwards, launched for scale > 0 only: local_attn_fwd),
// on steps whose pairs are all allowed: the scaling folded into the exponent. The row max is taken
// over the raw logits and scaled once (x -> x sl is monotonic for sl > 0, so it is bitwise the max
// of the scaled logits) and each P = exp2(fma(s, sl, -max)): one FFMA per logit where an FMUL and
// an FADD were (the 128-key step of the d = 64 warp-specialised forward: 438 -> 376 SASS
// instructions per thread; H200, session 52: block256x16 forward 80-81 -> 69-70 us, causal
// B8 H16 L2048 d64 221-223 -> 198-203). P differs from the unfolded form's by the rounding the
// FFMA saves. (Folding the masked steps too, or a run-time choice between the forms, made ptxas
// serialise these kernels' wgmmas, C7511.)
// kSkipRescale (with kFold; the d = 128 forwards): FlashAttention-4's rule. A warp keeps its rows'
// running max, and O and the row sums are not rescaled, while no row of the warp would grow its
// max by more than 8 (log2 units; P <= 2^8 then). The step returns whether O must be rescaled by
// corr. (Session 52: win(1024,0) B2 H16 L16384 d128 forward 602-667 -> 567-595 us; at d = 64 it
// was slower than the fold alone, 69-70 -> 75 us at block256x16.)
// The forwards also keep row_sum16, the row sums of P rounded to TRound (the 16-bit P that the P v
// product sees), and normalise out by it (lse stays from the fp32 sums): out's weights then sum to 1,
// and D = dout · (out + out_lo) is consistent with the backward's P (the residual-D backward; with
// out normalised by the fp32 sum, its dq missed the rule on 1 of 1000 random problems, a clustered
// bf16 one with a 13-key band, H200, session 56).
template <bool kScaled, typename TRound, int kNT>
FWA_DEVICE void local_exp_row(float (&s)[kNT][4], int r, float m_use, float corr, float& row_sum, float& row_sum16,
                              float in_scale, bool keep_max) {
    // (Two forms: with the other in either dtype ptxas serialised the d = 64 warp-specialised
    // forward's wgmmas when it still summed here, C7511; the 128-key wgmma forward, which does, and
    // the mma.sync one compile without it in both.)
    // TRound void: no row_sum16 (the warp-specialised and 64-key-step wgmma forwards sum the packed
    // P on the tensor cores instead, p16_row_sums in local_wgmma.cuh).
    constexpr bool kSum16 = !std::is_void<TRound>::value;
    constexpr bool kAfter = std::is_same<TRound, __nv_bfloat16>::value;
    float sum16_even = 0.f, sum16_odd = 0.f;
    const auto pair = [&](int nt, float e0, float e1) {   // the in-loop form's sums
        if constexpr (kSum16 && !kAfter) {
            const float2 rr = ElementTraits<TRound>::unpack(ElementTraits<TRound>::pack(e0, e1));
            if (nt % 2 == 0) sum16_even += rr.x + rr.y;
            else sum16_odd += rr.x + rr.y;
        }
    };
    online_softmax_exp_row<kScaled>(s, r, m_use, corr, row_sum, in_scale, keep_max, pair);
    if constexpr (!kSum16) {
        (void)row_sum16;
    } else if constexpr (kAfter) {
        float sum16 = 0.f;
#pragma unroll
        for (int nt = 0; nt < kNT; ++nt) {
            const float2 rr = ElementTraits<TRound>::unpack(ElementTraits<TRound>::pack(s[nt][2 * r], s[nt][2 * r + 1]));
            sum16 += rr.x + rr.y;
        }
        row_sum16 = (keep_max ? row_sum16 : row_sum16 * corr) + sum16;
    } else {
        row_sum16 = (keep_max ? row_sum16 : row_sum16 * corr) + (sum16_even + sum16_odd);
    }
}

template <bool kFull, bool kFold, bool kSkipRescale = false, typename TRound, int kNT>
FWA_DEVICE bool local_softmax_step(float (&s)[kNT][4], float sl, const RowInterval (&iv)[2], int key0, int t4,
                                   float (&row_max)[2], float (&row_sum)[2], float (&row_sum16)[2], float (&corr)[2]) {
    constexpr bool kFolded = kFold && kFull;
    float mx[2];
#pragma unroll
    for (int r = 0; r < 2; ++r) {
        float mx_even = -INFINITY, mx_odd = -INFINITY;
#pragma unroll
        for (int nt = 0; nt < kNT; ++nt) {
            float x0 = s[nt][2 * r], x1 = s[nt][2 * r + 1];
            if constexpr (!kFolded) {
                x0 *= sl;
                x1 *= sl;
            }
            if constexpr (!kFull) {
                const int j = key0 + nt * 8 + 2 * t4;
                if (!iv[r].contains(j)) x0 = -INFINITY;
                if (!iv[r].contains(j + 1)) x1 = -INFINITY;
            }
            s[nt][2 * r] = x0;
            s[nt][2 * r + 1] = x1;
            if (nt % 2 == 0) mx_even = fmaxf(mx_even, fmaxf(x0, x1));
            else mx_odd = fmaxf(mx_odd, fmaxf(x0, x1));
        }
        mx[r] = quad_max(fmaxf(mx_even, mx_odd));
        if constexpr (kFolded) mx[r] *= sl;
    }
    if constexpr (!kFolded) {
#pragma unroll
        for (int r = 0; r < 2; ++r) {
            float m_use;
            corr[r] = online_softmax_max(mx[r], row_max[r], m_use);
            local_exp_row<false, TRound>(s, r, m_use, corr[r], row_sum[r], row_sum16[r], 1.f, false);
        }
        return true;
    } else {
        bool rescale = true;
        if constexpr (kSkipRescale) {   // (a NaN difference or a -inf max counts as growing)
            const bool grow = !(fmaxf(mx[0] - row_max[0], mx[1] - row_max[1]) <= 8.f);
            rescale = __any_sync(0xffffffffu, grow);
        }
        float m_use[2];
#pragma unroll
        for (int r = 0; r < 2; ++r) corr[r] = online_softmax_max(mx[r], row_max[r], m_use[r], !rescale);
#pragma unroll
        for (int r = 0; r < 2; ++r) local_exp_row<true, TRound>(s, r, m_use[r], corr[r], row_sum[r], row_sum16[r], sl, !rescale);
        return rescale;
    }
}

template <int kHeadDim> struct LocalFwdSmem {
    static constexpr int kTile = TileShape<kHeadDim>::kElems;
    // q (also the output staging buffer), then k and v, 2 stages each.
    static constexpr size_t kBytes = size_t(5) * kTile * 2;
};

// CTAs per SM the register allocation must allow (shared memory allows at least this many).
template <int kHeadDim> constexpr int local_fwd_min_blocks() { return kHeadDim <= 32 ? 4 : (kHeadDim <= 64 ? 3 : 2); }

template <typename Element, int kHeadDim>
__global__ void __launch_bounds__(kNumThreads, local_fwd_min_blocks<kHeadDim>())
local_attn_fwd_kernel(const LocalFwdParams p) {
    using Tr = ElementTraits<Element>;
    using Shape = TileShape<kHeadDim>;
    constexpr int kTile = Shape::kElems;
    constexpr int kNT = kTileN / 8;
    constexpr int kDT = kHeadDim / 8;
    constexpr int kKS = kHeadDim / 16;

    extern __shared__ __align__(16) unsigned char smem_raw[];
    Element* sQ = reinterpret_cast<Element*>(smem_raw);
    Element* sK = sQ + kTile;        // 2 stages
    Element* sV = sK + 2 * kTile;    // 2 stages

    const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
    const int g = lane >> 2, t4 = lane & 3;
    const int L = p.L, d = p.d;
    const int n_m = (L + kTileM - 1) / kTileM;

    const LocalQueryBlock qb = local_query_block(p, n_m);
    const int m_block = qb.m_block, h = qb.h, hk = qb.hk;
    const int64_t b = qb.b;

    const LocalBand band = p.band();
    const int row0 = m_block * kTileM;
    const int kt_first = static_cast<int>(band.key_tile_first(m_block));
    const int kt_last = static_cast<int>(band.key_tile_last(m_block));
    const int n_tiles = kt_last - kt_first + 1;   // >= 1: the diagonal tile
    // Key tile n is full iff full_lo <= 64 n and 64 n + 63 <= full_hi (see key_tile_full).
    const int full_lo = static_cast<int>(band.key_lo(band.tile_last_row(m_block)));
    const int full_hi = static_cast<int>(band.key_hi(row0));
    RowInterval iv[2];
#pragma unroll
    for (int r = 0; r < 2; ++r) {
        const int row = row0 + warp * 16 + g + 8 * r;
        iv[r].set(band.key_lo(row), band.key_hi(row), L);
    }

    const Element* q_base = static_cast<const Element*>(p.q.ptr) + b * p.q.batch_stride + h * p.q.head_stride;
    const Element* k_base = static_cast<const Element*>(p.k.ptr) + b * p.k.batch_stride + hk * p.k.head_stride;
    const Element* v_base = static_cast<const Element*>(p.v.ptr) + b * p.v.batch_stride + hk * p.v.head_stride;
    auto issue_kv = [&](int kt, int st) {
        load_tile_async<Element, kHeadDim>(sK + st * kTile, k_base, p.k.row_stride, kt * kTileN, L, d, tid);
        load_tile_async<Element, kHeadDim>(sV + st * kTile, v_base, p.v.row_stride, kt * kTileN, L, d, tid);
    };

    load_tile_async<Element, kHeadDim>(sQ, q_base, p.q.row_stride, row0, L, d, tid);
    issue_kv(kt_first, 0);
    cp_async_commit();

    const float sl = p.scale * kLog2e;   // logits in log2 units: the softmax runs on exp2
    float o_acc[kDT][4];
    zero_acc(o_acc);
    float row_max[2] = {-INFINITY, -INFINITY}, row_sum[2] = {0.f, 0.f}, row_sum16[2] = {0.f, 0.f};
    uint32_t q_frag[kKS][4];

    for (int it = 0; it < n_tiles; ++it) {
        cp_async_wait<0>();
        __syncthreads();   // tile `it` landed for all threads; stage (it + 1) & 1 is free
        if (it + 1 < n_tiles) issue_kv(kt_first + it + 1, (it + 1) & 1);
        cp_async_commit();
        const int st = it & 1;
        const Element* tK = sK + st * kTile;
        const Element* tV = sV + st * kTile;
        const int kt = kt_first + it;
        const int key0 = kt * kTileN;

        if (it == 0) {
#pragma unroll
            for (int ks = 0; ks < kKS; ++ks) load_a_frag<kHeadDim>(sQ, warp * 16, ks * 16, lane, q_frag[ks]);
        }

        float s[kNT][4];
        zero_acc(s);
#pragma unroll
        for (int ks = 0; ks < kKS; ++ks) {
#pragma unroll
            for (int np = 0; np < kNT / 2; ++np) {
                uint32_t bf[4];
                load_b_frag_nk<kHeadDim>(tK, np * 16, ks * 16, lane, bf);
                mma_16816<Element>(s[2 * np], q_frag[ks], bf[0], bf[1]);
                mma_16816<Element>(s[2 * np + 1], q_frag[ks], bf[2], bf[3]);
            }
        }

        const bool full = full_lo <= key0 && key0 + kTileN - 1 <= full_hi;   // CTA-uniform
        // Instantiated for full and edge tiles, picked once per tile (a per-element branch on the
        // runtime flag otherwise).
        float corr[2];
        if (full) local_softmax_step<true, false, false, Element>(s, sl, iv, key0, t4, row_max, row_sum, row_sum16, corr);
        else local_softmax_step<false, false, false, Element>(s, sl, iv, key0, t4, row_max, row_sum, row_sum16, corr);
#pragma unroll
        for (int r = 0; r < 2; ++r) rescale_acc_row(o_acc, r, corr[r]);

        warp_mma_pb<kHeadDim>(o_acc, s, nullptr, tV, lane);   // O += P v
    }

    // Epilogue: normalise, stage this warp's 16 rows in its own rows of sQ (only this warp read
    // them, at it == 0), then store whole 16-byte chunks.
    Element* out = static_cast<Element*>(p.out.ptr) + b * p.out.batch_stride + h * p.out.head_stride;
    Element* sOut = sQ + warp * 16 * Shape::kPitch;
    __syncwarp();
#pragma unroll
    for (int r = 0; r < 2; ++r) {
        const int lrow = g + 8 * r;
        const int row = row0 + warp * 16 + lrow;
        const float l = quad_sum(row_sum[r]), l16 = quad_sum(row_sum16[r]);
        const float inv = l16 == 0.f ? 0.f : 1.f / l16;   // out's weights sum to 1 (local_exp_row); 0: rows outside [0, L)
        if (row < L && t4 == 0)
            p.lse[(b * p.H + h) * L + row] = l == 0.f ? INFINITY : (row_max[r] + log2f(l)) * kLn2;
        float x[kDT][2];
        uint32_t packed[kDT];
#pragma unroll
        for (int i = 0; i < kDT; ++i) {
            x[i][0] = o_acc[i][2 * r] * inv;
            x[i][1] = o_acc[i][2 * r + 1] * inv;
            packed[i] = Tr::pack(x[i][0], x[i][1]);
            *reinterpret_cast<uint32_t*>(sOut + lrow * Shape::kPitch + i * 8 + 2 * t4) = packed[i];
        }
        local_store_out_lo<Element, kDT>(p, b, h, row, t4, x, packed);
    }
    __syncwarp();
#pragma unroll
    for (int c = lane; c < 16 * Shape::kChunksPerRow; c += 32) {
        const int lrow = c / Shape::kChunksPerRow, col = (c % Shape::kChunksPerRow) * 8;
        const int row = row0 + warp * 16 + lrow;
        if (row < L && col < d)
            *reinterpret_cast<uint4*>(out + int64_t(row) * p.out.row_stride + col) =
                *reinterpret_cast<const uint4*>(sOut + lrow * Shape::kPitch + col);
    }
}

template <typename Element, int kHeadDim>
cudaError_t launch_local_fwd(const LocalFwdParams& p, cudaStream_t stream) {
    const int64_t n_m = (int64_t(p.L) + kTileM - 1) / kTileM;
    const int64_t grid = n_m * p.H * p.B;
    if (grid == 0) return cudaSuccess;
    if (grid > 0x7fffffffLL) return cudaErrorInvalidConfiguration;
    constexpr size_t smem = LocalFwdSmem<kHeadDim>::kBytes;
    int ctas = 0;
    cudaError_t err = prepare_kernel<local_attn_fwd_kernel<Element, kHeadDim>>(smem, kNumThreads, &ctas);
    if (err != cudaSuccess) return err;
    local_attn_fwd_kernel<Element, kHeadDim><<<static_cast<unsigned>(grid), kNumThreads, smem, stream>>>(p);
    return cudaGetLastError();
}

}  // namespace fwa
