// Pieces shared by the warp-specialised persistent sliding-window kernels (local_fwd_ws_kernel.cuh,
// local_bwd_q_ws_kernel.cuh, local_bwd_kv_ws_kernel.cuh): their rounds of work items, a consumer's
// deferred product, the epilogue through a 128-byte-swizzled shared tile, the backward's tensor
// maps and the persistent launch.
#pragma once
#include <cstdint>
#include <type_traits>
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "../kernel_utils.cuh"
#include "../launch_utils.h"
#include "../tma.h"
#include "../wgmma.cuh"
#include "local_attn.h"

namespace fwa {

// The work items of one persistent CTA: rounds of gridDim.x items, taken alternately in and
// against the order (a snake: items j, 2 P - 1 - j, 2 P + j, ... for CTA j of P). The items come
// heaviest first, so a CTA with a heavy item in one round gets a light one in the next (in plain
// round robin the first CTAs got the heaviest of every round: block256x16 0.077 -> 0.098 ms).
struct LocalWsRounds {
    uint32_t item, skip_even, skip_odd;
    int round = 0;
    FWA_DEVICE LocalWsRounds()
        : item(blockIdx.x), skip_even(2 * (gridDim.x - 1 - blockIdx.x) + 1), skip_odd(2 * blockIdx.x + 1) {}
    FWA_DEVICE void next() {
        ++round;
        item += (round & 1) ? skip_even : skip_odd;
    }
};

// A consumer's position in a ring of kStages stages: the stage of its next step and the parity of
// that stage's fill (gstep % kStages and (gstep / kStages) & 1 over its steps), counted. In the
// d = 64 warp-specialised forward, 3 stages with the division made ptxas serialise the wgmmas (C7511:
// session 53 run B; 2 stages, a power of two, compile to a mask and a shift).
template <int kStages>
struct WsStageCursor {
    int st = 0;
    uint32_t parity = 0;
    FWA_DEVICE void next() {
        st = st + 1 == kStages ? 0 : st + 1;
        parity ^= st == 0 ? 1u : 0u;
    }
};

// A consumer's deferred product (the forward's o += P v, kDeferPv; the query side's dq += dS k,
// kDeferDq): a step's product is issued with the next computed step's first products (`issue_with`:
// a second wgmma group, so the wait for the first leaves it running during that step's elementwise
// work; `finish` then completes it), and its stage is released once it completed. `after_step`
// completes it alone at the consumer's first step outside its band (a consumer holds two stages;
// keeping one until its next computed step deadlocks where an item's consumers' bands end 3 or more
// steps apart: the third step after its last needs that stage for its copies), `complete` at the
// item's end. The accumulator sees the same products in the same order as without the deferral.
// `issue(st)` issues the product's wgmmas on stage st's tile into `acc` (no fence, commit or wait).
struct WsDeferredProduct {
    bool pend = false;   // warpgroup-uniform: a deferred product (of stage st) is in flight
    int st = 0;
    // The product of step `step_st` (its operands in place) is left in flight for the next one.
    FWA_DEVICE void defer(int step_st) {
        pend = true;
        st = step_st;
    }
    template <typename Issue, typename Acc>
    FWA_DEVICE void complete(Issue&& issue, Acc& acc, uint32_t bar_empty) {
        wgmma_fence();
        issue(st);
        wgmma_commit();
        wgmma_wait<0>();
        wgmma_fence_operand(acc);
        mbar_arrive(bar_empty + 8 * st);
        pend = false;
    }
    // In a computed step, after its own products' commit: the deferred one as a second group, and
    // the wait for the first.
    template <typename Issue>
    FWA_DEVICE void issue_with(Issue&& issue) {
        issue(st);
        wgmma_commit();
        wgmma_wait<1>();
    }
    // ... after the step's elementwise work: the deferred product done, its stage released.
    template <typename Acc>
    FWA_DEVICE void finish(Acc& acc, uint32_t bar_empty) {
        wgmma_wait<0>();
        wgmma_fence_operand(acc);
        mbar_arrive(bar_empty + 8 * st);   // the deferred product read its stage
        pend = false;
    }
    // The end of step `step_st` of the item (computed or not) on a consumer of kDefer form.
    template <bool kDefer, typename Issue, typename Acc>
    FWA_DEVICE void after_step(bool computed, int step_st, Issue&& issue, Acc& acc, uint32_t bar_empty) {
        if (kDefer && !computed && pend) complete(issue, acc, bar_empty);
        // this thread no longer reads the stage (kDefer: the step released it, or its deferred
        // product will)
        if (!kDefer || !computed) mbar_arrive(bar_empty + 8 * step_st);
    }
};

// The mbarriers of a warp-specialised backward kernel (thread 0 initialises them), 8 bytes each
// from `bar`: full[kStages] (`full_count` arrivals plus the copies' bytes) and empty[kStages]
// (every consumer thread) of the streamed stages; tile_full[kCons] (one arrival plus the bytes)
// and tile_empty[kCons] (the consumer's threads) of each consumer's own tiles; info_full[2]
// (`info_count` producer threads) and info_empty[2] (every consumer thread) of the item values.
template <int kStages, int kCons>
FWA_DEVICE void ws_init_bars(uint32_t bar, uint32_t full_count, uint32_t info_count) {
    for (int s = 0; s < kStages; ++s) {
        mbar_init(bar + 8 * s, full_count);
        mbar_init(bar + 8 * (kStages + s), kCons * kNumThreads);
    }
    for (int c = 0; c < kCons; ++c) {
        mbar_init(bar + 8 * (2 * kStages + c), 1);
        mbar_init(bar + 8 * (2 * kStages + kCons + c), kNumThreads);
    }
    for (int i = 0; i < 2; ++i) {
        mbar_init(bar + 8 * (2 * kStages + 2 * kCons + i), info_count);
        mbar_init(bar + 8 * (2 * kStages + 2 * kCons + 2 + i), kCons * kNumThreads);
    }
    mbar_init_fence();
}

// Row r (0 or 1) of this thread's two accumulator rows (C-fragment layout, warpgroup row lrow),
// times f, rounded to Element into the warpgroup's 64-row 128-byte-swizzled tile (chunk j of row
// lrow at j ^ (lrow % 8)).
template <typename Element, int kDT>
FWA_DEVICE void ws_stage_row(unsigned char* tile, const float (&acc)[kDT][4], int r, int lrow, float f, int t4) {
    using Tr = ElementTraits<Element>;
#pragma unroll
    for (int i = 0; i < kDT; ++i)
        *reinterpret_cast<uint32_t*>(tile + (i / 8) * (kTileM * 128) + lrow * 128 + (((i % 8) ^ (lrow & 7)) << 4) + 4 * t4) =
            Tr::pack(acc[i][2 * r] * f, acc[i][2 * r + 1] * f);
}

// The staged tile's rows (after the warpgroup's barrier) to global rows row0 ... row0 + 63 of out,
// 16-byte chunks (rows outside [0, L) and columns >= d are not stored: row0 < 0 is the tile before
// the first of an item shifted by local_ws_items); wtid: the thread within the warpgroup.
template <typename Element, int kHeadDim>
FWA_DEVICE void ws_store_rows(const unsigned char* tile, Element* out, int64_t row_stride, int row0, int L, int d, int wtid) {
    constexpr int kDT = kHeadDim / 8;
#pragma unroll
    for (int i = 0; i < kTileM * kDT / kNumThreads; ++i) {
        const int ci = wtid + i * kNumThreads;
        const int lrow = ci / kDT, j = ci % kDT;
        const int row = row0 + lrow;
        if (static_cast<unsigned>(row) < static_cast<unsigned>(L) && j * 8 < d)
            *reinterpret_cast<uint4*>(out + int64_t(row) * row_stride + j * 8) =
                *reinterpret_cast<const uint4*>(tile + (j / 8) * (kTileM * 128) + lrow * 128 + (((j % 8) ^ (lrow & 7)) << 4));
    }
}

// The backward's tensor maps (q, dout, k, v; boxes of 64 rows x 64 columns). False where one
// cannot be made (the caller then runs the kernels without TMA).
struct LocalBwdTmaMaps {
    CUtensorMap tq, tdo, tk, tv;
};
// The parameters of both warp-specialised backward kernels (one __grid_constant__ struct: the
// maps must live in parameter, constant or global memory).
struct LocalBwdWsParams {
    LocalBwdParams p;
    LocalBwdTmaMaps m;
};
inline bool make_local_bwd_tma_maps(LocalBwdTmaMaps* m, const LocalBwdParams& p, bool bf16) {
    return make_tma_map_bhld(&m->tq, p.q.ptr, bf16, p.B, p.H, p.L, p.d, p.q.batch_stride, p.q.head_stride, p.q.row_stride, kTileM) &&
           make_tma_map_bhld(&m->tdo, p.dout.ptr, bf16, p.B, p.H, p.L, p.d, p.dout.batch_stride, p.dout.head_stride,
                             p.dout.row_stride, kTileM) &&
           make_tma_map_bhld(&m->tk, p.k.ptr, bf16, p.B, p.Hkv, p.L, p.d, p.k.batch_stride, p.k.head_stride, p.k.row_stride, kTileN) &&
           make_tma_map_bhld(&m->tv, p.v.ptr, bf16, p.B, p.Hkv, p.L, p.d, p.v.batch_stride, p.v.head_stride, p.v.row_stride, kTileN);
}

// Launch a persistent kernel over `items` work items: as many CTAs as fit on the GPU at once
// (one per SM for these kernels), or one per item where there are fewer (or where `all`); where
// `pdl`, as the programmatic dependent of the previous kernel on the stream (launch_config).
template <auto Kernel, typename Params>
cudaError_t launch_ws_persistent(const Params& params, int64_t items, size_t smem, int threads, cudaStream_t stream,
                                 bool all = false, bool pdl = false) {
    int ctas = 0;
    cudaError_t err = prepare_kernel<Kernel>(smem, threads, &ctas);
    if (err != cudaSuccess) return err;
    const int64_t resident = int64_t(ctas > 0 ? ctas : 1) * num_sms();
    const unsigned blocks = static_cast<unsigned>(all || items < resident ? items : resident);
    cudaLaunchAttribute attr;
    const cudaLaunchConfig_t cfg = launch_config(dim3(blocks), dim3(threads), smem, stream, pdl, attr);
    return cudaLaunchKernelEx(&cfg, Kernel, params);
}

// Launch a warp-specialised backward kernel (kCons consumer warpgroups and the producer one) over
// `items` work items with p's tensor maps, where `pdl` as a programmatic dependent (the backward's
// chain, launch_local_bwd_impl). Returns cudaErrorNotSupported, launching nothing, where a tensor
// map cannot be made (the caller then runs the kernel without TMA).
// `maps`: the maps where the caller made them already (else made here).
template <auto Kernel, typename Element, int kCons>
cudaError_t launch_local_bwd_ws(const LocalBwdParams& p, int64_t items, size_t smem, cudaStream_t stream, bool pdl,
                                const LocalBwdTmaMaps* maps = nullptr) {
    if (items == 0) return cudaSuccess;
    if (items > 0x7fffffffLL) return cudaErrorInvalidConfiguration;
    LocalBwdWsParams wp;
    wp.p = p;
    if (maps != nullptr) wp.m = *maps;
    else if (!make_local_bwd_tma_maps(&wp.m, p, std::is_same<Element, __nv_bfloat16>::value)) return cudaErrorNotSupported;
    return launch_ws_persistent<Kernel>(wp, items, smem, kNumThreads * (kCons + 1), stream, false, pdl);
}

}  // namespace fwa
