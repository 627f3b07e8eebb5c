// Local-attention backward, fp16/bf16 on tensor cores, deterministic. Three kernels:
//
//  1. preprocess, one pass over dout, out and v:
//     max |dout| per (b, h) and max |v| per (b, hk): the scale of the fixed-point sums below
//     (dp_bound = d * max|dout| * max|v| >= |dP_ij|), and
//     D~_i = dout_i · out_i (fp32) for every (b, h, i), into the (B, H, L) workspace:
//     the key side's D. Its error (out is rounded to 16 bits) is common to a row; in dk it enters
//     with a different D per query and averages out, in dq it would add up (see 3).
//  2. key side: one CTA (4 warps x 16 keys) per (64-key tile n, kv head hk, batch b). It loops
//     over the query heads of the group, h = hk * group + 0 ... group - 1 in ascending order, and
//     for each over the query tiles [query_tile_first(n), query_tile_last(n)] of local_band.h
//     (exactly the tiles holding an allowed pair with its keys), recomputing
//       Pᵀ = exp(scale k qᵀ - lse), dSᵀ = Pᵀ o (v doutᵀ - D)
//     and accumulating dv += Pᵀ dout and dk += dSᵀ q in registers over all of them. Sᵀ is
//     computed directly (keys are the rows), so Pᵀ and dSᵀ are already A operands of the next
//     products. The GQA sum over heads happens inside this one CTA in a fixed order: no atomics,
//     bitwise deterministic. dk = scale * acc, dv = acc, written once. It also sums, per query of
//     each item, P dP over its 64 keys (fp32, fixed order) and adds it in fixed point (int64,
//     units dp_bound * 2^-61) to the query's d_acc with integer atomics, which are order-free: the
//     total is bitwise deterministic.
//  3. query side: one CTA per (64-query tile m, query head h, batch b) over the key tiles
//     [key_tile_first(m), key_tile_last(m)], recomputing P and dS the same way and accumulating
//     dq = scale dS k in registers, with D_i = sum_j P_ij dP_ij from d_acc: the P both kernels
//     recompute (sum_j P_ij = 1 to within the fp32 rounding of lse; dividing by it cost a second
//     column sum and atomic per query and item), so no rounding of out enters dq (rowsum(dout * out)
//     made dq several times less accurate than PyTorch's own bf16 on values that sit close to
//     their mean).
// The residual-D form (LocalBwdParams::residual_d, where the forward gave out_lo and 2 and 3 run
// warp-specialised): 1 writes D = dout · (out + out_lo) (no max), 2 uses it and sums nothing, 3
// reads it without waiting for 2 (local_bwd_q_ws_kernel.cuh; docs/local_attention.md).
// 2 and 3 have two product paths (kWgmma): mma.sync from padded row tiles (tile_io.cuh), and on
// sm_90a at d > 32 Hopper warpgroup MMAs from 128-byte-swizzled tiles (local_wgmma.cuh), the CTA's
// 4 warps one warpgroup; everything else is shared.
// Both 2 and 3 skip every tile outside the band and mask per element only on the band's edges
// (query_tile_full / key_tile_full tiles run without a mask), with each row's exact interval of
// allowed partners (which also excludes queries / keys >= L). k, v (2) or q, dout (3) stay in
// shared memory for the whole CTA; the streamed tiles are double-buffered with cp.async (the
// query side's wgmma path keeps k in 3 stages: it issues S and dP of key tile it + 1 before dq of
// tile it, so that tile it + 1's elementwise work overlaps the dq product).
// On sm_90a, where their grids fill the GPU, 2 and 3 run as warp-specialised persistent kernels
// instead (local_bwd_kv_ws_kernel.cuh, local_bwd_q_ws_kernel.cuh: TMA producer, consumer
// warpgroups with no CTA-wide barrier) with the same products in the same order: bitwise equal.
#pragma once
#include <type_traits>

#include <algorithm>

#include "local_fwd_kernel.cuh"
#include "local_wgmma.cuh"
#include "../warp_reduce.cuh"

namespace fwa {

// ---------------------------------------------------------------------------------------------
// 1. max |dout| per (b, h), max |v| per (b, hk), D~ = rowsum(dout * out)

constexpr double kTwo61 = 2305843009213693952.0;   // 2^61: fixed-point scale of the D sums

// dp_bound(b, h) = d * max|dout(b, h)| * max|v(b, h / group)| (>= every |dP_ij| of the slice), in
// double; the same expression in the key-side and the query-side kernel.
FWA_DEVICE double local_dp_bound(const LocalBwdParams& p, int64_t b, int h) {
    return double(p.d) * double(p.absmax[b * p.H + h]) *
           double(p.absmax[int64_t(p.B) * p.H + b * p.Hkv + h / p.group]);
}

// Rows of one slice per preprocess CTA (and per block of the CTA's walk: see the kernel). When
// each CTA walked its rows kNumThreads / (d / 8) at a time, with one dependent load round trip per
// step, 256 rows (8 - 32 steps) left the pass latency-bound on the small problems (H100, bf16,
// session 27 run I, 256 -> 64 rows: block256x16 B1 H12 L4096 d64 0.015 -> 0.007 ms, win(256,256)
// B1 H4 L4096 d128 0.023 -> 0.007; bandwidth-bound either way: causal B8 H16 L2048 d64 0.042 ->
// 0.041, win(1024,0) B2 H16 L16384 d128 0.145 -> 0.142).
constexpr int kPrepRows = 64;

// One pass over dout, out and v: CTA (slice, chunk) takes rows
// [chunk * rows_per_chunk, ...) of one slice: a dout slice (b, h) (slice < B H) writes D~ of each
// row and takes max |dout|, a v slice (b, hk) takes max |v|. Rows are processed kTPR threads per row
// (one 16-byte chunk each, the dot product reduced over those lanes), kNumThreads / kTPR rows at a
// time, after the loads of kPrepRows rows; one atomicMax per CTA.
template <typename Element, int kHeadDim>
__global__ void __launch_bounds__(kNumThreads) local_attn_bwd_prep_kernel(const LocalBwdParams p, int chunks) {
    using Tr = ElementTraits<Element>;
    // The key side, this kernel's programmatic dependent (launch_local_bwd_impl), reads what this
    // kernel writes only after its pdl_wait: it may launch now and load its k, v tiles meanwhile.
    pdl_launch_dependents();
    constexpr int kTPR = kHeadDim / 8;   // threads per row
    constexpr int kRowsPerIter = kNumThreads / kTPR;
    const int tid = threadIdx.x;
    const int64_t n_dout = int64_t(p.B) * p.H;
    const int64_t slice = blockIdx.x / chunks;
    const int chunk = static_cast<int>(blockIdx.x - slice * chunks);
    const bool is_v = slice >= n_dout;
    const int64_t sl = is_v ? slice - n_dout : slice;
    const int heads = is_v ? p.Hkv : p.H;
    const int64_t b = sl / heads, h = sl - (sl / heads) * heads;
    const TensorRef& t = is_v ? p.v : p.dout;
    const Element* base = static_cast<const Element*>(t.ptr) + b * t.batch_stride + h * t.head_stride;
    const Element* out_base = static_cast<const Element*>(p.out.ptr) + b * p.out.batch_stride + h * p.out.head_stride;
    const int64_t rows_per_chunk = (int64_t(p.L) + chunks - 1) / chunks;
    const int64_t r0 = chunk * rows_per_chunk;
    const int64_t r_end = std::min<int64_t>(p.L, r0 + rows_per_chunk);
    const int c = (tid % kTPR) * 8;
    float m = 0.f;
    bool nan = false;
    // Blocks of kPrepRows rows (one block unless L / kPrepRows exceeds the chunk cap), each with
    // every load issued before the first is used: one load round trip per block, not one per
    // kRowsPerIter rows (H200, win(256,256) B1 H4 L4096 d128: 8 dependent round trips took
    // 9.5 us). Rows past the chunk read as zeros, which change neither max nor sum; the trip
    // counts are uniform over the CTA (the shuffles below).
    constexpr int kIters = kPrepRows / kRowsPerIter;
    static_assert(kIters * kRowsPerIter == kPrepRows, "whole row groups per block");
    // The residual-D backward (p.residual_d): out_lo's rows too, D = dout · (out + out_lo); the
    // grid holds the dout slices only, and no max is taken (nothing reads absmax).
    const bool res = p.residual_d;
    const __nv_bfloat16* lo_base = res ? static_cast<const __nv_bfloat16*>(p.out_lo.ptr) + b * p.out_lo.batch_stride +
                                             h * p.out_lo.head_stride
                                       : nullptr;
    for (int64_t rb = r0; rb < r_end; rb += kPrepRows) {
        uint4 x[kIters], o[kIters], lo[kIters];
#pragma unroll
        for (int i = 0; i < kIters; ++i) {
            const int64_t row = rb + i * kRowsPerIter + tid / kTPR;
            x[i] = o[i] = lo[i] = make_uint4(0u, 0u, 0u, 0u);
            if (row < r_end && c < p.d) {
                x[i] = *reinterpret_cast<const uint4*>(base + row * t.row_stride + c);
                if (!is_v) o[i] = *reinterpret_cast<const uint4*>(out_base + row * p.out.row_stride + c);
                if (res) lo[i] = *reinterpret_cast<const uint4*>(lo_base + row * p.out_lo.row_stride + c);
            }
        }
#pragma unroll
        for (int i = 0; i < kIters; ++i) {
            const int64_t row = rb + i * kRowsPerIter + tid / kTPR;
            const uint32_t w[4] = {x[i].x, x[i].y, x[i].z, x[i].w};
            const uint32_t ow[4] = {o[i].x, o[i].y, o[i].z, o[i].w};
            const uint32_t lw[4] = {lo[i].x, lo[i].y, lo[i].z, lo[i].w};
            float dsum = 0.f;
#pragma unroll
            for (int e = 0; e < 4; ++e) {
                const float2 f = Tr::unpack(w[e]);
                m = fmaxf(m, fmaxf(fabsf(f.x), fabsf(f.y)));
                nan |= (f.x != f.x) || (f.y != f.y);
                if (!is_v) {
                    float2 y = Tr::unpack(ow[e]);
                    if (res) {   // (CTA-uniform)
                        const float2 r = ElementTraits<__nv_bfloat16>::unpack(lw[e]);
                        y.x += r.x;
                        y.y += r.y;
                    }
                    dsum = fmaf(y.x, f.x, fmaf(y.y, f.y, dsum));
                }
            }
            if (!is_v) {   // CTA-uniform
#pragma unroll
                for (int sh = 1; sh < kTPR; sh <<= 1) dsum += __shfl_xor_sync(0xffffffffu, dsum, sh);
                if (row < r_end && tid % kTPR == 0) p.dsum[(b * p.H + h) * p.L + row] = dsum;
            }
        }
    }
    if (res) return;   // (CTA-uniform)
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
    nan = __any_sync(0xffffffffu, nan);
    __shared__ float red[kNumThreads / 32];
    __shared__ int red_nan[kNumThreads / 32];
    if ((tid & 31) == 0) {
        red[tid >> 5] = m;
        red_nan[tid >> 5] = nan;
    }
    __syncthreads();
    if (tid == 0) {
        float r = red[0];
        int any_nan = red_nan[0];
        for (int w = 1; w < kNumThreads / 32; ++w) {
            r = fmaxf(r, red[w]);
            any_nan |= red_nan[w];
        }
        // Non-negative floats order like their bit patterns; the positive quiet NaN 0x7fffffff
        // orders above +inf, so a NaN anywhere in the slice makes its bound NaN.
        atomicMax(reinterpret_cast<int*>(p.absmax) + slice, any_nan ? 0x7fffffff : __float_as_int(r));
    }
}

// ---------------------------------------------------------------------------------------------
// 2. Key side: dk, dv.

// Elements per 64-row tile: padded rows (mma.sync) or the unpadded swizzled layout (wgmma, whose
// tiles start 1024-byte aligned: kAlignPad bytes of slack in front).
template <int kHeadDim, bool kWgmma> struct LocalBwdTile {
    static constexpr int kElems = kWgmma ? kTileM * kHeadDim : TileShape<kHeadDim>::kElems;
    static constexpr size_t kAlignPad = kWgmma ? 1024 : 0;
};

template <int kHeadDim, bool kWgmma = false> struct LocalBwdKvSmem {
    static constexpr int kTile = LocalBwdTile<kHeadDim, kWgmma>::kElems;
    // k, v of the key tile; q and dout, 2 stages each; lse and D~ of the query tile, 2 stages;
    // per-warp column sums of P dP, 2 stages x 4 warps x 64 queries.
    static constexpr size_t kBytes = LocalBwdTile<kHeadDim, kWgmma>::kAlignPad + size_t(6) * kTile * 2 +
                                     size_t(2) * 2 * kTileM * sizeof(float) +
                                     size_t(2) * (kNumThreads / 32) * kTileM * sizeof(float);
};

// A tile's async copy on either path (the mma.sync path in the form given by kHoist; the wgmma
// path as the forward's, load_streamed_tile_sw128_async: session 60, H200, win(256,256) B1 H4
// L4096 d128 bf16: query side 47.6 -> 43.9 us, fwd+bwd GPU time 80.8 -> 77.4 us; bitwise equal).
template <bool kWgmma, bool kHoist, typename Element, int kHeadDim>
FWA_DEVICE void local_load_tile(Element* tile, const Element* src, int64_t row_stride, int row0, int L, int d,
                                int tid) {
    if constexpr (kWgmma) load_streamed_tile_sw128_async<Element, kHeadDim>(smem_u32(tile), src, row_stride, row0, L, d, tid);
    else load_tile_async_form<kHoist, Element, kHeadDim>(tile, src, row_stride, row0, L, d, tid);
}

// One key-side step's elementwise work on this thread's two keys (rows r) x the step's 64 queries
// (C-fragment layout; lse, dsum: the step's rows in shared memory): Pᵀ = exp(scale Sᵀ - lse) into
// s (kFull: every pair allowed; else pairs outside the key's query interval iv[r], and keys with
// key_ok[r] false, get P = 0), pdp += Pᵀ o dPᵀ summed over the two keys per query column, and
// dSᵀ = Pᵀ o (dPᵀ - D~) into dp. Shared by the key-side kernel and its warp-specialised form.
// kLse2: the lse rows are already in log2 units (lse log2(e), the warp-specialised key side's
// stage rows; the same FMUL done once per row by its producer instead of per query column and step
// by every consumer thread, so P is bitwise the same).
template <bool kFull, bool kLse2 = false, int kNT>
FWA_DEVICE void local_kv_step_grads(float (&s)[kNT][4], float (&dp)[kNT][4], float (&pdp)[2 * kNT], const float* lse,
                                    const float* dsum, float sl, const RowInterval (&iv)[2], const bool (&key_ok)[2],
                                    int q0, int t4) {
#pragma unroll
    for (int r = 0; r < 2; ++r) {
#pragma unroll
        for (int nt = 0; nt < kNT; ++nt) {
            const int c = nt * 8 + 2 * t4;   // query within the tile
            const float2 ls = *reinterpret_cast<const float2*>(lse + c);
            const float2 ds = *reinterpret_cast<const float2*>(dsum + c);
            const float l0 = kLse2 ? ls.x : ls.x * kLog2e, l1 = kLse2 ? ls.y : ls.y * kLog2e;
            float p0 = fast_exp2(fmaf(s[nt][2 * r], sl, -l0));
            float p1 = fast_exp2(fmaf(s[nt][2 * r + 1], sl, -l1));
            if constexpr (!kFull) {
                const int i = q0 + c;
                if (!iv[r].contains(i)) p0 = 0.f;
                if (!iv[r].contains(i + 1)) p1 = 0.f;
                if (!key_ok[r]) p0 = p1 = 0.f;
            }
            s[nt][2 * r] = p0;
            s[nt][2 * r + 1] = p1;
            pdp[2 * nt] = fmaf(p0, dp[nt][2 * r], pdp[2 * nt]);
            pdp[2 * nt + 1] = fmaf(p1, dp[nt][2 * r + 1], pdp[2 * nt + 1]);
            dp[nt][2 * r] = p0 * (dp[nt][2 * r] - ds.x);
            dp[nt][2 * r + 1] = p1 * (dp[nt][2 * r + 1] - ds.y);
        }
    }
}

template <typename Element, int kHeadDim, bool kWgmma>
__global__ void __launch_bounds__(kNumThreads) local_attn_bwd_kv_kernel(const LocalBwdParams p) {
    // Hoisted tile-load addressing at d <= 64 (d = 32: 168 registers either way; d = 64: 213 -> 219,
    // 2 CTAs/SM either way); at d = 128 it spilled.
    constexpr bool kHoistLoads = kHeadDim <= 64;
    constexpr int kTile = LocalBwdTile<kHeadDim, kWgmma>::kElems;
    constexpr int kNT = kTileM / 8;   // n8 tiles over the 64 queries of a tile
    constexpr int kDT = kHeadDim / 8;

    extern __shared__ __align__(16) unsigned char smem_raw[];
    unsigned char* smem = kWgmma ? align_1024(smem_raw) : smem_raw;
    Element* sK = reinterpret_cast<Element*>(smem);
    Element* sV = sK + kTile;
    Element* sQ = sV + kTile;          // 2 stages
    Element* sO = sQ + 2 * kTile;      // dout, 2 stages
    float* sRow = reinterpret_cast<float*>(sO + 2 * kTile);   // [2 stages][lse, D][64]
    float* sPdp = sRow + 2 * 2 * kTileM;                       // [2 stages][4 warps][64]: sum P dP

    const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
    const int g = lane >> 2, t4 = lane & 3;
    const int L = p.L, d = p.d;
    const int n_kt = (L + kTileN - 1) / kTileN;
    const uint32_t sQ_u = smem_u32(sQ), sO_u = smem_u32(sO);

    // CTA order (local_cta_tile, LocalFwdParams::kv_tile_group): slices (b, hk) = b Hkv + hk; the
    // key tile of rank i is n_block = i (slice-major, and tile-major with the left side unbounded:
    // earlier keys are seen by more queries) or n_kt - 1 - i (tile-major, right unbounded).
    const LocalCtaTile cta = local_cta_tile(p.kv_tile_group, int64_t(p.B) * p.Hkv, n_kt);
    const int n_block = p.kv_tile_group > 0 && p.left >= 0 ? n_kt - 1 - cta.i : cta.i;
    const int hk = static_cast<int>(cta.slice % static_cast<uint32_t>(p.Hkv));
    const int64_t b = cta.slice / static_cast<uint32_t>(p.Hkv);
    const int key0 = n_block * kTileN;

    const LocalBand band = p.band();
    const int qt_first = static_cast<int>(band.query_tile_first(n_block));
    const int qt_last = static_cast<int>(band.query_tile_last(n_block));
    const int n_qt = qt_last - qt_first + 1;   // >= 1: the diagonal tile
    const int n_items = p.group * n_qt;        // (query head of the group, query tile), head-major
    // Query tile m is full iff full_lo <= 64 m and 64 m + 63 <= full_hi (see query_tile_full).
    const int full_lo = static_cast<int>(band.query_lo(band.tile_last_row(n_block)));
    const int full_hi = static_cast<int>(band.query_hi(key0));
    RowInterval iv[2];   // allowed queries of this thread's two keys
    // Keys >= L (the last tile's zero-filled rows) get P = 0: their dk / dv rows are never stored,
    // and P = exp(-lse) != 0 there would be wrong in dv's product (iv does not exclude them where
    // the band reaches past L). Only a tile holding such keys needs key_ok, and its items all take
    // the masked path (keys_in false).
    bool key_ok[2];
    const bool keys_in = key0 + kTileN <= L;
#pragma unroll
    for (int r = 0; r < 2; ++r) {
        const int key = key0 + warp * 16 + g + 8 * r;
        iv[r].set(band.query_lo(key), band.query_hi(key), L);
        key_ok[r] = key < L;
    }

    auto head_ptr = [&](const TensorRef& t, int head) {
        return static_cast<const Element*>(t.ptr) + b * t.batch_stride + head * t.head_stride;
    };
    // An item's query head within the group (items are head-major, n_qt query tiles per head). The
    // wgmma kernels ask only for items - 1, item and item + 1 of the loop and derive it from item's
    // head gi_c with no integer division (4 divisions per item cost them 4-7 %, session 12); the
    // mma.sync kernels keep the division (counting raised their registers, d = 32 168 -> 218).
    int gi_c = 0;
    auto item_head = [&](int it) {
        if constexpr (kWgmma) {
            const int r = it - gi_c * n_qt;
            return r < 0 ? gi_c - 1 : (r >= n_qt ? gi_c + 1 : gi_c);
        } else {
            return it / n_qt;
        }
    };
    // Item `item`'s copies: q, dout and lse (kInputs), which predate the backward, and the
    // preprocess's D~ (kD).
    auto issue_loads = [&](int item, auto inputs, auto d_rows) {
        constexpr bool kInputs = decltype(inputs)::value, kD = decltype(d_rows)::value;
        const int gi = item_head(item);
        const int qt = qt_first + (item - gi * n_qt);
        const int h = hk * p.group + gi;
        const int st = item & 1;
        if constexpr (kInputs) {
            local_load_tile<kWgmma, kHoistLoads, Element, kHeadDim>(sQ + st * kTile, head_ptr(p.q, h), p.q.row_stride,
                                                                  qt * kTileM, L, d, tid);
            local_load_tile<kWgmma, kHoistLoads, Element, kHeadDim>(sO + st * kTile, head_ptr(p.dout, h),
                                                                  p.dout.row_stride, qt * kTileM, L, d, tid);
        }
        if (tid < kTileM) {
            // Rows >= L get lse = D = 0 (zero-fill); they are masked below (query_hi <= L - 1)
            // and their q, dout rows are zero.
            const int i = qt * kTileM + tid;
            const int ok = i < L ? 4 : 0;
            const int64_t src = (b * p.H + h) * int64_t(L) + (i < L ? i : 0);
            float* dst = sRow + st * 2 * kTileM;
            if constexpr (kInputs) cp_async_4(smem_u32(dst + tid), p.lse + src, ok);
            if constexpr (kD) cp_async_4(smem_u32(dst + kTileM + tid), p.dsum + src, ok);
        }
    };

    local_load_tile<kWgmma, kHoistLoads, Element, kHeadDim>(sK, head_ptr(p.k, hk), p.k.row_stride, key0, L, d, tid);
    local_load_tile<kWgmma, kHoistLoads, Element, kHeadDim>(sV, head_ptr(p.v, hk), p.v.row_stride, key0, L, d, tid);
    // Launched as the preprocess's programmatic dependent (launch_local_bwd_impl): k, v and the
    // first item's q, dout and lse predate the backward; D (issue_loads) and the max |dout|, |v|
    // (local_dp_bound) are the preprocess's, read after this wait (the first item's copies are
    // one commit group). The query side, this kernel's dependent, waits for it before it reads
    // anything the key side writes.
    issue_loads(0, std::true_type{}, std::false_type{});
    pdl_wait();
    pdl_launch_dependents();
    issue_loads(0, std::false_type{}, std::true_type{});
    cp_async_commit();

    const float sl = p.scale * kLog2e;
    float dk[kDT][4], dv[kDT][4];
    zero_acc(dk);
    zero_acc(dv);

    // The fixed-point scale of the sums of P dP of the current query head, kTwo61 / dp_bound (0 when
    // the bound is 0), and whether the bound is finite: computed by the first 64 threads when the
    // head changes (items are head-major), so the flush below does no global load or division.
    double pdp_scale = 0.0;
    bool bound_finite = true;
    auto set_head_scale = [&](int item) {
        if (tid >= kTileM || item - item_head(item) * n_qt != 0) return;
        const double bound = local_dp_bound(p, b, hk * p.group + item_head(item));
        pdp_scale = bound > 0.0 ? kTwo61 / bound : 0.0;
        bound_finite = isfinite(bound);
    };

    // Item `it`'s sums of P dP per query: the 4 warps' column sums (staged at the end of the
    // item) added in warp order by the first 64 threads once the next barrier has passed, then
    // added in fixed point to the query's d_acc (integer atomics: any order gives the same bits).
    // pdp_scale and bound_finite are item `it`'s head's.
    auto flush_d = [&](int it) {
        const int gi = item_head(it);
        const int i = (qt_first + (it - gi * n_qt)) * kTileM + tid;
        if (tid >= kTileM || i >= L) return;
        const int h = hk * p.group + gi;
        const float sp =
            sum_staged_pdp<kNumThreads / 32>(sPdp, (it & 1) * (kNumThreads / 32) * kTileM + tid, kTileM);
        const int64_t row = (b * p.H + h) * int64_t(L) + i;
        if (isfinite(sp) && bound_finite) {
            const long long qp = __double2ll_rn(double(sp) * pdp_scale);
            if (qp != 0) atomicAdd(p.d_acc + row, static_cast<unsigned long long>(qp));
        } else {
            atomicOr(p.d_bad + row, 1);
        }
    };

    // d <= 64, wgmma: two items per loop trip, so that each copy's stage (item & 1) is a constant
    // and the q / dout tile addresses below stay in uniform registers (no R2UR per HGMMA): key side
    // -2 to -4 % (benchmarks/NOTES.md, session 13). At d = 128 the doubled loop spilled (255
    // registers) and ran 2-4 % slower: one item per trip and the per-item addresses there.
#pragma unroll((kWgmma && kHeadDim <= 64) ? 2 : 1)
    for (int item = 0; item < n_items; ++item) {
        cp_async_wait<0>();
        if constexpr (kWgmma) fence_proxy_async_smem();   // the copies -> visible to wgmma's reads
        __syncthreads();   // item landed for all threads; the other stage is free
        // mma.sync: item - 1's flush here; wgmma: while Sᵀ and dPᵀ run (it reads only the staged
        // sums of the other stage, which this item does not write before its products are done).
        if (!kWgmma && item > 0) flush_d(item - 1);
        if (item + 1 < n_items) issue_loads(item + 1, std::true_type{}, std::true_type{});
        cp_async_commit();
        const int st = item & 1;
        const int qt = qt_first + (item - item_head(item) * n_qt);
        const int q0 = qt * kTileM;
        const Element* tQ = sQ + st * kTile;
        const Element* tO = sO + st * kTile;
        // the wgmma path's shared addresses of tQ / tO: at d <= 64 from the base computed once (a
        // constant per copy of the unrolled loop, see above), at d = 128 from the tile pointer
        const uint32_t tQ_u = kHeadDim <= 64 ? sQ_u + uint32_t(st) * (kTile * 2) : smem_u32(tQ);
        const uint32_t tO_u = kHeadDim <= 64 ? sO_u + uint32_t(st) * (kTile * 2) : smem_u32(tO);
        const float* lse = sRow + st * 2 * kTileM;
        const float* dsum = lse + kTileM;

        // Sᵀ = k qᵀ and dPᵀ = v doutᵀ: this warp's 16 keys x the 64 queries of the tile.
        float s[kNT][4], dp[kNT][4];
        if constexpr (kWgmma) {
            wgmma_fence();
            wg_abt_issue<Element, kHeadDim>(s, smem_u32(sK), tQ_u);
            wg_abt_issue<Element, kHeadDim>(dp, smem_u32(sV), tO_u);
            wgmma_commit();
            if (item > 0) flush_d(item - 1);
            set_head_scale(item);
            wgmma_wait<0>();
            wgmma_fence_operand(s);
            wgmma_fence_operand(dp);
        } else {
            set_head_scale(item);
            zero_acc(s);
            zero_acc(dp);
            warp_mma_abt<kHeadDim>(s, sK, warp * 16, tQ, lane);
            warp_mma_abt<kHeadDim>(dp, sV, warp * 16, tO, lane);
        }

        const bool full = keys_in && full_lo <= q0 && q0 + kTileM - 1 <= full_hi;   // CTA-uniform
        // P dP summed over the thread's two keys, per query column
        float pdp[2 * kNT];
#pragma unroll
        for (int i = 0; i < 2 * kNT; ++i) pdp[i] = 0.f;
        if (full) local_kv_step_grads<true>(s, dp, pdp, lse, dsum, sl, iv, key_ok, q0, t4);
        else local_kv_step_grads<false>(s, dp, pdp, lse, dsum, sl, iv, key_ok, q0, t4);

        // sums of P dP over the warp's 16 keys, per query
        static_assert(kNT == 8, "stage_warp_pdp_sums sums a 64-column tile");
        stage_warp_pdp_sums(pdp, sPdp, (st * (kNumThreads / 32) + warp) * kTileM);

        // dv += Pᵀ dout, dk += dSᵀ q
        if constexpr (kWgmma) {
            wg_pb2<Element, kHeadDim>(dv, s, tO_u, dk, dp, tQ_u);
        } else {
            warp_mma_pb<kHeadDim>(dv, s, nullptr, tO, lane);
            warp_mma_pb<kHeadDim>(dk, dp, nullptr, tQ, lane);
        }
        if constexpr (kWgmma) gi_c = item_head(item + 1);
    }
    __syncthreads();
    flush_d(n_items - 1);

    auto dst = [&](const TensorRef& t) {
        return static_cast<Element*>(t.ptr) + b * t.batch_stride + hk * t.head_stride;
    };
    const float unused_inv[2] = {1.f, 1.f};
    warp_store_grad_rows<kHeadDim>(dk, false, sK, warp * 16, unused_inv, p.scale, dst(p.dk), p.dk.row_stride,
                                   key0 + warp * 16, L, d, lane);
    warp_store_grad_rows<kHeadDim>(dv, false, sK, warp * 16, unused_inv, 1.f, dst(p.dv), p.dv.row_stride,
                                   key0 + warp * 16, L, d, lane);
}

// ---------------------------------------------------------------------------------------------
// 3. Query side: dq.

template <int kHeadDim, bool kWgmma = false> struct LocalBwdQSmem {
    static constexpr int kTile = LocalBwdTile<kHeadDim, kWgmma>::kElems;
    // q and dout of the query tile; k stages (3 on wgmma: tile it + 1's products are issued before
    // tile it's dq, which still reads k), v stages (2). At d = 128 the wgmma kernel's 112 KB (+ the
    // 1 KB alignment slack and the 1 KB the driver reserves per CTA) fill an H100 SM's 228 KB with
    // 2 CTAs exactly.
    static constexpr int kKStages = kWgmma ? 3 : 2;
    static constexpr size_t kBytes =
        LocalBwdTile<kHeadDim, kWgmma>::kAlignPad + size_t(2 + kKStages + 2) * kTile * 2;
};

// One query-side step's dS = P o (dP - D) on this thread's two rows (r) x the step's keys from
// key0 (C-fragment layout) into ds (which may be dp), P = exp2(scale_log2 S - lse_log2) recomputed
// from s (kFull: every pair allowed; else keys outside the row's interval iv[r] get P = 0). Shared
// by the query-side kernel and its warp-specialised form.
template <bool kFull, int kNT>
FWA_DEVICE void local_q_step_ds(const float (&s)[kNT][4], const float (&dp)[kNT][4], float (&ds)[kNT][4], float sl,
                                const float (&lse2)[2], const float (&dsum)[2], const RowInterval (&iv)[2], int key0,
                                int t4) {
#pragma unroll
    for (int r = 0; r < 2; ++r) {
#pragma unroll
        for (int nt = 0; nt < kNT; ++nt) {
            float p0 = fast_exp2(fmaf(s[nt][2 * r], sl, -lse2[r]));
            float p1 = fast_exp2(fmaf(s[nt][2 * r + 1], sl, -lse2[r]));
            if constexpr (!kFull) {
                const int j = key0 + nt * 8 + 2 * t4;
                if (!iv[r].contains(j)) p0 = 0.f;
                if (!iv[r].contains(j + 1)) p1 = 0.f;
            }
            ds[nt][2 * r] = p0 * (dp[nt][2 * r] - dsum[r]);
            ds[nt][2 * r + 1] = p1 * (dp[nt][2 * r + 1] - dsum[r]);
        }
    }
}

template <typename Element, int kHeadDim, bool kWgmma>
__global__ void __launch_bounds__(kNumThreads) local_attn_bwd_q_kernel(const LocalBwdParams p) {
    constexpr int kTile = LocalBwdTile<kHeadDim, kWgmma>::kElems;
    constexpr int kNT = kTileN / 8;
    constexpr int kDT = kHeadDim / 8;

    extern __shared__ __align__(16) unsigned char smem_raw[];
    unsigned char* smem = kWgmma ? align_1024(smem_raw) : smem_raw;
    Element* sQ = reinterpret_cast<Element*>(smem);
    Element* sO = sQ + kTile;
    constexpr int kKStages = LocalBwdQSmem<kHeadDim, kWgmma>::kKStages;
    Element* sK = sO + kTile;               // kKStages stages
    Element* sV = sK + kKStages * kTile;    // 2 stages

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
    const int n_tiles = kt_last - kt_first + 1;
    const int full_lo = static_cast<int>(band.key_lo(band.tile_last_row(m_block)));
    const int full_hi = static_cast<int>(band.key_hi(row0));
    RowInterval iv[2];
    float lse2[2], dsum[2];
    const int64_t row_base = (b * p.H + h) * int64_t(L);
    // A programmatic dependent of the key side (launch_local_bwd_impl): q, dout, k, v and lse
    // predate the backward; the key side's d_acc sums and the preprocess's max |dout|, |v| are read
    // after the wait in read_rows, which every CTA passes (so the grid also completes only after
    // the key side's). The wgmma path copies q, dout and its first two key tiles and issues the
    // first tile's S and dP before it (they overlap the key side's last CTAs), the mma.sync path
    // its copies of q and dout.
    local_load_tile<kWgmma, false, Element, kHeadDim>(
        sQ, static_cast<const Element*>(p.q.ptr) + b * p.q.batch_stride + h * p.q.head_stride, p.q.row_stride, row0,
        L, d, tid);
    local_load_tile<kWgmma, false, Element, kHeadDim>(
        sO, static_cast<const Element*>(p.dout.ptr) + b * p.dout.batch_stride + h * p.dout.head_stride,
        p.dout.row_stride, row0, L, d, tid);
    auto read_rows = [&] {
        pdl_wait();
        const double bound = local_dp_bound(p, b, h);
#pragma unroll
        for (int r = 0; r < 2; ++r) {
            const int row = row0 + warp * 16 + g + 8 * r;
            iv[r].set(band.key_lo(row), band.key_hi(row), L);
            // Rows >= L: q and dout rows are zero-filled and dq is not stored; any finite value works.
            lse2[r] = row < L ? p.lse[row_base + row] * kLog2e : 0.f;
            dsum[r] = 0.f;
            if (row < L) {
                // D = sum P dP from the key side's fixed-point sum (units of dp_bound * 2^-61; sum P = 1
                // to within the fp32 rounding of lse)
                const int64_t id = row_base + row;
                const long long sp = static_cast<long long>(p.d_acc[id]);
                dsum[r] = p.d_bad[id] != 0 ? __int_as_float(0x7fffffff)
                                           : static_cast<float>(double(sp) * (bound / kTwo61));
            }
        }
    };

    const Element* k_base = static_cast<const Element*>(p.k.ptr) + b * p.k.batch_stride + hk * p.k.head_stride;
    const Element* v_base = static_cast<const Element*>(p.v.ptr) + b * p.v.batch_stride + hk * p.v.head_stride;
    auto issue_kv = [&](int kt, int kst, int vst) {
        local_load_tile<kWgmma, false, Element, kHeadDim>(sK + kst * kTile, k_base, p.k.row_stride, kt * kTileN, L, d, tid);
        local_load_tile<kWgmma, false, Element, kHeadDim>(sV + vst * kTile, v_base, p.v.row_stride, kt * kTileN, L, d, tid);
    };
    const float sl = p.scale * kLog2e;
    float dq[kDT][4];
    zero_acc(dq);

    // dS = P o (dP - D) into ds (which may be dp), P recomputed from s; instantiated for full and
    // edge tiles.
    auto tile_grads = [&](const float (&s)[kNT][4], const float (&dp)[kNT][4], float (&ds)[kNT][4], int key0) {
        const bool full = full_lo <= key0 && key0 + kTileN - 1 <= full_hi;   // CTA-uniform
        if (full) local_q_step_ds<true>(s, dp, ds, sl, lse2, dsum, iv, key0, t4);
        else local_q_step_ds<false>(s, dp, ds, sl, lse2, dsum, iv, key0, t4);
    };

    if constexpr (kWgmma) {
        // Pipelined across key tiles: S and dP of tile it + 1 are issued before dq of tile it, as
        // two commit groups, so tile it + 1's elementwise work (after wgmma_wait<1>) overlaps tile
        // it's dq product. k tile t in stage t % 3 (dq of t - 1 still reads it while S of t + 1
        // runs), v tile t in stage t % 2.
        issue_kv(kt_first, 0, 0);
        cp_async_commit();   // q, dout, tile 0
        if (n_tiles > 1) issue_kv(kt_first + 1, 1, 1);
        cp_async_commit();   // tile 1 (or empty)
        cp_async_wait<1>();
        fence_proxy_async_smem();
        __syncthreads();
        float s[kNT][4], dp[kNT][4];
        uint32_t a[kTileN / 16][4];   // dS of the current tile, packed: the A operand of its dq product
        // dS of tile `it` from s, dp (elementwise, into a separate array: writing the accumulators
        // while a product is in flight makes ptxas serialize the wgmmas, C7515).
        auto tile_ds = [&](int it, float (&ds)[kNT][4]) { tile_grads(s, dp, ds, (kt_first + it) * kTileN); };
        wgmma_fence_operand(dq);   // the zeros are written before the first wgmma is issued (C7515)
        wgmma_fence();
        wg_abt_issue<Element, kHeadDim>(s, smem_u32(sQ), smem_u32(sK));
        wg_abt_issue<Element, kHeadDim>(dp, smem_u32(sO), smem_u32(sV));
        wgmma_commit();
        read_rows();
        wgmma_wait<0>();
        wgmma_fence_operand(s);
        wgmma_fence_operand(dp);
        {
            float ds[kNT][4];
            tile_ds(0, ds);
            pack_p16<Element>(ds, a);
        }
        int k_cur = 0;   // k stage of tile it
        for (int it = 0; it + 1 < n_tiles; ++it) {
            cp_async_wait<0>();   // tile it + 1
            fence_proxy_async_smem();
            // Every warp is past dq of tile it - 1 and dP of tile it: k stage (it + 2) % 3 and v
            // stage it % 2 are free; tile it + 1 is visible.
            __syncthreads();
            const int k_next = k_cur == 2 ? 0 : k_cur + 1;
            const int k_free = k_next == 2 ? 0 : k_next + 1;
            if (it + 2 < n_tiles) issue_kv(kt_first + it + 2, k_free, it & 1);
            cp_async_commit();
            wgmma_fence();
            wg_abt_issue<Element, kHeadDim>(s, smem_u32(sQ), smem_u32(sK + k_next * kTile));
            wg_abt_issue<Element, kHeadDim>(dp, smem_u32(sO), smem_u32(sV + ((it + 1) & 1) * kTile));
            wgmma_commit();
            wg_pb_issue<Element, kHeadDim>(dq, a, smem_u32(sK + k_cur * kTile));   // dq' += dS k, tile it
            wgmma_commit();
            wgmma_wait<1>();   // S, dP of tile it + 1; dq of tile it still runs
            wgmma_fence_operand(s);
            wgmma_fence_operand(dp);
            float ds[kNT][4];
            tile_ds(it + 1, ds);
            wgmma_wait<0>();   // dq of tile it (it reads `a`)
            wgmma_fence_operand(dq);
            pack_p16<Element>(ds, a);
            k_cur = k_next;
        }
        wgmma_fence();
        wg_pb_issue<Element, kHeadDim>(dq, a, smem_u32(sK + k_cur * kTile));
        wgmma_commit();
        wgmma_wait<0>();
        wgmma_fence_operand(dq);
    } else {
        read_rows();
        issue_kv(kt_first, 0, 0);
        cp_async_commit();
        for (int it = 0; it < n_tiles; ++it) {
            cp_async_wait<0>();
            __syncthreads();
            if (it + 1 < n_tiles) issue_kv(kt_first + it + 1, (it + 1) & 1, (it + 1) & 1);
            cp_async_commit();
            const int st = it & 1;
            const Element* tK = sK + st * kTile;
            const Element* tV = sV + st * kTile;
            float s[kNT][4], dp[kNT][4];
            zero_acc(s);
            zero_acc(dp);
            warp_mma_abt<kHeadDim>(s, sQ, warp * 16, tK, lane);
            warp_mma_abt<kHeadDim>(dp, sO, warp * 16, tV, lane);
            tile_grads(s, dp, dp, (kt_first + it) * kTileN);
            warp_mma_pb<kHeadDim>(dq, dp, nullptr, tK, lane);
        }
    }

    const float unused_inv[2] = {1.f, 1.f};
    warp_store_grad_rows<kHeadDim>(dq, false, sQ, warp * 16, unused_inv, p.scale,
                                   static_cast<Element*>(p.dq.ptr) + b * p.dq.batch_stride + h * p.dq.head_stride,
                                   p.dq.row_stride, row0 + warp * 16, L, d, lane);
}

}  // namespace fwa

#include "local_bwd_kv_ws_kernel.cuh"   // the warp-specialised key side (uses the helpers above)
#include "local_bwd_q_ws_kernel.cuh"    // the warp-specialised query side

namespace fwa {

// ---------------------------------------------------------------------------------------------

template <typename Element, int kHeadDim, bool kWgmma>
cudaError_t launch_local_bwd_impl(const LocalBwdParams& p_in, cudaStream_t stream) {
    cudaError_t err;
    const int64_t n_t = (int64_t(p_in.L) + kTileM - 1) / kTileM;
    const int64_t q_grid = n_t * p_in.H * p_in.B;
    const int64_t kv_grid = n_t * p_in.Hkv * p_in.B;
    if (q_grid == 0 || kv_grid == 0) return cudaSuccess;
    if (q_grid > 0x7fffffffLL || kv_grid > 0x7fffffffLL) return cudaErrorInvalidConfiguration;
    // preprocess -> key side -> query side (the kernels below or the warp-specialised ones): on
    // sm_90a (FWA_WINDOW_PDL, as the window op's chain) each is the previous one's programmatic
    // dependent, launched while the previous grid's last CTAs run (the griddepcontrol instructions
    // are in the sm_90 code only: FWA_SM90A_BUILT on a 9.0 device).
#ifdef FWA_SM90A_BUILT
    const bool pdl_chain = window_pdl_enabled() && current_device_is_sm90();
#else
    const bool pdl_chain = false;
#endif
    LocalBwdParams p = p_in;
    // The warp-specialised key side (local_bwd_kv_ws_kernel.cuh) and query side
    // (local_bwd_q_ws_kernel.cuh) where local_bwd_kv_use_ws / local_bwd_q_use_ws pick them and the
    // tensor maps (made once, for both) can be made; the kernels below otherwise.
    bool kv_ws = false, q_ws = false;
    LocalBwdTmaMaps maps;
    if constexpr (kWgmma) {
        constexpr int kKvCons = local_bwd_kv_ws_consumers(kHeadDim);
        constexpr int kQCons = kLocalBwdQWsConsumers;
        kv_ws = local_bwd_kv_use_ws(local_bwd_ws_items<int64_t>(p.B, p.Hkv, p.L, kKvCons), num_sms());
        q_ws = local_bwd_q_use_ws(local_bwd_ws_items<int64_t>(p.B, p.H, p.L, kQCons), num_sms());
        if ((kv_ws || q_ws) && !make_local_bwd_tma_maps(&maps, p, std::is_same<Element, __nv_bfloat16>::value))
            kv_ws = q_ws = false;
    }
    // The residual-D backward (LocalBwdParams::residual_d) where the forward gave out_lo and both
    // sides are warp-specialised (the other kernels keep the exact-D sums); FWA_LOCAL_BWD_RESIDUAL=0
    // never (A/B timing, tests).
    p.residual_d = p.out_lo.ptr != nullptr && kv_ws && q_ws && local_bwd_residual_d_enabled();
    if (!p.residual_d && p.sums_bytes > 0) {
        if ((err = cudaMemsetAsync(p.d_acc, 0, p.sums_bytes, stream)) != cudaSuccess) return err;
    }
    {
        // kPrepRows rows per CTA; the slices of dout and of v (not in the residual-D backward,
        // which takes no max), each in `chunks` pieces
        const int chunks = static_cast<int>(std::min<int64_t>((int64_t(p.L) + kPrepRows - 1) / kPrepRows, 1 << 16));
        const int64_t grid = (int64_t(p.B) * p.H + (p.residual_d ? 0 : int64_t(p.B) * p.Hkv)) * chunks;
        if (grid > 0x7fffffffLL) return cudaErrorInvalidConfiguration;
        local_attn_bwd_prep_kernel<Element, kHeadDim><<<static_cast<unsigned>(grid), kNumThreads, 0, stream>>>(p, chunks);
        if ((err = cudaGetLastError()) != cudaSuccess) return err;
    }
    if constexpr (kWgmma) {
        if (kv_ws) {
            constexpr int kCons = local_bwd_kv_ws_consumers(kHeadDim);
            if ((err = launch_local_bwd_kv_ws<Element, kHeadDim, kCons>(p, stream, pdl_chain, &maps)) != cudaSuccess)
                return err;
        }
    }
    if (!kv_ws) {
        constexpr size_t smem = LocalBwdKvSmem<kHeadDim, kWgmma>::kBytes;
        int ctas = 0;
        if ((err = prepare_kernel<local_attn_bwd_kv_kernel<Element, kHeadDim, kWgmma>>(smem, kNumThreads, &ctas)) != cudaSuccess)
            return err;
        cudaLaunchAttribute attr;
        const cudaLaunchConfig_t cfg =
            launch_config(dim3(static_cast<unsigned>(kv_grid)), dim3(kNumThreads), smem, stream, pdl_chain, attr);
        if ((err = cudaLaunchKernelEx(&cfg, local_attn_bwd_kv_kernel<Element, kHeadDim, kWgmma>, p)) != cudaSuccess)
            return err;
    }
    if constexpr (kWgmma) {
        if (q_ws) return launch_local_bwd_q_ws<Element, kHeadDim, kLocalBwdQWsConsumers>(p, stream, pdl_chain, &maps);
    }
    {
        constexpr size_t smem = LocalBwdQSmem<kHeadDim, kWgmma>::kBytes;
        int ctas = 0;
        if ((err = prepare_kernel<local_attn_bwd_q_kernel<Element, kHeadDim, kWgmma>>(smem, kNumThreads, &ctas)) != cudaSuccess)
            return err;
        cudaLaunchAttribute attr;
        const cudaLaunchConfig_t cfg =
            launch_config(dim3(static_cast<unsigned>(q_grid)), dim3(kNumThreads), smem, stream, pdl_chain, attr);
        return cudaLaunchKernelEx(&cfg, local_attn_bwd_q_kernel<Element, kHeadDim, kWgmma>, p);
    }
}

// The wgmma kernels where local_wgmma_enabled(true) and d > 32, the mma.sync ones otherwise.
template <typename Element, int kHeadDim>
cudaError_t launch_local_bwd(const LocalBwdParams& p, cudaStream_t stream) {
    if constexpr (kHeadDim >= 64) {
        if (local_wgmma_enabled(true)) return launch_local_bwd_impl<Element, kHeadDim, true>(p, stream);
    }
    return launch_local_bwd_impl<Element, kHeadDim, false>(p, stream);
}

}  // namespace fwa
