// Local-attention forward on Hopper warpgroup MMA (wgmma, sm_90a), fp16/bf16, head dim 64 or 128
// (d <= 32 runs the mma.sync kernel), fp32 accumulation. Same band walk, masking, online softmax
// and outputs as local_fwd_kernel.cuh (the mma.sync kernel, used on every other device); the two
// products change:
//   S (64 x kKeys) = q kᵀ: kHeadDim / 16 wgmma m64n{kKeys}k16, q and k read from shared memory
//                        (kKeys = 64 keys per step, or 128 at d = 64: see the kernel);
//   O (64 x d)  += P v:  kKeys / 16 wgmma m64n{d}k16 per step, P from registers (the S accumulators
//                        packed to 16 bits: each warp's 16 rows of a wgmma accumulator are laid out
//                        as the mma.sync C fragment, and the register A operand is the mma.sync A
//                        fragment), v read from shared memory transposed (MN-major).
// One CTA = kWG warpgroups over kWG consecutive 64-query tiles (warpgroup w owns tile
// kWG m + w; its warp i rows 16 i .. 16 i + 15), sharing each streamed k / v tile: the CTA walks
// the union of its warpgroups' key-tile ranges, and a warpgroup computes only on the key tiles of
// its own range (the branch is warpgroup-uniform; the whole wgmma sequence, fence to wait, sits
// inside it). At d = 128 (168 registers, 80 KB of shared memory with one warpgroup: 2 CTAs per SM)
// kWG = 3 puts 3 warpgroups on an SM (see local_fwd_default_warpgroups); the cost is lock step at
// the CTA's barriers (kWG = 2, the same 2 warpgroups per SM as one-warpgroup CTAs, was 4-15 %
// slower).
// Tiles live in shared memory with the 128-byte swizzle (local_wgmma.cuh); the unswizzled
// core-matrix layout measured 1.5x slower than the mma.sync kernel (session 9).
//
// Schedule: per step, S, the softmax and P v in turn; k and v double-buffered with cp.async (the
// next step's copies overlap this step's products; 3 stages measured ~1 %, session 10), triple-
// buffered with one warpgroup at d = 128 (the small grids that keep this kernel: H200, session 46,
// win(256,256) B1 H4 L4096 forward 24.4-24.7 -> 24.0-24.4 us of GPU time, bitwise equal); the other
// warpgroups of the SM overlap each other's softmax and products. (An FA3-style overlap inside the
// warpgroup, S of tile j issued with P v of tile j - 1 and the softmax between them, with v
// triple-buffered, measured 2-7 % slower on the H100 at d = 64 and 128 in session 9; in session 11,
// without wgmma serialization, 3-4 % slower at one warpgroup per CTA and 0-1 % faster at 3 with
// each warpgroup on its own key steps: benchmarks/NOTES.md, tools/patches/fwd-overlap-per-warpgroup.patch.)
// Copies (session 60; the form chosen by load_streamed_tile_sw128_async, shared with the backward):
// a k / v tile whose 64 rows are all < L (at d = the head-dim bucket) is copied
// by load_full_tile_sw128_async, whose per-thread offsets stay across steps (the predicated copy
// re-derived rows, predicates and 64-bit addresses per 16-byte chunk: ~290 SASS instructions per
// step and warp at d = 128, now ~75); with one warpgroup at 64-key steps they are issued while S
// runs. H200, win(256,256) B1 H4 L4096 d128 forward GPU time 24.5-24.7 -> 21.9-22.0 us (the fast
// copies alone 22.1-22.2), bitwise equal.
#pragma once
#include <type_traits>

#include "../launch_utils.h"
#include "../warp_mma.cuh"
#include "local_attn.h"
#include "local_fwd_kernel.cuh"   // local_query_block, local_softmax_step
#include "local_fwd_ws_kernel.cuh"
#include "local_wgmma.cuh"

namespace fwa {

template <int kHeadDim, int kWG, int kKeys = kTileN> struct LocalFwdWgmmaSmem {
    static constexpr int kTileBytes = kTileM * kHeadDim * 2;   // a multiple of 1024
    // k and v stages each: 3 with one warpgroup at d = 128 (113 KB: still 2 CTAs per SM, the
    // copies two steps ahead), else 2.
    static constexpr int kStages = kWG == 1 && kHeadDim == 128 && kKeys == kTileN ? 3 : 2;
    static constexpr int kStageBytes = kKeys / kTileN * kTileBytes;
    // kWG q tiles, k stages, v stages; the output is staged (padded rows) in the k and v stages at
    // the end. +1 KB: the tiles start at the first 1024-byte-aligned shared address (128-byte swizzle).
    static constexpr size_t kBytes = size_t(kWG) * kTileBytes + size_t(2 * kStages) * kStageBytes + 1024;
    static_assert(size_t(kWG) * kTileM * (kHeadDim + 8) * 2 <= size_t(2 * kStages) * kStageBytes,
                  "output staging fits");
};

// CTAs per SM the registers must allow: (kWG = 1) 168 registers at d = 128 (2 CTAs), 128 at d = 64
// (3 CTAs); (kWG = 2) 1 CTA at d = 128, 2 at d = 64 (4 warpgroups: 128 registers); kWG = 3: 1.
template <int kHeadDim, int kWG> constexpr int local_fwd_wgmma_min_blocks() {
    return kWG == 1 ? (kHeadDim <= 64 ? 3 : 2) : (kWG == 2 && kHeadDim <= 64 ? 2 : 1);
}

// kKeys: keys per step, 64 (one key tile) or, at d = 64, 128 (two adjacent 64-key tiles, whose
// 128-byte-swizzled 64-row panels are contiguous: one wgmma m64n128k16 per k16 step of S, and P v
// over 8 k16 steps; half the barriers, waits and softmax passes per key).
template <typename Element, int kHeadDim, int kWG, int kKeys = kTileN>
__global__ void __launch_bounds__(kNumThreads * kWG, local_fwd_wgmma_min_blocks<kHeadDim, kWG>())
local_attn_fwd_wgmma_kernel(const LocalFwdParams p) {
#if FWA_HAS_WGMMA
    static_assert(kKeys == kTileN || (kKeys == 2 * kTileN && kHeadDim == 64), "128-key steps: d = 64 only");
    // out's row sums of the 16-bit P (local_exp_row): on the tensor cores (p16_row_sums) at 64-key
    // steps, by FADDs in the softmax at 128-key steps (with the tensor-core sums ptxas serialised
    // that kernel's wgmmas, C7511). The 64-key steps take them only where p.norm16 (the residual-D
    // backward's grid; elsewhere out is normalised by the fp32 sums and nothing reads the 16-bit ones).
    constexpr bool kMmaSums = kKeys == kTileN;
    using TSum16 = std::conditional_t<kMmaSums, void, Element>;
    using Tr = ElementTraits<Element>;
    using Smem = LocalFwdWgmmaSmem<kHeadDim, kWG, kKeys>;
    constexpr int kThreads = kNumThreads * kWG;
    constexpr int kT = kKeys / kTileN;   // 64-key tiles per step
    constexpr int kNT = kKeys / 8;
    constexpr int kDT = kHeadDim / 8;
    constexpr int kKS = kHeadDim / 16;
    constexpr int kKK = kKeys / 16;
    constexpr uint32_t kTB = Smem::kTileBytes;

    extern __shared__ __align__(128) unsigned char smem_raw[];
    const uint32_t smem_base = smem_u32(smem_raw);
    const uint32_t sQ0 = (smem_base + 1023u) & ~1023u;   // kWG q tiles
    const uint32_t sK = sQ0 + kWG * kTB;                 // kStages stages
    const uint32_t sV = sK + Smem::kStages * Smem::kStageBytes;   // kStages stages

    const int tid = threadIdx.x;
    const int wg = kWG == 1 ? 0 : tid / kNumThreads, wtid = kWG == 1 ? tid : tid % kNumThreads;
    const int warp = wtid >> 5, lane = tid & 31;   // warp: within the warpgroup
    const int g = lane >> 2, t4 = lane & 3;
    const int L = p.L, d = p.d;
    const int n_m = (L + kTileM * kWG - 1) / (kTileM * kWG);

    const LocalQueryBlock qb = local_query_block(p, n_m);
    const int m_block = qb.m_block, h = qb.h, hk = qb.hk;
    const int64_t b = qb.b;

    const LocalBand band = p.band();
    const int n_sub = static_cast<int>(band.num_tiles());     // 64-row query tiles
    const int sub0 = m_block * kWG;                           // the CTA's first
    const int sub_last = min(sub0 + kWG - 1, n_sub - 1);      // and last (< L) query tile
    const int sub = sub0 + wg;                                // this warpgroup's
    const bool wg_rows = sub < n_sub;                         // false: rows >= L only, no work
    const uint32_t sQ = sQ0 + wg * kTB;
    const int row0 = sub * kTileM;
    // Key tiles: the CTA walks [kt_first, kt_last], this warpgroup computes on [my_first, my_last].
    const int kt_first = static_cast<int>(band.key_tile_first(sub0));
    const int kt_last = static_cast<int>(band.key_tile_last(sub_last));
    const int n_tiles = kt_last - kt_first + 1;   // >= 1: the diagonal tile
    const int my_first = wg_rows ? static_cast<int>(band.key_tile_first(sub)) : kt_last + 1;
    const int my_last = wg_rows ? static_cast<int>(band.key_tile_last(sub)) : kt_first - 1;
    const int full_lo = static_cast<int>(band.key_lo(band.tile_last_row(sub)));
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
    auto k_stage = [&](int it) { return sK + (it % Smem::kStages) * Smem::kStageBytes; };
    auto v_stage = [&](int it) { return sV + (it % Smem::kStages) * Smem::kStageBytes; };
    auto issue_kv = [&](int it) {   // all kWG warpgroups; tiles past the band or L are loaded / zero-filled and masked
#pragma unroll
        for (int t = 0; t < kT; ++t) {
            // (128-key steps: a second tile past the band is not loaded: its step is a half step)
            if (t > 0 && kt_first + it * kT + t > kt_last) break;
            const int key0 = (kt_first + it * kT + t) * kTileN;
            load_streamed_tile_sw128_async<Element, kHeadDim, kThreads>(k_stage(it) + t * kTB, k_base, p.k.row_stride, key0, L, d, tid);
            load_streamed_tile_sw128_async<Element, kHeadDim, kThreads>(v_stage(it) + t * kTB, v_base, p.v.row_stride, key0, L, d, tid);
        }
    };

    load_tile_sw128_async<Element, kHeadDim, kNumThreads>(sQ, q_base, p.q.row_stride, row0, L, d, wtid);
    issue_kv(0);
    cp_async_commit();
    constexpr int kAhead = Smem::kStages - 1;   // steps whose copies are in flight ahead of a step
    const int n_steps = (n_tiles + kT - 1) / kT;
    if constexpr (kAhead == 2) {
        if (n_steps > 1) issue_kv(1);
        cp_async_commit();
    }

    const float sl = p.scale * kLog2e;   // logits in log2 units: the softmax runs on exp2
    float o_acc[kDT][4];
    zero_acc(o_acc);
    float row_max[2] = {-INFINITY, -INFINITY}, row_sum[2] = {0.f, 0.f}, row_sum16[2] = {0.f, 0.f};
    float s[kNT][4];
    uint32_t pa[kKK][4];   // P of the current tile, 16 bits

    // Scale and mask tile `it`'s logits in s, online softmax; corr[r] is the factor O's row r must be
    // rescaled by before tile `it`'s P v is added.
    // Returns whether O must be rescaled (local_softmax_step).
    auto softmax_tile = [&](int it, float (&corr)[2]) -> bool {
        const int key0 = (kt_first + it * kT) * kTileN;
        const bool full = full_lo <= key0 && key0 + kKeys - 1 <= full_hi;   // warpgroup-uniform
        if (full) return local_softmax_step<true, true, kHeadDim == 128, TSum16>(s, sl, iv, key0, t4, row_max, row_sum, row_sum16, corr);
        return local_softmax_step<false, true, kHeadDim == 128, TSum16>(s, sl, iv, key0, t4, row_max, row_sum, row_sum16, corr);
    };
    auto issue_s = [&](int it) {
#pragma unroll
        for (int ks = 0; ks < kKS; ++ks)
            wgmma_s<Element, kKeys>(s, qk_desc(sQ, ks), qk_desc(k_stage(it), ks), ks > 0);
        wgmma_commit();
    };
    auto issue_pv = [&](int it) {
#pragma unroll
        for (int kk = 0; kk < kKK; ++kk) wgmma_pv<Element, kHeadDim>(o_acc, pa[kk], v_desc(v_stage(it), kk), 1);
        wgmma_commit();
    };
    // Half step (128-key steps, kT = 2): the step's second tile lies past the band, which happens
    // on the last step when the band spans an odd number of tiles (every other query tile of a
    // causal band: its diagonal tile is the first of a step). S of the first 64 keys only (m64n64;
    // the other half of s is set to 0, and the masked softmax sets it to -inf as every key past the
    // band), and P v over those 64 keys (P is 0 beyond them): half the products of a full step.
    // Bitwise the same out and lse as the full step (the skipped terms were 0 x v).
    auto issue_s_half = [&](int it) {
        float(&s_lo)[kTileN / 8][4] = *reinterpret_cast<float(*)[kTileN / 8][4]>(&s[0][0]);
#pragma unroll
        for (int ks = 0; ks < kKS; ++ks)
            wgmma_s<Element, kTileN>(s_lo, qk_desc(sQ, ks), qk_desc(k_stage(it), ks), ks > 0);
        wgmma_commit();
    };
    auto issue_pv_half = [&](int it) {
#pragma unroll
        for (int kk = 0; kk < kTileN / 16; ++kk) wgmma_pv<Element, kHeadDim>(o_acc, pa[kk], v_desc(v_stage(it), kk), 1);
        wgmma_commit();
    };

    // Top of step it: step it's copies landed for every thread (one commit group per step; the
    // kAhead - 1 newest may still be in flight) and every warp finished step it - 1, so step
    // it + kAhead may go to the stages of step it - 1.
    for (int it = 0; it < n_steps; ++it) {
        cp_async_wait<kAhead - 1>();
        fence_proxy_async_smem();   // this thread's copies -> visible to wgmma's reads
        __syncthreads();
        // The copies of step it + kAhead: with one warpgroup at 64-key steps, issued while S runs
        // (below; at 128-key steps there ptxas serialised the wgmmas, C7511).
        constexpr bool kCopiesInS = kWG == 1 && kKeys == kTileN;
        auto issue_ahead = [&] {
            if (it + kAhead < n_steps) issue_kv(it + kAhead);
            cp_async_commit();
        };
        if constexpr (!kCopiesInS) issue_ahead();

        const int kt = kt_first + it * kT;
        // One step, fence to wait; a half step is a separate copy of the whole sequence (with the
        // choice between the products inside one sequence, ptxas serialised the wgmmas, C7520).
        auto step = [&](auto half_step) {
            constexpr bool kHalfStep = decltype(half_step)::value;
            wgmma_fence();   // s, pa and o_acc were last written by ordinary instructions
            if constexpr (kHalfStep) issue_s_half(it);
            else issue_s(it);
            if constexpr (kCopiesInS) issue_ahead();
            wgmma_wait<0>();
            wgmma_fence_operand(s);
            if constexpr (kHalfStep) {   // define the other half (masked below) so no stale value stays live
#pragma unroll
                for (int nt = kTileN / 8; nt < kNT; ++nt) s[nt][0] = s[nt][1] = s[nt][2] = s[nt][3] = 0.f;
            }
            float corr[2];
            if (softmax_tile(it, corr)) {
#pragma unroll
                for (int r = 0; r < 2; ++r) rescale_acc_row(o_acc, r, corr[r]);
            }
            pack_p16<Element>(s, pa);
            if constexpr (kMmaSums) {
                if (p.norm16) p16_row_sums<Element>(pa, corr, row_sum16);   // (grid-uniform)
            }
            wgmma_fence();
            if constexpr (kHalfStep) issue_pv_half(it);
            else issue_pv(it);
            wgmma_wait<0>();
            wgmma_fence_operand(o_acc);
        };
        if (kWG == 1 || (my_first <= kt + kT - 1 && kt <= my_last)) {   // warpgroup-uniform
            if (kT == 2 && kt + 1 > kt_last) step(std::true_type{});      // CTA-uniform (kWG = 1)
            else step(std::false_type{});
        }
    }

    // Epilogue: normalise, stage the rows (padded row layout) in the k stages, store 16-byte chunks.
    __syncthreads();   // every warp's products are done (the k and v stages are free)
    constexpr int kPitch = kHeadDim + 8;
    Element* out = static_cast<Element*>(p.out.ptr) + b * p.out.batch_stride + h * p.out.head_stride;
    Element* sOut = reinterpret_cast<Element*>(smem_raw + (sK - smem_base)) + (wg * 4 + warp) * 16 * kPitch;
#pragma unroll
    for (int r = 0; r < 2; ++r) {
        const int lrow = g + 8 * r;
        const int row = row0 + warp * 16 + lrow;
        const float l = quad_sum(row_sum[r]), l16 = kMmaSums ? row_sum16[r] : quad_sum(row_sum16[r]);
        const float nrm = !kMmaSums || p.norm16 ? l16 : l;
        const float inv = nrm == 0.f ? 0.f : 1.f / nrm;   // out's weights sum to 1 (local_exp_row); 0: rows outside [0, L)
        if (row < L && t4 == 0)
            p.lse[(b * p.H + h) * L + row] = l == 0.f ? INFINITY : (row_max[r] + log2f(l)) * kLn2;
        float x[kDT][2];
        uint32_t packed[kDT];
#pragma unroll
        for (int i = 0; i < kDT; ++i) {
            x[i][0] = o_acc[i][2 * r] * inv;
            x[i][1] = o_acc[i][2 * r + 1] * inv;
            packed[i] = Tr::pack(x[i][0], x[i][1]);
            *reinterpret_cast<uint32_t*>(sOut + lrow * kPitch + i * 8 + 2 * t4) = packed[i];
        }
        local_store_out_lo<Element, kDT>(p, b, h, row, t4, x, packed);
    }
    __syncwarp();
#pragma unroll
    for (int c = lane; c < 16 * kDT; c += 32) {
        const int lrow = c / kDT, col = (c % kDT) * 8;
        const int row = row0 + warp * 16 + lrow;
        if (row < L && col < d)
            *reinterpret_cast<uint4*>(out + int64_t(row) * p.out.row_stride + col) =
                *reinterpret_cast<const uint4*>(sOut + lrow * kPitch + col);
    }
#else
    __trap();   // launched only where the sm_90a code exists (local_wgmma_enabled)
#endif
}

template <typename Element, int kHeadDim, int kWG, int kKeys = kTileN>
cudaError_t launch_local_fwd_wgmma_wg(const LocalFwdParams& p, cudaStream_t stream) {
    const int64_t n_m = (int64_t(p.L) + kTileM * kWG - 1) / (kTileM * kWG);
    const int64_t grid = n_m * p.H * p.B;
    if (grid == 0) return cudaSuccess;
    if (grid > 0x7fffffffLL) return cudaErrorInvalidConfiguration;
    constexpr size_t smem = LocalFwdWgmmaSmem<kHeadDim, kWG, kKeys>::kBytes;
    int ctas = 0;
    cudaError_t err =
        prepare_kernel<local_attn_fwd_wgmma_kernel<Element, kHeadDim, kWG, kKeys>>(smem, kNumThreads * kWG, &ctas);
    if (err != cudaSuccess) return err;
    local_attn_fwd_wgmma_kernel<Element, kHeadDim, kWG, kKeys>
        <<<static_cast<unsigned>(grid), kNumThreads * kWG, smem, stream>>>(p);
    return cudaGetLastError();
}

// Warpgroups per CTA: FWA_LOCAL_WG or local_fwd_default_warpgroups (local_attn.h).
template <typename Element, int kHeadDim>
cudaError_t launch_local_fwd_wgmma(const LocalFwdParams& p, cudaStream_t stream) {
    int wg = local_wgmma_warpgroups(0);
    if (wg == 0) wg = local_fwd_default_warpgroups(kHeadDim, p.L, int64_t(p.B) * p.H, num_sms());
    {
        // The warp-specialised TMA kernel (local_fwd_ws_kernel.cuh) where local_fwd_use_ws picks
        // it and the tensor maps can be made (else cudaErrorNotSupported: the kernels below).
        constexpr int kCons = kLocalFwdWsConsumers;
        const int64_t ws_ctas = (int64_t(p.L) + kCons * kTileM - 1) / (kCons * kTileM) * p.B * p.H;
        if (local_fwd_use_ws(ws_ctas, num_sms())) {
            const cudaError_t err = launch_local_fwd_ws<Element, kHeadDim, kCons>(p, stream);
            if (err != cudaErrorNotSupported) return err;
        }
    }
    if constexpr (kHeadDim == 64) {
        if (wg == 1 && local_fwd_keys_per_step(kLocalFwdKeysD64) == 128)
            return launch_local_fwd_wgmma_wg<Element, kHeadDim, 1, 128>(p, stream);
    }
    switch (wg) {
        case 2: return launch_local_fwd_wgmma_wg<Element, kHeadDim, 2>(p, stream);
        case 3: return launch_local_fwd_wgmma_wg<Element, kHeadDim, 3>(p, stream);
        default: return launch_local_fwd_wgmma_wg<Element, kHeadDim, 1>(p, stream);
    }
}

}  // namespace fwa
