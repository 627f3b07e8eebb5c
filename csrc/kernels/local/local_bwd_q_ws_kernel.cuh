// Local-attention backward, query side (dq), on Hopper, warp-specialised (sm_90a), fp16/bf16,
// head-dim buckets 64 and 128: the products, masking and dS of local_attn_bwd_q_kernel's wgmma
// path (local_bwd_kernels.cuh, 3.) with the copies moved to the bulk tensor copy engine (TMA) and
// decoupled from the math, in the structure of the warp-specialised forward
// (local_fwd_ws_kernel.cuh):
//   - a work item is kCons consecutive 64-query tiles of one (b, h) slice (shifted by p.ws_shift:
//     local_fwd_ws_item, local_ws_items in local_band.h), in local_query_block's order; the grid
//     is persistent (one CTA per SM, one item per round, snake-order rounds);
//   - producer warpgroup (setmaxnreg down): warp 0's lane 0 copies each consumer's q and dout
//     tiles (one buffer per consumer, refilled when that consumer has stored its dq) and each
//     64-key step's k and v tiles into kStages stages (full / empty mbarriers); warps 1 .. kCons
//     write each item's values (LocalBwdQWsInfo below: tile ranges, and per query row its allowed
//     key interval, lse in log2 units and D = Σ_j P_ij dP_ij from the key side's fixed-point sum)
//     into one of two info buffers, warp 1 + c the rows of consumer c's tile;
//   - kCons consumer warpgroups (setmaxnreg up), warpgroup c on the item's tile c: per step in its
//     band S = q kᵀ and dP = dout vᵀ (one wait), dS = P o (dP - D), dq += dS k (one wait; at
//     d = 64 issued with the next step's S and dP instead, kDeferDq), then the stage is released;
//     at the item's end dq (times scale) is staged in its own q tile (128-byte swizzle) and stored
//     as 16-byte chunks.
// No CTA-wide barrier. Products, their order and the elementwise code are the wgmma query-side
// kernel's: dq is bitwise the same.
// Included by local_bwd_kernels.cuh after its helpers (kTwo61, local_dp_bound).
#pragma once
#include <climits>

#include "../launch_utils.h"
#include "../tma.h"
#include "local_attn.h"
#include "local_fwd_ws_kernel.cuh"   // local_fwd_ws_item, LocalFwdWsItem, the warpgroups' registers
#include "local_wgmma.cuh"
#include "local_ws.cuh"

namespace fwa {

template <int kHeadDim, int kCons, int kStages> struct LocalBwdQWsSmem {
    static constexpr int kTile = kTileM * kHeadDim * 2;   // a 64-row 128-byte-swizzled tile: 8 / 16 KB
    static constexpr int kQOff = 0;                       // per consumer: q, then dout
    static constexpr int kKOff = 2 * kCons * kTile;       // per stage: k, then v
    static constexpr int kBarOff = kKOff + 2 * kStages * kTile;
    // full[kStages], empty[kStages], q_full[kCons], q_empty[kCons], info_full[2], info_empty[2]
    static constexpr int kInfoOff = kBarOff + 8 * (2 * kStages + 2 * kCons + 4);
    // LocalBwdQWsInfo: ints [0] kt_first, [1] n_steps (-1: no more items), [2] h, [3] b, [4] the
    // first query tile; per consumer c at 8 + 4 c: its first and last key tile (INT_MAX / INT_MIN:
    // no rows < L, or a tile < 0) and the key range [full_lo, full_hi] every one of its rows
    // allows; then per row of the item (kCons x 64) from kRows: RowInterval lo, span, then
    // lse * log2(e) and D (float bits), each kCons x 64 further.
    static constexpr int kRows = 8 + 4 * kCons;
    static constexpr int kInfoInts = kRows + 4 * kCons * kTileM;
    static constexpr size_t kBytes = size_t(kInfoOff) + 2 * 4 * kInfoInts + 1024;   // + alignment slack
};


// Each step's dq product deferred to the consumer's next computed step (the kernel's kDeferDq) at
// d = 64 only. H100, bf16, query-side kernel time (session 39 run J, 2 rounds, dq bitwise
// unchanged): block256x16 B1 H12 L4096 0.077 -> 0.072 ms, causal B8 H16 L2048 0.203-0.206 ->
// 0.196-0.198. At d = 128 (dq 64 of the 160 registers) the deferred kernel spilled 180 bytes and
// ptxas serialised its wgmmas (C7512).
template <int kHeadDim> constexpr bool local_bwd_q_ws_defer_dq() { return kHeadDim == 64; }

// kResidualD (LocalBwdParams::residual_d): D is the preprocess's dout · (out + out_lo), read
// without waiting for the key side (see the info warps).
template <typename Element, int kHeadDim, int kCons, int kStages, bool kDeferDq, bool kResidualD = false>
__global__ void __launch_bounds__(kNumThreads * (kCons + 1), 1) local_attn_bwd_q_ws_kernel(const __grid_constant__ LocalBwdWsParams P) {
#if FWA_HAS_WGMMA
    static_assert(kHeadDim == 64 || kHeadDim == 128, "d = 64 / 128 buckets");
    static_assert(kCons >= 1 && kCons <= 3, "warps 1 .. kCons of the producer warpgroup write the items' rows");
    constexpr int kPanels = kHeadDim / 64;
    constexpr int kNT = kTileN / 8;
    constexpr int kDT = kHeadDim / 8;
    using Smem = LocalBwdQWsSmem<kHeadDim, kCons, kStages>;
    const LocalBwdParams& p = P.p;

    extern __shared__ __align__(16) unsigned char smem_raw[];
    const uint32_t base = (smem_u32(smem_raw) + 1023u) & ~1023u;
    const uint32_t sQ0 = base + Smem::kQOff, sK0 = base + Smem::kKOff;
    const uint32_t bar_full = base + Smem::kBarOff, bar_empty = bar_full + 8 * kStages;
    const uint32_t bar_qfull = bar_empty + 8 * kStages, bar_qempty = bar_qfull + 8 * kCons;
    const uint32_t bar_ifull = bar_qempty + 8 * kCons, bar_iempty = bar_ifull + 16;
    int* const info0 = reinterpret_cast<int*>(smem_raw + (base - smem_u32(smem_raw)) + Smem::kInfoOff);

    const int tid = threadIdx.x;
    const int wg = __shfl_sync(0xffffffffu, tid / kNumThreads, 0);   // 0: producer, 1..kCons: consumers
    const int L = p.L, d = p.d;
    const LocalBand band = p.band();
    const int n_sub = static_cast<int>(band.num_tiles());   // 64-row query tiles
    const int n_m = (n_sub + p.ws_shift + kCons - 1) / kCons;   // local_ws_items (local_fwd_ws_item)
    const uint32_t n_items = static_cast<uint32_t>(n_m) * static_cast<uint32_t>(p.H) * static_cast<uint32_t>(p.B);

    if (tid == 0) ws_init_bars<kStages, kCons>(bar_full, 1, 32 * kCons);   // info: producer warps 1 .. kCons
    __syncthreads();

    if (wg == 0) {
        // registers after setmaxnreg: the forward's (producer 32, 3 consumers 160 = (65536 - 128 x 32) / 384)
        regs_dealloc<kLocalFwdWsProducerRegs>();
        const int warp = tid >> 5, lane = tid & 31;
        if (warp == 0) {
            // The copies, from lane 0: per item the first steps' k / v (their stages free up as the
            // consumers finish the previous item's last steps), then each consumer's q / dout once
            // it has stored the previous item's dq, then the remaining steps.
            if (lane != 0) return;
            int gstep = 0, ti = 0;
            auto issue_step = [&](const LocalFwdWsItem& w, int it) {
                const int s = gstep % kStages, use = gstep / kStages;   // the stage's use-th fill
                if (use > 0) mbar_wait(bar_empty + 8 * s, (use - 1) & 1);
                const uint32_t full = bar_full + 8 * s;
                mbar_arrive_expect_tx(full, 2 * Smem::kTile);
                const int key0 = (w.kt_first + it) * kTileN;
                const uint32_t sk = sK0 + 2 * s * Smem::kTile;
#pragma unroll
                for (int pn = 0; pn < kPanels; ++pn) {
                    tma_load_4d(sk + pn * kTileN * 128, &P.m.tk, 64 * pn, key0, w.hk, w.b, full);
                    tma_load_4d(sk + Smem::kTile + pn * kTileN * 128, &P.m.tv, 64 * pn, key0, w.hk, w.b, full);
                }
                ++gstep;
            };
            for (LocalWsRounds rounds; rounds.item < n_items; rounds.next(), ++ti) {
                const LocalFwdWsItem w = local_fwd_ws_item<kCons, 1>(p, band, n_m, n_sub, rounds.item);
                const int first = w.n_steps < kStages ? w.n_steps : kStages;
                for (int it = 0; it < first; ++it) issue_step(w, it);
                for (int c = 0; c < kCons; ++c) {
                    if (ti > 0) mbar_wait(bar_qempty + 8 * c, (ti - 1) & 1);   // item ti - 1's dq stored
                    const uint32_t qf = bar_qfull + 8 * c;
                    mbar_arrive_expect_tx(qf, 2 * Smem::kTile);
                    const uint32_t sq = sQ0 + 2 * c * Smem::kTile;
                    const int row0 = max(w.sub0 + c, 0) * kTileM;   // (a tile < 0, of a shifted item: any rows)
#pragma unroll
                    for (int pn = 0; pn < kPanels; ++pn) {
                        tma_load_4d(sq + pn * kTileM * 128, &P.m.tq, 64 * pn, row0, w.h, w.b, qf);
                        tma_load_4d(sq + Smem::kTile + pn * kTileM * 128, &P.m.tdo, 64 * pn, row0, w.h, w.b, qf);
                    }
                }
                for (int it = first; it < w.n_steps; ++it) issue_step(w, it);
            }
            return;
        }
        if (warp > kCons) return;
        // Warp 1 + c: the values of consumer c's rows of each item, into info buffer ti & 1 once
        // the consumers are done with item ti - 2's; then one more (n_steps = -1) after the last.
        // Launched as the key side's programmatic dependent (launch_local_bwd_impl): its d_acc /
        // d_bad sums (and the preprocess's max |dout|, |v|) are read after this wait; warp 0's
        // copies (q, dout, k, v) predate the backward and the consumers need these warps' rows.
        // kResidualD: nothing of the key side is read, and this grid starts only once every key-
        // side CTA has passed its own pdl_wait (its pdl_launch_dependents follows it), so the
        // preprocess's D is complete: read from L2 (ld.cg) without waiting. Warp 1 waits at its
        // end instead, so that this grid still completes after the key side (the stream's order
        // for whatever follows). (A key-side CTA's pdl_wait returns once the preprocess has
        // completed and flushed its writes to global memory. Waiting here first instead cost
        // ~1 % of fwd+bwd at block256x16 and win(1024,0), H200, session 59:
        // tools/patches/local-bwd-q-ws-residual-wait-first-MIXED.patch.)
        if constexpr (!kResidualD) pdl_wait();
        const int c = warp - 1;
        LocalWsRounds rounds;
        for (int ti = 0;; rounds.next(), ++ti) {
            const uint32_t item = rounds.item;
            const int ib = ti & 1;
            if (ti >= 2) mbar_wait(bar_iempty + 8 * ib, ((ti >> 1) - 1) & 1);
            int* const info = info0 + Smem::kInfoInts * ib;
            if (item >= n_items) {
                if (c == 0 && lane == 0) info[1] = -1;
                mbar_arrive(bar_ifull + 8 * ib);
                break;
            }
            const LocalFwdWsItem w = local_fwd_ws_item<kCons, 1>(p, band, n_m, n_sub, item);
            if (c == 0 && lane == 0) {
                info[0] = w.kt_first;
                info[1] = w.n_steps;
                info[2] = w.h;
                info[3] = w.b;
                info[4] = w.sub0;
            }
            const int sub = w.sub0 + c;
            if (lane == 0) {
                const bool rows = sub >= 0 && sub < n_sub;
                info[8 + 4 * c] = rows ? static_cast<int>(band.key_tile_first(sub)) : INT_MAX;
                info[9 + 4 * c] = rows ? static_cast<int>(band.key_tile_last(sub)) : INT_MIN;
                info[10 + 4 * c] = static_cast<int>(band.key_lo(band.tile_last_row(sub)));
                info[11 + 4 * c] = static_cast<int>(band.key_hi(int64_t(sub) * kTileM));
            }
            const int64_t row_base = (int64_t(w.b) * p.H + w.h) * int64_t(L);
            const double scale_d = kResidualD ? 0.0 : local_dp_bound(p, w.b, w.h) / kTwo61;
            for (int r = lane; r < kTileM; r += 32) {
                const int lrow = c * kTileM + r;
                const int row = sub * kTileM + r;
                RowInterval iv;
                iv.set(band.key_lo(row), band.key_hi(row), L);
                float lse2 = 0.f, dsum = 0.f;   // rows >= L or < 0: any finite value (never computed on)
                if (row >= 0 && row < L) {
                    lse2 = p.lse[row_base + row] * kLog2e;
                    if constexpr (kResidualD) {
                        dsum = __ldcg(p.dsum + row_base + row);
                    } else {
                        const long long sp = static_cast<long long>(p.d_acc[row_base + row]);
                        dsum = p.d_bad[row_base + row] != 0 ? __int_as_float(0x7fffffff)
                                                            : static_cast<float>(double(sp) * scale_d);
                    }
                }
                info[Smem::kRows + lrow] = iv.lo;
                info[Smem::kRows + kCons * kTileM + lrow] = static_cast<int>(iv.span);
                info[Smem::kRows + 2 * kCons * kTileM + lrow] = __float_as_int(lse2);
                info[Smem::kRows + 3 * kCons * kTileM + lrow] = __float_as_int(dsum);
            }
            mbar_arrive(bar_ifull + 8 * ib);   // releases this lane's writes
        }
        if constexpr (kResidualD) {
            if (c == 0) pdl_wait();   // (see above: this CTA ends after the key side)
        }
        return;
    }

    // Consumer warpgroup c: query tile sub0 + c of each item.
    regs_alloc<local_fwd_ws_consumer_regs<kCons>()>();
    const int c = wg - 1, wtid = tid - wg * kNumThreads;
    const int warp = wtid >> 5, lane = tid & 31;
    const int g = lane >> 2, t4 = lane & 3;
    const float sl = p.scale * kLog2e;
    const uint32_t sQ = sQ0 + 2 * c * Smem::kTile, sO = sQ + Smem::kTile;
    // The consumer's next step's stage, counted (3 stages at d = 128: a division by 3 before
    // session 55, as in the forward before session 53).
    WsStageCursor<kStages> cur;
    for (int ti = 0;; ++ti) {
        const int ib = ti & 1;
        const volatile int* const info = info0 + Smem::kInfoInts * ib;
        mbar_wait(bar_ifull + 8 * ib, (ti >> 1) & 1);
        const int n_steps = info[1];
        if (n_steps < 0) break;
        const int kt_first = info[0];
        const int my_first = info[8 + 4 * c], my_last = info[9 + 4 * c];
        const int full_lo = info[10 + 4 * c], full_hi = info[11 + 4 * c];
        RowInterval iv[2];
        float lse2[2], dsum[2];
#pragma unroll
        for (int r = 0; r < 2; ++r) {
            const int lrow = c * kTileM + warp * 16 + g + 8 * r;
            iv[r].lo = info[Smem::kRows + lrow];
            iv[r].span = static_cast<unsigned>(info[Smem::kRows + kCons * kTileM + lrow]);
            lse2[r] = __int_as_float(info[Smem::kRows + 2 * kCons * kTileM + lrow]);
            dsum[r] = __int_as_float(info[Smem::kRows + 3 * kCons * kTileM + lrow]);
        }
        float dq[kDT][4];
        zero_acc(dq);
        wgmma_fence_operand(dq);   // the zeros are written before the first wgmma is issued (C7515)
        mbar_wait(bar_qfull + 8 * c, ti & 1);

        // kDeferDq (local_bwd_q_ws_defer_dq): a step's dq += dS k is issued with the next
        // computed step's S and dP and runs during that step's elementwise work, as the forward's
        // deferred P v (WsDeferredProduct): dq sees the same products in the same order (bitwise
        // unchanged).
        uint32_t a[kTileN / 16][4];   // dS of the deferred step (kDeferDq), packed
        WsDeferredProduct deferred;
        auto issue_pending = [&](int pst) { wg_pb_issue<Element, kHeadDim>(dq, a, sK0 + 2 * pst * Smem::kTile); };
        for (int it = 0; it < n_steps; ++it, cur.next()) {
            const int st = cur.st;
            const uint32_t kst = sK0 + 2 * st * Smem::kTile, vst = kst + Smem::kTile;
            mbar_wait(bar_full + 8 * st, cur.parity);
            const int kt = kt_first + it;
            // kPend: a deferred dq product is in flight (compile-time, so that every path that
            // issued it also waits for it before its registers are touched: C7513 / C7514)
            auto step = [&](auto pend_tag) {
                constexpr bool kPend = decltype(pend_tag)::value;
                float s[kNT][4], dp[kNT][4];
                wgmma_fence();
                wg_abt_issue<Element, kHeadDim>(s, sQ, kst);
                wg_abt_issue<Element, kHeadDim>(dp, sO, vst);
                wgmma_commit();
                if constexpr (kPend) deferred.issue_with(issue_pending);
                else wgmma_wait<0>();
                wgmma_fence_operand(s);
                wgmma_fence_operand(dp);
                // dS = P o (dP - D) into dp, P recomputed from s
                const int key0 = kt * kTileN;
                if (full_lo <= key0 && key0 + kTileN - 1 <= full_hi) local_q_step_ds<true>(s, dp, dp, sl, lse2, dsum, iv, key0, t4);
                else local_q_step_ds<false>(s, dp, dp, sl, lse2, dsum, iv, key0, t4);
                if constexpr (kPend) deferred.finish(dq, bar_empty);
                pack_p16<Element>(dp, a);
                if constexpr (kDeferDq) {
                    deferred.defer(st);
                } else {
                    wgmma_fence();
                    wg_pb_issue<Element, kHeadDim>(dq, a, kst);   // dq += dS k
                    wgmma_commit();
                    wgmma_wait<0>();
                    wgmma_fence_operand(dq);
                }
            };
            const bool computed = my_first <= kt && kt <= my_last;   // warpgroup-uniform
            if (computed) {
                if (kDeferDq && deferred.pend) step(std::true_type{});
                else step(std::false_type{});
            }
            deferred.after_step<kDeferDq>(computed, st, issue_pending, dq, bar_empty);
        }
        if (kDeferDq && deferred.pend) deferred.complete(issue_pending, dq, bar_empty);   // the item's last dq product

        // Epilogue: dq * scale staged in the warpgroup's own q tile (128-byte swizzle: chunk j of
        // row r at j ^ (r % 8); its products are done), stored as 16-byte chunks.
        const int h = info[2], b = info[3];
        const int row0 = (info[4] + c) * kTileM;
        Element* out = static_cast<Element*>(p.dq.ptr) + int64_t(b) * p.dq.batch_stride + int64_t(h) * p.dq.head_stride;
        unsigned char* tile = smem_raw + (sQ - smem_u32(smem_raw));
#pragma unroll
        for (int r = 0; r < 2; ++r) ws_stage_row<Element>(tile, dq, r, warp * 16 + g + 8 * r, p.scale, t4);
        mbar_arrive(bar_iempty + 8 * ib);   // the item's values are read (h, b, row0 above)
        group_sync(c);
        ws_store_rows<Element, kHeadDim>(tile, out, p.dq.row_stride, row0, L, d, wtid);
        fence_proxy_async_smem();   // this thread's tile accesses, before the copy engine refills it
        mbar_arrive(bar_qempty + 8 * c);
    }
#else
    __trap();   // launched only where the sm_90a code exists (local_wgmma_enabled)
#endif
}

// Launch the warp-specialised query side (where `pdl`, as the key side's programmatic dependent).
// Returns cudaErrorNotSupported, launching nothing, where a tensor map cannot be made (the caller
// then runs local_attn_bwd_q_kernel).
// `maps`: the tensor maps where the caller made them (else made here).
template <typename Element, int kHeadDim, int kCons>
cudaError_t launch_local_bwd_q_ws(const LocalBwdParams& p, cudaStream_t stream, bool pdl,
                                  const LocalBwdTmaMaps* maps = nullptr) {
    LocalBwdParams pq = p;
    pq.ws_shift = local_ws_item_shift_for(p.band(), kCons, 1);   // (the forward's items, 64-key steps)
    const int64_t grid = local_ws_items(p.band().num_tiles(), kCons, pq.ws_shift) * p.H * p.B;
    constexpr bool kDefer = local_bwd_q_ws_defer_dq<kHeadDim>();
    // One stage of k / v more than before session 54 (3 / 2): H200, session 54 runs D and E, bf16
    // kernel time at win(1024,0) d = 128 736 -> 719 us (ptxas: 36 bytes of spill instead of 72),
    // block256x16 d = 64 77.5-78.3 -> 74.7-76.6; fwd+bwd GPU time 0.2-0.5 % lower (within noise).
    constexpr int kStages = kDefer ? 4 : 3;
    constexpr size_t smem = LocalBwdQWsSmem<kHeadDim, kCons, kStages>::kBytes;
    if (p.residual_d)
        return launch_local_bwd_ws<local_attn_bwd_q_ws_kernel<Element, kHeadDim, kCons, kStages, kDefer, true>, Element,
                                   kCons>(pq, grid, smem, stream, pdl, maps);
    return launch_local_bwd_ws<local_attn_bwd_q_ws_kernel<Element, kHeadDim, kCons, kStages, kDefer, false>, Element,
                               kCons>(pq, grid, smem, stream, pdl, maps);
}

}  // namespace fwa
