// Local-attention backward, key side (dk, dv and the exact-D sums), on Hopper, warp-specialised
// (sm_90a), fp16/bf16, head-dim buckets 64 and 128: the products, masking, gradients and
// fixed-point D sums of local_attn_bwd_kv_kernel's wgmma path (local_bwd_kernels.cuh, 2.) with
// the copies moved to the bulk tensor copy engine (TMA) and decoupled from the math, in the
// structure of the warp-specialised query side (local_bwd_q_ws_kernel.cuh):
//   - a work item is kCons consecutive 64-key tiles of one (b, hk) slice, in the key-side
//     kernel's CTA order (local_cta_tile over p.kv_tile_group); its steps are the (query head of
//     the group, 64-query tile) pairs of the union of its tiles' query ranges, head-major, query
//     tiles ascending (the key-side kernel's item order); persistent grid, snake-order rounds;
//   - producer warpgroup (setmaxnreg down): warp 0's lane 0 copies each consumer's k and v tiles
//     (one buffer per consumer, refilled when it has stored its dk / dv) and each step's q and
//     dout tiles into kStages stages; warp 1 writes each step's lse and D~ rows and its query head
//     and fixed-point scale into the stage (the stage's "full" barrier waits for both); warp 2
//     writes each item's values (LocalBwdKvWsInfo below: per consumer its query-tile range and
//     full range, per key its allowed query interval) into one of two info buffers;
//   - kCons consumer warpgroups (setmaxnreg up), warpgroup c on the item's key tile c: per step in
//     its range Sᵀ = k qᵀ and dPᵀ = v doutᵀ, Pᵀ and dSᵀ, the per-query sums of P dP over its 64
//     keys (staged per warp, added in warp order, fixed-point integer atomics into d_acc: the
//     previous step's while this step's products run), dv += Pᵀ dout and dk += dSᵀ q; then the
//     stage is released. At the item's end dk (times scale) and dv are stored.
// No CTA-wide barrier. Products, their order, the sums and the elementwise code are the wgmma
// key-side kernel's: dk, dv and the D sums (so dq) are bitwise the same.
// Included by local_bwd_kernels.cuh after its helpers (kTwo61, local_dp_bound).
#pragma once
#include <climits>

#include "../launch_utils.h"
#include "../tma.h"
#include "../warp_reduce.cuh"
#include "local_attn.h"
#include "local_fwd_ws_kernel.cuh"   // kLocalFwdWsProducerRegs, local_fwd_ws_consumer_regs
#include "local_wgmma.cuh"
#include "local_ws.cuh"

namespace fwa {

template <int kHeadDim, int kCons, int kStages> struct LocalBwdKvWsSmem {
    static constexpr int kTile = kTileM * kHeadDim * 2;   // a 64-row 128-byte-swizzled tile: 8 / 16 KB
    static constexpr int kKOff = 0;                       // per consumer: k, then v
    static constexpr int kQOff = 2 * kCons * kTile;       // per stage: q, then dout
    // per stage: lse[64] (times log2(e)), D~[64] (floats), then LocalBwdKvWsStep
    static constexpr int kRowsOff = kQOff + 2 * kStages * kTile;
    static constexpr int kRowsBytes = 2 * kTileM * 4 + 32;
    // per consumer: the warps' column sums of P dP, 2 buffers x 4 warps x 64 queries
    static constexpr int kPdpOff = kRowsOff + kStages * kRowsBytes;
    static constexpr int kPdpBytes = 2 * (kNumThreads / 32) * kTileM * 4;
    // full[kStages], empty[kStages], kv_full[kCons], kv_empty[kCons], info_full[2], info_empty[2]
    static constexpr int kBarOff = kPdpOff + kCons * kPdpBytes;
    static constexpr int kInfoOff = kBarOff + 8 * (2 * kStages + 2 * kCons + 4);
    // LocalBwdKvWsInfo: ints [0] n_steps (-1: no more items), [1] hk, [2] b, [3] the first key
    // tile; per consumer c at 8 + 8 c: its first and last query tile (INT_MAX / INT_MIN: keys >= L
    // only), the query range [full_lo, full_hi] every one of its keys allows, and whether its 64
    // keys are all < L; then per key of the item (kCons x 64) from kKeys its RowInterval of
    // queries, lo, then span kCons x 64 further (keys >= L: empty).
    static constexpr int kKeys = 8 + 8 * kCons;
    static constexpr int kInfoInts = kKeys + 2 * kCons * kTileN;
    static constexpr size_t kBytes = size_t(kInfoOff) + 2 * 4 * kInfoInts + 1024;   // + alignment slack
};

// A step's values in its stage (after the lse and D~ rows), written by producer warp 1.
struct LocalBwdKvWsStep {
    double pdp_scale;   // kTwo61 / dp_bound of the query head (0 when the bound is 0)
    int h, qt;          // query head, query tile
    int bound_finite;
};

// A work item: kCons consecutive 64-key tiles of one (b, hk) slice, in the key-side order.
struct LocalBwdKvWsItem {
    int n0, hk, b, qt_first, n_qt, n_steps;
};
template <int kCons>
FWA_DEVICE LocalBwdKvWsItem local_bwd_kv_ws_item(const LocalBwdParams& p, const LocalBand& band, int n_kt, int n_kn,
                                                 uint32_t item) {
    const LocalCtaTile cta = local_cta_tile(p.kv_tile_group, int64_t(p.B) * p.Hkv, n_kn, item);
    const int nb = p.kv_tile_group > 0 && p.left >= 0 ? n_kn - 1 - cta.i : cta.i;
    LocalBwdKvWsItem w;
    w.n0 = nb * kCons;
    w.hk = static_cast<int>(cta.slice % static_cast<uint32_t>(p.Hkv));
    w.b = static_cast<int>(cta.slice / static_cast<uint32_t>(p.Hkv));
    w.qt_first = static_cast<int>(band.query_tile_first(w.n0));
    const int qt_last = static_cast<int>(band.query_tile_last(min(w.n0 + kCons - 1, n_kt - 1)));
    w.n_qt = qt_last - w.qt_first + 1;
    w.n_steps = p.group * w.n_qt;
    return w;
}

// kSums: the exact-D sums (d_acc, d_bad) for the query side; without them (the residual-D
// backward, LocalBwdParams::residual_d) dS uses the preprocess's D alone and nothing is staged,
// synchronised or flushed per step.
template <typename Element, int kHeadDim, int kCons, int kStages, bool kSums = true>
__global__ void __launch_bounds__(kNumThreads * (kCons + 1), 1) local_attn_bwd_kv_ws_kernel(const __grid_constant__ LocalBwdWsParams P) {
#if FWA_HAS_WGMMA
    static_assert(kHeadDim == 64 || kHeadDim == 128, "d = 64 / 128 buckets");
    static_assert(kCons >= 1 && kCons <= 3, "consumer warpgroups");
    constexpr int kPanels = kHeadDim / 64;
    constexpr int kNT = kTileM / 8;   // n8 tiles over the 64 queries of a step
    constexpr int kDT = kHeadDim / 8;
    constexpr int kWarps = kNumThreads / 32;
    using Smem = LocalBwdKvWsSmem<kHeadDim, kCons, kStages>;
    const LocalBwdParams& p = P.p;

    extern __shared__ __align__(16) unsigned char smem_raw[];
    const uint32_t base = (smem_u32(smem_raw) + 1023u) & ~1023u;
    unsigned char* const gbase = smem_raw + (base - smem_u32(smem_raw));
    const uint32_t sK0 = base + Smem::kKOff, sQ0 = base + Smem::kQOff;
    const uint32_t bar_full = base + Smem::kBarOff, bar_empty = bar_full + 8 * kStages;
    const uint32_t bar_kvfull = bar_empty + 8 * kStages, bar_kvempty = bar_kvfull + 8 * kCons;
    const uint32_t bar_ifull = bar_kvempty + 8 * kCons, bar_iempty = bar_ifull + 16;
    int* const info0 = reinterpret_cast<int*>(gbase + Smem::kInfoOff);

    const int tid = threadIdx.x;
    const int wg = __shfl_sync(0xffffffffu, tid / kNumThreads, 0);   // 0: producer, 1..kCons: consumers
    const int L = p.L, d = p.d;
    const int n_kt = (L + kTileN - 1) / kTileN;
    const int n_kn = (n_kt + kCons - 1) / kCons;
    const uint32_t n_items = static_cast<uint32_t>(n_kn) * static_cast<uint32_t>(p.Hkv) * static_cast<uint32_t>(p.B);
    const LocalBand band = p.band();

    // full: the copies' thread and producer warp 1's rows; info: producer warp 2
    if (tid == 0) ws_init_bars<kStages, kCons>(bar_full, 1 + 32, 32);
    __syncthreads();

    if (wg == 0) {
        regs_dealloc<kLocalFwdWsProducerRegs>();
        const int warp = tid >> 5, lane = tid & 31;
        if (warp == 0) {
            // The copies, from lane 0: per item the first steps' q / dout (their stages free up as
            // the consumers finish the previous item's last steps), then each consumer's k / v
            // once it has stored the previous item's dk / dv, then the remaining steps.
            if (lane != 0) return;
            int gstep = 0, ti = 0;
            auto issue_step = [&](const LocalBwdKvWsItem& w, int gi, int qt) {
                const int s = gstep % kStages, use = gstep / kStages;
                if (use > 0) mbar_wait(bar_empty + 8 * s, (use - 1) & 1);
                const uint32_t full = bar_full + 8 * s;
                mbar_arrive_expect_tx(full, 2 * Smem::kTile);
                const int h = w.hk * p.group + gi;
                const uint32_t sq = sQ0 + 2 * s * Smem::kTile;
#pragma unroll
                for (int pn = 0; pn < kPanels; ++pn) {
                    tma_load_4d(sq + pn * kTileM * 128, &P.m.tq, 64 * pn, qt * kTileM, h, w.b, full);
                    tma_load_4d(sq + Smem::kTile + pn * kTileM * 128, &P.m.tdo, 64 * pn, qt * kTileM, h, w.b, full);
                }
                ++gstep;
            };
            for (LocalWsRounds rounds; rounds.item < n_items; rounds.next(), ++ti) {
                const LocalBwdKvWsItem w = local_bwd_kv_ws_item<kCons>(p, band, n_kt, n_kn, rounds.item);
                const int first = w.n_steps < kStages ? w.n_steps : kStages;
                int gi = 0, qi = 0;   // step (gi, qt_first + qi), head-major
                for (int it = 0; it < first; ++it) {
                    issue_step(w, gi, w.qt_first + qi);
                    if (++qi == w.n_qt) qi = 0, ++gi;
                }
                for (int c = 0; c < kCons; ++c) {
                    if (ti > 0) mbar_wait(bar_kvempty + 8 * c, (ti - 1) & 1);   // item ti - 1's dk / dv stored
                    const uint32_t kf = bar_kvfull + 8 * c;
                    mbar_arrive_expect_tx(kf, 2 * Smem::kTile);
                    const uint32_t sk = sK0 + 2 * c * Smem::kTile;
#pragma unroll
                    for (int pn = 0; pn < kPanels; ++pn) {
                        tma_load_4d(sk + pn * kTileN * 128, &P.m.tk, 64 * pn, (w.n0 + c) * kTileN, w.hk, w.b, kf);
                        tma_load_4d(sk + Smem::kTile + pn * kTileN * 128, &P.m.tv, 64 * pn, (w.n0 + c) * kTileN, w.hk, w.b, kf);
                    }
                }
                for (int it = first; it < w.n_steps; ++it) {
                    issue_step(w, gi, w.qt_first + qi);
                    if (++qi == w.n_qt) qi = 0, ++gi;
                }
            }
            return;
        }
        if (warp == 1) {
            // Each step's lse (in log2 units) and D~ rows (rows >= L: 0; their q, dout rows are
            // zero-filled and masked), query head, query tile and fixed-point scale, into its stage.
            // Launched as the preprocess's programmatic dependent (launch_local_bwd_impl): D~ and
            // the max |dout|, |v| are the preprocess's, read after this wait (everything else this
            // kernel reads predates the backward, and the consumers' first products need this
            // warp's rows). The query side, this kernel's dependent, may launch once every CTA
            // has passed it (it waits for this grid's end before reading d_acc).
            pdl_wait();
            pdl_launch_dependents();
            int gstep = 0;
            for (LocalWsRounds rounds; rounds.item < n_items; rounds.next()) {
                const LocalBwdKvWsItem w = local_bwd_kv_ws_item<kCons>(p, band, n_kt, n_kn, rounds.item);
                for (int gi = 0; gi < p.group; ++gi) {
                    const int h = w.hk * p.group + gi;
                    const double bound = kSums ? local_dp_bound(p, w.b, h) : 0.0;
                    const int64_t row_base = (int64_t(w.b) * p.H + h) * int64_t(L);
                    for (int qi = 0; qi < w.n_qt; ++qi, ++gstep) {
                        const int s = gstep % kStages, use = gstep / kStages;
                        if (use > 0) mbar_wait(bar_empty + 8 * s, (use - 1) & 1);
                        float* rows = reinterpret_cast<float*>(gbase + Smem::kRowsOff + s * Smem::kRowsBytes);
                        const int qt = w.qt_first + qi;
#pragma unroll
                        for (int r = 0; r < 2; ++r) {
                            const int i = qt * kTileM + lane + 32 * r;
                            rows[lane + 32 * r] = i < L ? p.lse[row_base + i] * kLog2e : 0.f;
                            rows[kTileM + lane + 32 * r] = i < L ? p.dsum[row_base + i] : 0.f;
                        }
                        if (lane == 0) {
                            LocalBwdKvWsStep* st = reinterpret_cast<LocalBwdKvWsStep*>(rows + 2 * kTileM);
                            st->pdp_scale = bound > 0.0 ? kTwo61 / bound : 0.0;
                            st->h = h;
                            st->qt = qt;
                            st->bound_finite = isfinite(bound) ? 1 : 0;
                        }
                        mbar_arrive(bar_full + 8 * s);   // releases this lane's writes
                    }
                }
            }
            return;
        }
        if (warp != 2) return;
        // Warp 2: each item's values, into info buffer ti & 1 once the consumers are done with
        // item ti - 2's; then one more (n_steps = -1) after the last.
        LocalWsRounds rounds;
        for (int ti = 0;; rounds.next(), ++ti) {
            const uint32_t item = rounds.item;
            const int ib = ti & 1;
            if (ti >= 2) mbar_wait(bar_iempty + 8 * ib, ((ti >> 1) - 1) & 1);
            int* const info = info0 + Smem::kInfoInts * ib;
            if (item >= n_items) {
                if (lane == 0) info[0] = -1;
                mbar_arrive(bar_ifull + 8 * ib);
                break;
            }
            const LocalBwdKvWsItem w = local_bwd_kv_ws_item<kCons>(p, band, n_kt, n_kn, item);
            if (lane == 0) {
                info[0] = w.n_steps;
                info[1] = w.hk;
                info[2] = w.b;
                info[3] = w.n0;
            }
            if (lane < kCons) {
                const int n = w.n0 + lane;
                const bool keys = n < n_kt;
                const int key0 = n * kTileN;
                info[8 + 8 * lane] = keys ? static_cast<int>(band.query_tile_first(n)) : INT_MAX;
                info[9 + 8 * lane] = keys ? static_cast<int>(band.query_tile_last(n)) : INT_MIN;
                info[10 + 8 * lane] = static_cast<int>(band.query_lo(band.tile_last_row(n)));
                info[11 + 8 * lane] = static_cast<int>(band.query_hi(key0));
                info[12 + 8 * lane] = key0 + kTileN <= L ? 1 : 0;
            }
            for (int r = lane; r < kCons * kTileN; r += 32) {
                const int key = w.n0 * kTileN + r;
                RowInterval iv;
                // Keys >= L: no query (P = 0: their dk / dv rows are never stored, and P =
                // exp(-lse) != 0 there would be wrong in dv's product)
                if (key < L) iv.set(band.query_lo(key), band.query_hi(key), L);
                else iv.set(1, 0, L);
                info[Smem::kKeys + r] = iv.lo;
                info[Smem::kKeys + kCons * kTileN + r] = static_cast<int>(iv.span);
            }
            mbar_arrive(bar_ifull + 8 * ib);   // releases this lane's writes
        }
        return;
    }

    // Consumer warpgroup c: key tile n0 + c of each item.
    regs_alloc<local_fwd_ws_consumer_regs<kCons>()>();
    const int c = wg - 1, wtid = tid - wg * kNumThreads;
    const int warp = wtid >> 5, lane = tid & 31;
    const int g = lane >> 2, t4 = lane & 3;
    const float sl = p.scale * kLog2e;
    const uint32_t sK = sK0 + 2 * c * Smem::kTile, sV = sK + Smem::kTile;
    float* const sPdp = reinterpret_cast<float*>(gbase + Smem::kPdpOff + c * Smem::kPdpBytes);
    int gstep = 0, n_done = 0;   // steps computed by this warpgroup (their sums alternate buffers)
    for (int ti = 0;; ++ti) {
        const int ib = ti & 1;
        const volatile int* const info = info0 + Smem::kInfoInts * ib;
        mbar_wait(bar_ifull + 8 * ib, (ti >> 1) & 1);
        const int n_steps = info[0];
        if (n_steps < 0) break;
        const int my_first = info[8 + 8 * c], my_last = info[9 + 8 * c];
        const int full_lo = info[10 + 8 * c], full_hi = info[11 + 8 * c];
        const bool keys_in = info[12 + 8 * c] != 0;
        RowInterval iv[2];   // allowed queries of this thread's two keys
#pragma unroll
        for (int r = 0; r < 2; ++r) {
            const int k = c * kTileN + warp * 16 + g + 8 * r;
            iv[r].lo = info[Smem::kKeys + k];
            iv[r].span = static_cast<unsigned>(info[Smem::kKeys + kCons * kTileN + k]);
        }
        float dk[kDT][4], dv[kDT][4];
        zero_acc(dk);
        zero_acc(dv);
        wgmma_fence_operand(dk);   // the zeros are written before the first wgmma is issued (C7515)
        wgmma_fence_operand(dv);
        // The last computed step's sums, flushed by the first 64 threads once the warpgroup's
        // next barrier has passed: its d_acc row of query 0 of the tile and its fixed-point scale.
        int64_t flush_row = -1;
        int flush_q0 = 0;
        double flush_scale = 0.0;
        bool flush_finite = true;
        auto flush_d = [&](int buf) {
            const int i = flush_q0 + wtid;
            if (flush_row < 0 || wtid >= kTileM || i >= L) return;
            const float sp = sum_staged_pdp<kWarps>(sPdp, buf * kWarps * kTileM + wtid, kTileM);
            const int64_t row = flush_row + wtid;
            if (isfinite(sp) && flush_finite) {
                const long long qp = __double2ll_rn(double(sp) * flush_scale);
                if (qp != 0) atomicAdd(p.d_acc + row, static_cast<unsigned long long>(qp));
            } else {
                atomicOr(p.d_bad + row, 1);
            }
        };
        mbar_wait(bar_kvfull + 8 * c, ti & 1);

        for (int it = 0; it < n_steps; ++it, ++gstep) {
            const int st = gstep % kStages;
            const uint32_t tQ = sQ0 + 2 * st * Smem::kTile, tO = tQ + Smem::kTile;
            const float* rows = reinterpret_cast<const float*>(gbase + Smem::kRowsOff + st * Smem::kRowsBytes);
            const LocalBwdKvWsStep* stp = reinterpret_cast<const LocalBwdKvWsStep*>(rows + 2 * kTileM);
            mbar_wait(bar_full + 8 * st, (gstep / kStages) & 1);
            const int qt = stp->qt;
            if (my_first <= qt && qt <= my_last) {   // warpgroup-uniform
                const int q0 = qt * kTileM;
                float s[kNT][4], dp[kNT][4];
                // The previous computed step's staged sums are complete (all 4 warps), and its
                // buffer, written again two computed steps later, is read below before that.
                if constexpr (kSums) group_sync(c);
                wgmma_fence();
                wg_abt_issue<Element, kHeadDim>(s, sK, tQ);
                wg_abt_issue<Element, kHeadDim>(dp, sV, tO);
                wgmma_commit();
                if constexpr (kSums) {
                    flush_d((n_done + 1) & 1);
                    const int h = stp->h;
                    flush_row = (int64_t(info[2]) * p.H + h) * int64_t(L) + q0;
                    flush_q0 = q0;
                    flush_scale = stp->pdp_scale;
                    flush_finite = stp->bound_finite != 0;
                }
                wgmma_wait<0>();
                wgmma_fence_operand(s);
                wgmma_fence_operand(dp);

                const bool full = keys_in && full_lo <= q0 && q0 + kTileM - 1 <= full_hi;   // warpgroup-uniform
                float pdp[2 * kNT];   // P dP summed over the thread's two keys, per query column
#pragma unroll
                for (int i = 0; i < 2 * kNT; ++i) pdp[i] = 0.f;
                const float* lse = rows;
                const float* dsum = rows + kTileM;
                const bool all_keys[2] = {true, true};   // keys >= L have an empty interval in iv
                if (full) local_kv_step_grads<true, true>(s, dp, pdp, lse, dsum, sl, iv, all_keys, q0, t4);
                else local_kv_step_grads<false, true>(s, dp, pdp, lse, dsum, sl, iv, all_keys, q0, t4);
                static_assert(kNT == 8, "stage_warp_pdp_sums sums a 64-column tile");
                if constexpr (kSums) stage_warp_pdp_sums(pdp, sPdp, ((n_done & 1) * kWarps + warp) * kTileM);
                ++n_done;
                wg_pb2<Element, kHeadDim>(dv, s, tO, dk, dp, tQ);   // dv += Pᵀ dout, dk += dSᵀ q
            }
            mbar_arrive(bar_empty + 8 * st);   // this thread no longer reads the stage
        }
        if constexpr (kSums) {
            group_sync(c);
            flush_d((n_done + 1) & 1);
        }

        const int hk = info[1], b = info[2];
        const int key0 = (info[3] + c) * kTileN;
        mbar_arrive(bar_iempty + 8 * ib);   // the item's values are read
        mbar_arrive(bar_kvempty + 8 * c);   // k / v are no longer read (the products are done)
        auto dst = [&](const TensorRef& t) {
            return static_cast<Element*>(t.ptr) + int64_t(b) * t.batch_stride + int64_t(hk) * t.head_stride;
        };
        const float unused_inv[2] = {1.f, 1.f};
        const Element* unused_tile = nullptr;   // (read only for the window op's cosine rows)
        warp_store_grad_rows<kHeadDim>(dk, false, unused_tile, warp * 16, unused_inv, p.scale, dst(p.dk), p.dk.row_stride,
                                       key0 + warp * 16, L, d, lane);
        warp_store_grad_rows<kHeadDim>(dv, false, unused_tile, warp * 16, unused_inv, 1.f, dst(p.dv), p.dv.row_stride,
                                       key0 + warp * 16, L, d, lane);
    }
#else
    __trap();   // launched only where the sm_90a code exists (local_wgmma_enabled)
#endif
}

// Launch the warp-specialised key side (where `pdl`, as the preprocess's programmatic dependent).
// Returns cudaErrorNotSupported, launching nothing, where a tensor map cannot be made (the caller
// then runs local_attn_bwd_kv_kernel).
// 4 stages of q / dout (3 until session 54: block256x16 key side 124.5 -> 123.4 us on the H200,
// fwd+bwd within noise elsewhere; 125 KB of shared memory at d = 64, 201 KB at d = 128).
// `maps`: the tensor maps where the caller made them (else made here).
template <typename Element, int kHeadDim, int kCons, int kStages = 4>
cudaError_t launch_local_bwd_kv_ws(const LocalBwdParams& p, cudaStream_t stream, bool pdl,
                                   const LocalBwdTmaMaps* maps = nullptr) {
    const int64_t n_kn = ((int64_t(p.L) + kTileN - 1) / kTileN + kCons - 1) / kCons;
    const int64_t grid = n_kn * p.Hkv * p.B;
    constexpr size_t smem = LocalBwdKvWsSmem<kHeadDim, kCons, kStages>::kBytes;
    if (p.residual_d)
        return launch_local_bwd_ws<local_attn_bwd_kv_ws_kernel<Element, kHeadDim, kCons, kStages, false>, Element, kCons>(
            p, grid, smem, stream, pdl, maps);
    return launch_local_bwd_ws<local_attn_bwd_kv_ws_kernel<Element, kHeadDim, kCons, kStages, true>, Element, kCons>(
        p, grid, smem, stream, pdl, maps);
}

}  // namespace fwa
