// Local-attention forward on Hopper, warp-specialised (sm_90a), fp16/bf16, head-dim buckets 64 and
// 128: the same band walk, masking, online softmax, products and outputs as
// local_fwd_wgmma_kernel.cuh (its 128-key steps at d = 64, its 64-key steps at d = 128), with the
// copies moved to the bulk tensor copy engine (TMA) and decoupled from the math.
// A work item is kCons consecutive 64-query tiles of one (b, h) slice (from tile m kCons - shift,
// the shift that saves the most idle consumer steps: local_ws_items in local_band.h), in the order
// of the other kernels' CTAs (local_query_block: heaviest first where the band is causal-like);
// the grid is persistent (one CTA per SM, taking one item per round of gridDim.x items, in snake
// order):
//   - producer warpgroup (setmaxnreg down): its first warp writes each item's values (tile ranges,
//     each row's allowed key interval: LocalFwdWsInfo below) into shared memory, and its lane 0
//     copies the item's q tiles (double-buffered across items) and each step's k and v (boxes of
//     64 columns, one per 64-column panel, 128-byte swizzle, rows past L and columns past d
//     zero-filled) into kStages stages, each with a
//     "full" mbarrier (the copies' transaction bytes) and an "empty" one (every consumer thread
//     arrives when it no longer reads the stage);
//   - kCons consumer warpgroups (setmaxnreg up), warpgroup c on the item's tile c: wait for a stage,
//     compute on it if the step holds keys of its band (S = q kᵀ, softmax, P v), release it; at the
//     item's end normalise, stage its rows (128-byte swizzle) in its own q tile, store them as
//     16-byte chunks, and release the q buffer.
// No CTA-wide barrier: a consumer may run up to kStages - 1 steps ahead of another (the lock-step
// multi-warpgroup CTAs of the wgmma kernel, FWA_LOCAL_WG=2|3, waited for the slowest warpgroup at
// every step), and the producer streams the next item's q and first k / v while the consumers
// finish the current one.
// Outputs: at d = 128 (64-key steps) bitwise those of the wgmma kernel (same products in the same
// order, same softmax code). At d = 64 the 128-key steps start at the item's first key tile (the
// lowest of its consumers'); where that is a consumer's own first tile (every consumer of a band
// unbounded on the left, as causal) bitwise the one-warpgroup 128-key kernel's too; elsewhere its
// steps pair other tiles, and the online softmax rounds differently (within the tests' tolerances
// against float64, like every kernel's).
// Measured on the H100 (session 26, bf16 kernel time, against the wgmma kernel): causal B8 H16
// L2048 d64 0.242-0.246 -> 0.214-0.215 ms, block256x16 B1 H12 L4096 d64 0.090-0.092 -> 0.076,
// win(1024,0) B2 H16 L16384 d128 0.824-0.828 -> 0.622-0.623, win(4096,0) B1 H32/8 L32768 d128
// 5.29-5.31 -> 4.12-4.14. Dropped: 2 consumers with 240 registers.
// At d = 128 each step's P v now runs during the next step's softmax (kDeferPv, 3 stages; session
// 39): win(1024,0) 0.621 -> 0.595 ms, win(4096,0) 4.35 -> 4.05.
// Since session 53, 3 stages at d = 64 too (2 before), with each consumer's stage index counted
// (WsStageCursor): with the division gstep % 3 ptxas serialised the d = 64 wgmmas (C7511, session
// 53 run B; likely why 3 stages measured slower in session 26). H200 GPU time, 2 rounds: causal B8
// H16 L2048 forward 198.4-200.8 -> 191.1-193.5 us; block256x16 69.3-69.7 -> 69.9-70.3 (+0.6);
// win(1024,0) within noise. Outputs bitwise unchanged. Since session 54, 4 stages at d = 64 (180 KB
// of shared memory): causal forward 192.2-193.7 -> 184.5-185.6 us, block256x16 69.9-70.6 ->
// 68.3-68.8 (H200 GPU time, 2 rounds); outputs bitwise unchanged.
#pragma once
#include <climits>
#include <cstdlib>
#include <string>
#include <type_traits>

#include "../launch_utils.h"
#include "../tma.h"
#include "../warp_mma.cuh"
#include "local_attn.h"
#include "local_fwd_kernel.cuh"   // local_query_block, local_softmax_step
#include "local_wgmma.cuh"
#include "local_ws.cuh"

namespace fwa {

struct LocalFwdWsParams {
    LocalFwdParams p;
    CUtensorMap tq, tk, tv;   // boxes of 64 columns; q: 64 rows, k / v: a step's keys
};

// Keys per step: 128 at d = 64 (two adjacent 64-key tiles, as the one-warpgroup kernel's 128-key
// form), 64 at d = 128.
template <int kHeadDim> constexpr int local_fwd_ws_keys() { return kHeadDim == 64 ? 2 * kTileN : kTileN; }

// The row sums of P as the P v product sees it (the 16-bit values it was packed to; out is
// normalised by them: local_exp_row), at d = 64 taken by the product itself: P [v | 1] as wgmma
// m64n72k16, the second 64-column panel of each k16 step's B operand a fixed 16 x 64 tile of ones
// in shared memory (the window op's forward does the same, fwd_wgmma_kernel.cuh), so the
// accumulator's 9th n8 tile holds every row's sum, rescaled with the output. At d = 128 (two
// panels of v, a third cannot be addressed without 16 KB of ones per stage) by p16_row_sums.
// Against the mma.sync form (p16_row_sums, 8 HMMA per 128-key step; H200 GPU time, 2 rounds,
// session 57 run A): block256x16 forward 70.1 -> 68.4-68.6 us (fp16), 69.1-70.0 -> 68.2-68.4
// (bf16); causal B8 H16 L2048 191.5-191.8 -> 186.7-187.0 (fp16). Offline SASS: no C75xx, no spill.
// (Session 55's forward, without the 16-bit sums and out_lo, ran 63.9 us in the timeline.)
template <int kHeadDim> constexpr bool local_fwd_ws_ones() { return kHeadDim == 64; }

template <int kHeadDim, int kCons, int kStages> struct LocalFwdWsSmem {
    // 128-byte-swizzled tiles (local_wgmma.cuh): 64-column panels of rows x 128 bytes
    static constexpr int kQTile = kTileM * kHeadDim * 2;                                // 8 / 16 KB
    static constexpr int kKVStage = local_fwd_ws_keys<kHeadDim>() * kHeadDim * 2;       // 16 KB
    static constexpr int kQOff = 0;                              // 2 buffers of kCons q tiles
    static constexpr int kKOff = 2 * kCons * kQTile;
    static constexpr int kVOff = kKOff + kStages * kKVStage;
    // full[kStages], empty[kStages], q_full[2], q_empty[2]; then per q buffer its item's values
    // (LocalFwdWsInfo)
    // d = 64: 16 rows of ones, the second 64-column panel of each k16 step's [v | 1] operand
    // (local_fwd_ws_ones); 1024-aligned (the stages are 16 KB)
    static constexpr int kOnesBytes = local_fwd_ws_ones<kHeadDim>() ? 2048 : 0;
    static constexpr int kOnesOff = kVOff + kStages * kKVStage;
    static constexpr int kBarOff = kOnesOff + kOnesBytes;
    static constexpr int kInfoOff = kBarOff + 8 * (2 * kStages + 4);
    static constexpr int kInfoInts = 8 + 4 * kCons + 2 * kCons * kTileM;
    static constexpr size_t kBytes = size_t(kInfoOff) + 2 * 4 * kInfoInts + 1024;   // + alignment slack
};

// LocalFwdWsInfo: an item's values, written by the producer warp into shared memory (per q buffer) for the
// consumers, which so keep no band arithmetic (64-bit) nor loop-invariant item state in registers
// across their steps: ints [0] kt_first, [1] n_steps (-1: no more items), [2] h, [3] b, [4] the
// first query tile; per consumer c at 8 + 4 c: its first and last key tile (INT_MAX / INT_MIN: no
// rows < L, or a tile < 0) and the key range [full_lo, full_hi] every one of its rows allows; then
// each of the kCons x 64 rows' RowInterval, lo at 8 + 4 kCons + row and span kCons x 64 further.
//
// Each step's P v deferred to the consumer's next computed step (the kernel's kDeferPv) at d = 128
// only. H100, bf16, forward kernel time (session 39 run B, 2 rounds, bitwise-equal outputs):
// win(1024,0) B2 H16 L16384 d128 0.621-0.622 -> 0.595 ms, win(4096,0) B1 H32/8 L32768 d128
// 4.34-4.35 -> 4.05-4.06; at d = 64 (128-key steps: S, P and o 128 of the 160 registers) it spilled
// 72 bytes in the step and was slower: block256x16 0.077 -> 0.080, causal B8 H16 L2048 0.214 ->
// 0.211.
template <int kHeadDim> constexpr bool local_fwd_ws_defer_pv() { return kHeadDim == 128; }

// Registers per thread after setmaxnreg: the producer warpgroup 32, the consumers what the
// (kCons + 1) * 128 threads' share leaves (65536 per SM, one CTA; ptxas allocates the consumer
// branch within it).
constexpr int kLocalFwdWsProducerRegs = 32;
template <int kCons> constexpr int local_fwd_ws_consumer_regs() { return kCons == 2 ? 232 : 160; }

// A work item: kCons consecutive 64-query tiles of one (b, h) slice, in local_query_block's order,
// from tile sub0 = m_block kCons - p.ws_shift (local_ws_items, local_band.h; a consumer whose tile is
// < 0, like one past the last tile, has no rows and computes no step).
struct LocalFwdWsItem {
    int m_block, h, hk, b, sub0, kt_first, kt_last, n_steps;
};
template <int kCons, int kT>
FWA_DEVICE LocalFwdWsItem local_fwd_ws_item(const LocalFwdParams& p, const LocalBand& band, int n_m, int n_sub, uint32_t item) {
    const LocalQueryBlock qb = local_query_block(p, n_m, item);
    LocalFwdWsItem w;
    w.m_block = qb.m_block;
    w.h = qb.h;
    w.hk = qb.hk;
    w.b = static_cast<int>(qb.b);
    w.sub0 = qb.m_block * kCons - p.ws_shift;
    w.kt_first = static_cast<int>(band.key_tile_first(max(w.sub0, 0)));
    w.kt_last = static_cast<int>(band.key_tile_last(min(w.sub0 + kCons - 1, n_sub - 1)));
    w.n_steps = (w.kt_last - w.kt_first + kT) / kT;   // steps of kT key tiles over the item's
    return w;
}

// Persistent: each CTA takes one item per round (see the producer), so the producer streams the
// next item's q and first k / v while the consumers finish the last steps and the epilogue of the
// current one.
template <typename Element, int kHeadDim, int kCons, int kStages, bool kDeferPv>
__global__ void __launch_bounds__(kNumThreads * (kCons + 1), 1) local_attn_fwd_ws_kernel(const __grid_constant__ LocalFwdWsParams P) {
#if FWA_HAS_WGMMA
    static_assert(kHeadDim == 64 || kHeadDim == 128, "d = 64 / 128 buckets");
    constexpr int kKeys = local_fwd_ws_keys<kHeadDim>();
    constexpr int kT = kKeys / kTileN;   // 64-key tiles per step
    constexpr int kPanels = kHeadDim / 64;
    constexpr int kNT = kKeys / 8;
    constexpr int kDT = kHeadDim / 8;
    constexpr int kKS = kHeadDim / 16;
    constexpr int kKK = kKeys / 16;
    constexpr bool kOnes = local_fwd_ws_ones<kHeadDim>();   // P [v | 1]: the row sums in o_acc[kDT]
    constexpr int kAccT = kDT + (kOnes ? 1 : 0);
    using Tr = ElementTraits<Element>;
    using Smem = LocalFwdWsSmem<kHeadDim, kCons, kStages>;
    const LocalFwdParams& p = P.p;

    extern __shared__ __align__(128) unsigned char smem_raw[];
    const uint32_t base = (smem_u32(smem_raw) + 1023u) & ~1023u;
    const uint32_t sQ0 = base + Smem::kQOff, sK = base + Smem::kKOff, sV = base + Smem::kVOff;
    const uint32_t bar_full = base + Smem::kBarOff, bar_empty = bar_full + 8 * kStages;
    const uint32_t bar_qfull = bar_empty + 8 * kStages, bar_qempty = bar_qfull + 16;
    int* const info0 = reinterpret_cast<int*>(smem_raw + (base - smem_u32(smem_raw)) + Smem::kInfoOff);

    const int tid = threadIdx.x;
    const int wg = __shfl_sync(0xffffffffu, tid / kNumThreads, 0);   // 0: producer, 1..kCons: consumers
    const int L = p.L, d = p.d;
    const LocalBand band = p.band();
    const int n_sub = static_cast<int>(band.num_tiles());   // 64-row query tiles
    const int n_m = (n_sub + p.ws_shift + kCons - 1) / kCons;   // local_ws_items
    const uint32_t n_items = static_cast<uint32_t>(n_m) * static_cast<uint32_t>(p.H) * static_cast<uint32_t>(p.B);

    const uint32_t sOnes = base + Smem::kOnesOff;
    if constexpr (kOnes) {
        uint32_t* const ones = reinterpret_cast<uint32_t*>(smem_raw + (sOnes - smem_u32(smem_raw)));
        for (int i = tid; i < Smem::kOnesBytes / 4; i += blockDim.x) ones[i] = packed_ones<Element>();
        fence_proxy_async_smem();   // read by wgmma (the async proxy)
    }
    if (tid == 0) {
        for (int s = 0; s < kStages; ++s) {
            mbar_init(bar_full + 8 * s, 1);
            mbar_init(bar_empty + 8 * s, kCons * kNumThreads);
        }
        for (int i = 0; i < 2; ++i) {
            mbar_init(bar_qfull + 8 * i, 32);   // the producer warp
            mbar_init(bar_qempty + 8 * i, kCons * kNumThreads);
        }
        mbar_init_fence();
    }
    __syncthreads();

    if (wg == 0) {
        // Producer: warp 0 writes each item's values (all lanes) and lane 0 issues every copy.
        regs_dealloc<kLocalFwdWsProducerRegs>();
        if (tid < 32) {
            const int lane = tid;
            int gstep = 0, ti = 0;
            // Rounds of gridDim.x items in snake order, as LocalWsRounds (local_ws.cuh) walks them
            // for the backward kernels: written out here, with the epilogue below, because this
            // kernel built from those helpers ran 1.4 % slower at d = 128 (session 27 run H:
            // win(1024,0) 0.626 -> 0.635 ms, the same outputs). A CTA whose item of a round is past
            // the last one has no later round either.
            const uint32_t skip_even = 2 * (gridDim.x - 1 - blockIdx.x) + 1, skip_odd = 2 * blockIdx.x + 1;
            uint32_t item = blockIdx.x;
            for (int round = 0;; ++round, item += (round & 1) ? skip_even : skip_odd) {
                const bool done = item >= n_items;
                const int qb = ti & 1;
                if (ti >= 2) mbar_wait(bar_qempty + 8 * qb, ((ti >> 1) - 1) & 1);   // item ti - 2's epilogue done
                int* const info = info0 + Smem::kInfoInts * qb;
                if (done) {   // no more items
                    if (lane == 0) info[1] = -1;
                    mbar_arrive(bar_qfull + 8 * qb);
                    break;
                }
                const LocalFwdWsItem w = local_fwd_ws_item<kCons, kT>(p, band, n_m, n_sub, item);
                if (lane == 0) {
                    info[0] = w.kt_first;
                    info[1] = w.n_steps;
                    info[2] = w.h;
                    info[3] = w.b;
                    info[4] = w.sub0;
                }
                if (lane < kCons) {
                    const int sub = w.sub0 + lane;
                    const bool rows = sub >= 0 && sub < n_sub;
                    info[8 + 4 * lane] = rows ? static_cast<int>(band.key_tile_first(sub)) : INT_MAX;
                    info[9 + 4 * lane] = rows ? static_cast<int>(band.key_tile_last(sub)) : INT_MIN;
                    info[10 + 4 * lane] = static_cast<int>(band.key_lo(band.tile_last_row(sub)));
                    info[11 + 4 * lane] = static_cast<int>(band.key_hi(int64_t(sub) * kTileM));
                }
                for (int r = lane; r < kCons * kTileM; r += 32) {
                    const int row = w.sub0 * kTileM + r;
                    RowInterval iv;
                    iv.set(band.key_lo(row), band.key_hi(row), L);
                    info[8 + 4 * kCons + r] = iv.lo;
                    info[8 + 4 * kCons + kCons * kTileM + r] = static_cast<int>(iv.span);
                }
                if (lane == 0) {   // (each lane's arrival releases its writes above)
                    mbar_arrive_expect_tx(bar_qfull + 8 * qb, kCons * Smem::kQTile);
                    for (int c = 0; c < kCons; ++c)
#pragma unroll
                        for (int pn = 0; pn < kPanels; ++pn)
                            tma_load_4d(sQ0 + (qb * kCons + c) * Smem::kQTile + pn * kTileM * 128, &P.tq, 64 * pn,
                                        max(w.sub0 + c, 0) * kTileM, w.h, w.b, bar_qfull + 8 * qb);   // (a tile < 0: any rows)
                } else {
                    mbar_arrive(bar_qfull + 8 * qb);
                }
                if (lane == 0) {
                    for (int it = 0; it < w.n_steps; ++it, ++gstep) {
                        const int s = gstep % kStages, use = gstep / kStages;   // the stage's use-th fill
                        if (use > 0) mbar_wait(bar_empty + 8 * s, (use - 1) & 1);
                        const uint32_t full = bar_full + 8 * s;
                        mbar_arrive_expect_tx(full, 2 * Smem::kKVStage);
                        const int key0 = (w.kt_first + kT * it) * kTileN;
#pragma unroll
                        for (int pn = 0; pn < kPanels; ++pn) {
                            tma_load_4d(sK + s * Smem::kKVStage + pn * kKeys * 128, &P.tk, 64 * pn, key0, w.hk, w.b, full);
                            tma_load_4d(sV + s * Smem::kKVStage + pn * kKeys * 128, &P.tv, 64 * pn, key0, w.hk, w.b, full);
                        }
                    }
                }
                __syncwarp();
                ++ti;
            }
        }
        return;
    }

    // Consumer warpgroup c: query tile sub0 + c of each item.
    regs_alloc<local_fwd_ws_consumer_regs<kCons>()>();
    const int c = wg - 1, wtid = tid - wg * kNumThreads;
    const int warp = wtid >> 5, lane = tid & 31;
    const int g = lane >> 2, t4 = lane & 3;
    const float sl = p.scale * kLog2e;   // logits in log2 units: the softmax runs on exp2
    // The item's values come from the producer through shared memory (read again where needed, so
    // that they hold no registers across the steps).
    WsStageCursor<kStages> cur;   // the consumer's next step's stage
    for (int ti = 0;; ++ti) {
        const int qb = ti & 1;
        const volatile int* const info = info0 + Smem::kInfoInts * qb;
        mbar_wait(bar_qfull + 8 * qb, (ti >> 1) & 1);
        const int n_steps = info[1];
        if (n_steps < 0) break;
        const int kt_first = info[0];
        const int my_first = info[8 + 4 * c], my_last = info[9 + 4 * c];
        const int full_lo = info[10 + 4 * c], full_hi = info[11 + 4 * c];
        const uint32_t sQ = sQ0 + (qb * kCons + c) * Smem::kQTile;
        RowInterval iv[2];
#pragma unroll
        for (int r = 0; r < 2; ++r) {
            const int lrow = c * kTileM + warp * 16 + g + 8 * r;
            iv[r].lo = info[8 + 4 * kCons + lrow];
            iv[r].span = static_cast<unsigned>(info[8 + 4 * kCons + kCons * kTileM + lrow]);
        }
        float o_acc[kAccT][4];
        zero_acc(o_acc);
        float row_max[2] = {-INFINITY, -INFINITY}, row_sum[2] = {0.f, 0.f}, row_sum16[2] = {0.f, 0.f};
        float s[kNT][4];
        uint32_t pa[kKK][4];

        // kDeferPv (local_fwd_ws_defer_pv): a step's P v is issued with the next computed step's S
        // and runs while that step's softmax does (WsDeferredProduct), so each consumer keeps the
        // tensor pipe busy during its own exponentials, not only during the other consumers'. The
        // accumulator sees the same operations in the same order (o *= corr_j after P_{j-1} v_{j-1},
        // before P_j v_j): the outputs are bitwise those of the undeferred form (session 39 run B:
        // 48 of 48 tensors of tools/local_bitwise.py). A half step is the consumer's last of the
        // item: its P v runs at once.
        WsDeferredProduct deferred;   // (P packed in pa)
        // o += P v (P [v | 1] where kOnes) over the first kSteps 16-key steps of the v tile at vt
        // (no fence, commit or wait)
        auto issue_pv = [&](uint32_t vt, auto steps) {
            constexpr int kSteps = decltype(steps)::value;
#pragma unroll
            for (int kk = 0; kk < kSteps; ++kk) {
                if constexpr (kOnes) wgmma_pv<Element, kHeadDim + 8>(o_acc, pa[kk], v1_desc(vt, sOnes, kk), 1);
                else wgmma_pv<Element, kHeadDim>(o_acc, pa[kk], v_desc(vt, kk), 1);
            }
        };
        auto issue_pending = [&](int pst) { issue_pv(sV + pst * Smem::kKVStage, std::integral_constant<int, kKK>{}); };
        for (int it = 0; it < n_steps; ++it, cur.next()) {
            const int st = cur.st;
            const uint32_t kst = sK + st * Smem::kKVStage, vst = sV + st * Smem::kKVStage;
            mbar_wait(bar_full + 8 * st, cur.parity);
            const int kt = kt_first + kT * it;
            // The step's products (see local_fwd_wgmma_kernel.cuh); a half step when its second
            // tile lies past this warpgroup's band.
            // kPend: a deferred P v is in flight (compile-time, so that every path that issued it
            // also waits for it before its registers are touched: ptxas serialises the wgmmas
            // otherwise, C7513 / C7514).
            auto step = [&](auto half_step, auto pend_tag) {
                constexpr bool kHalf = decltype(half_step)::value;
                constexpr bool kPend = decltype(pend_tag)::value;
                wgmma_fence();
                if constexpr (kHalf) {
                    float(&s_lo)[kTileN / 8][4] = *reinterpret_cast<float(*)[kTileN / 8][4]>(&s[0][0]);
#pragma unroll
                    for (int ks = 0; ks < kKS; ++ks) wgmma_s<Element, kTileN>(s_lo, qk_desc(sQ, ks), qk_desc(kst, ks), ks > 0);
                } else {
#pragma unroll
                    for (int ks = 0; ks < kKS; ++ks) wgmma_s<Element, kKeys>(s, qk_desc(sQ, ks), qk_desc(kst, ks), ks > 0);
                }
                wgmma_commit();
                if constexpr (kPend) deferred.issue_with(issue_pending);
                else wgmma_wait<0>();
                wgmma_fence_operand(s);
                if constexpr (kHalf) {
#pragma unroll
                    for (int nt = kTileN / 8; nt < kNT; ++nt) s[nt][0] = s[nt][1] = s[nt][2] = s[nt][3] = 0.f;
                }
                float corr[2];
                const int key0 = kt * kTileN;
                const bool full = full_lo <= key0 && key0 + kKeys - 1 <= full_hi;   // warpgroup-uniform
                const bool rescale = full ? local_softmax_step<true, true, kHeadDim == 128, void>(s, sl, iv, key0, t4, row_max, row_sum, row_sum16, corr)
                                          : local_softmax_step<false, true, kHeadDim == 128, void>(s, sl, iv, key0, t4, row_max, row_sum, row_sum16, corr);
                if constexpr (kPend) deferred.finish(o_acc, bar_empty);
                if (rescale) {
#pragma unroll
                    for (int r = 0; r < 2; ++r) rescale_acc_row(o_acc, r, corr[r]);
                }
                pack_p16<Element>(s, pa);
                if constexpr (!kOnes) p16_row_sums<Element>(pa, corr, row_sum16);
                if constexpr (kDeferPv && !kHalf) {
                    deferred.defer(st);
                } else {
                    wgmma_fence();
                    issue_pv(vst, std::integral_constant<int, kHalf ? kTileN / 16 : kKK>{});
                    wgmma_commit();
                    wgmma_wait<0>();
                    wgmma_fence_operand(o_acc);
                    // this thread no longer reads the stage (after_step leaves a computed step's
                    // release to the step in the kDeferPv form)
                    if constexpr (kDeferPv) mbar_arrive(bar_empty + 8 * st);
                }
            };
            auto run_step = [&](auto half_step) {   // with or without a deferred P v in flight
                if (kDeferPv && deferred.pend) step(half_step, std::true_type{});
                else step(half_step, std::false_type{});
            };
            const bool computed = my_first <= kt + kT - 1 && kt <= my_last;   // warpgroup-uniform
            if (computed) {
                if (kT == 2 && kt + 1 > my_last) run_step(std::integral_constant<bool, kT == 2>{});
                else run_step(std::false_type{});
            }
            deferred.after_step<kDeferPv>(computed, st, issue_pending, o_acc, bar_empty);
        }
        if (kDeferPv && deferred.pend) deferred.complete(issue_pending, o_acc, bar_empty);   // the item's last P v

        // Epilogue: normalise, stage the warpgroup's rows in its own q tile (128-byte swizzle: chunk
        // j of row r at j ^ (r % 8); its products are done), store 16-byte chunks, release the tile.
        const int h = info[2], b = info[3];
        const int row0 = (info[4] + c) * kTileM;
        Element* out = static_cast<Element*>(p.out.ptr) + int64_t(b) * p.out.batch_stride + int64_t(h) * p.out.head_stride;
        unsigned char* tile = smem_raw + (sQ - smem_u32(smem_raw));
#pragma unroll
        for (int r = 0; r < 2; ++r) {
            const int lrow = warp * 16 + g + 8 * r;
            const int row = row0 + lrow;
            float l16 = row_sum16[r];   // (p16_row_sums: whole rows)
            if constexpr (kOnes) l16 = o_acc[kAccT - 1][2 * r];   // (every column of the ones tile)
            const float l = quad_sum(row_sum[r]);
            const float inv = l16 == 0.f ? 0.f : 1.f / l16;   // out's weights sum to 1 (local_exp_row); 0: rows outside [0, L)
            if (row >= 0 && row < L && t4 == 0)
                p.lse[(int64_t(b) * p.H + h) * L + row] = l == 0.f ? INFINITY : (row_max[r] + log2f(l)) * kLn2;
            float x[kDT][2];
            uint32_t packed[kDT];
#pragma unroll
            for (int i = 0; i < kDT; ++i) {
                x[i][0] = o_acc[i][2 * r] * inv;
                x[i][1] = o_acc[i][2 * r + 1] * inv;
                packed[i] = Tr::pack(x[i][0], x[i][1]);
                *reinterpret_cast<uint32_t*>(tile + (i / 8) * (kTileM * 128) + lrow * 128 + (((i % 8) ^ (lrow & 7)) << 4) + 4 * t4) =
                    packed[i];
            }
            local_store_out_lo<Element, kDT>(p, b, h, row, t4, x, packed);
        }
        group_sync(c);
        ws_store_rows<Element, kHeadDim>(tile, out, p.out.row_stride, row0, L, d, wtid);
        fence_proxy_async_smem();   // this thread's tile accesses, before the copy engine refills it
        mbar_arrive(bar_qempty + 8 * qb);
    }
#else
    __trap();   // launched only where the sm_90a code exists (local_wgmma_enabled)
#endif
}

// Launch the warp-specialised forward (head-dim buckets 64 and 128). Returns
// cudaErrorNotSupported, launching nothing, where a tensor map cannot be made (the caller then runs
// the wgmma kernel).
template <typename Element, int kHeadDim, int kCons>
cudaError_t launch_local_fwd_ws(const LocalFwdParams& p, cudaStream_t stream) {
    constexpr int kKeys = local_fwd_ws_keys<kHeadDim>();
    const LocalBand band = p.band();
    const int shift = local_ws_item_shift_for(band, kCons, kKeys / kTileN);
    const int64_t grid = local_ws_items(band.num_tiles(), kCons, shift) * p.H * p.B;
    if (grid == 0) return cudaSuccess;
    if (grid > 0x7fffffffLL) return cudaErrorInvalidConfiguration;
    LocalFwdWsParams wp;
    wp.p = p;
    wp.p.ws_shift = shift;
    constexpr bool bf16 = std::is_same<Element, __nv_bfloat16>::value;
    if (!make_tma_map_bhld(&wp.tq, p.q.ptr, bf16, p.B, p.H, p.L, p.d, p.q.batch_stride, p.q.head_stride, p.q.row_stride, kTileM) ||
        !make_tma_map_bhld(&wp.tk, p.k.ptr, bf16, p.B, p.Hkv, p.L, p.d, p.k.batch_stride, p.k.head_stride, p.k.row_stride, kKeys) ||
        !make_tma_map_bhld(&wp.tv, p.v.ptr, bf16, p.B, p.Hkv, p.L, p.d, p.v.batch_stride, p.v.head_stride, p.v.row_stride, kKeys))
        return cudaErrorNotSupported;
    // Persistent: one wave (FWA_LOCAL_FWD_WS_GRID=all: a CTA per item, A/B timing)
    static const bool all = [] {
        const char* e = std::getenv("FWA_LOCAL_FWD_WS_GRID");
        return e != nullptr && std::string(e) == "all";
    }();
    constexpr bool kDefer = local_fwd_ws_defer_pv<kHeadDim>();
    constexpr int kStages = kHeadDim == 64 ? 4 : 3;   // (kDeferPv, at d = 128, needs 3: a consumer holds two)
    return launch_ws_persistent<local_attn_fwd_ws_kernel<Element, kHeadDim, kCons, kStages, kDefer>>(
        wp, grid, LocalFwdWsSmem<kHeadDim, kCons, kStages>::kBytes, kNumThreads * (kCons + 1), stream, all);
}

}  // namespace fwa
