// Query side of the tiled window backward (dq, the dbias and dalpha partials) on Hopper warpgroup
// MMA for head dim <= 32 and Npad = kKeys of 128 or 256, and Npad 192 on the 256-key form (keys
// 192..255 skipped; warpgroup 0 takes keys 0..63 and the last block, 128..191, computed only as wide
// as the keys N leaves in it (kTail: 16 at N = 144), warpgroup 1 keys 64..127: at N = 144 ~1.25
// sub-blocks against 1, where warpgroup 0 took 2 full ones before session 32; in session 25 run E
// that form was still 9-16 % under window_attn_bwd_q_kernel at N = 144-169), and Npad > 256 in
// key ranges of 256 keys (BwdParams::n_key_ranges: one CTA per range, each writing its fp32 dq
// part, summed in range order afterwards; session 25 runs F-H):
// the form bwd_tiled_kernels.cuh's launcher takes there on sm_90a (window_bwd_q_wg_enabled), in
// place of window_attn_bwd_q_kernel.
//
//   S = f(q kᵀ) + bm,  P = exp(S - lse),  dS = P (dout vᵀ - D),  dq = f'(dS k),  dbias = Σ_windows dS
//
// Work split as window_attn_bwd_q_kernel's: a CTA owns one (64-query block, head h, bm window w) and
// a chunk of the windows b = w + nW t sharing that bias+mask slice. Unlike it, the CTA holds all
// kKeys keys of a window at once and splits them over 2 warpgroups, kSub 64-key sub-blocks each
// (256: 2, 128: 1; interleaved: warpgroup wg's sub-block sb is keys (2 sb + wg) 64 ..), both on the
// same window:
//   S, dP (64 x 64 per sub-block)  wgmma m64n64k16 from shared memory (64-byte-swizzled tiles)
//   P, dS in registers, with the operations of the key-side kernel (the same bits: see there)
//   dbias (64 rows x the warpgroup's keys) accumulated in registers over the whole chunk
//   dq += dS k_sub                 wgmma m64n32k16, dS from registers, k read transposed
// then the warpgroups' dq and V2 dalpha row sums are added in a fixed order through shared memory
// (deterministic) and warpgroup 0 writes dq. The chunk's dbias partial leaves the registers once,
// at the end (window_attn_bwd_q_kernel read-modify-writes a shared-memory strip per element and
// item). H100, bf16, V2 + bias + mask, (1024, 6, 256): 0.502 ms against that kernel's 0.681 in its
// wgmma form (session 23 run D; the V1 prototype of the scheme, tools/proto/wgmma_bwd_q_n256_d32.cu,
// 0.385 ms for as many windows). The bias+mask strip of the block's rows
// (without bias and mask: 0, and -inf for padded keys, so that one code path serves every mode) is
// loaded once per CTA; a window's q, dout, k, v tiles and row / key statistics are double-buffered
// (the next window's copies in flight during this one's products).
#pragma once
#include <cstdint>

#include "dropout.cuh"
#include "warp_mma.cuh"
#include "wgmma.cuh"
#include "window_attn.h"

namespace fwa {

// The query side's operations on two adjacent elements of a row (the sub-blocks' and the folded tail
// rows'; those of the key-side kernel, bwd_kv_elementwise, so that both see the same P): from the
// raw s = q·k and dP of the pair, with the key factors kf (V2: 1/||k_j||; unused in V1), the pair's
// bias+mask bmv, the row's logit factor qf and its lse and D, returns dS = P (dP - D), where
// P = exp2(fma(s kf, qf, bm) - lse log2 e) (fmaf(c, f, 0) is c f exactly), and adds the V2 dalpha
// terms dS (s / ||k_j||) to da.
template <bool kCos>
FWA_DEVICE float2 bwd_q_ds_pair(float s0, float s1, float dp0, float dp1, float2 kf, float2 bmv, float qf, float lse,
                                float dsum, float& da) {
    float c0 = s0, c1 = s1;
    if constexpr (kCos) {   // s / ||k_j||
        c0 *= kf.x;
        c1 *= kf.y;
    }
    const float x0 = fmaf(c0, qf, bmv.x), x1 = fmaf(c1, qf, bmv.y);
    const float p0 = fast_exp2(fmaf(-lse, kLog2e, x0));
    const float p1 = fast_exp2(fmaf(-lse, kLog2e, x1));
    const float g0 = p0 * (dp0 - dsum), g1 = p1 * (dp1 - dsum);
    if constexpr (kCos) da = fmaf(g0, c0, fmaf(g1, c1, da));
    return make_float2(g0, g1);
}

template <int kKeys> struct BwdQWgLayout {
    static_assert(kKeys == 128 || kKeys == 256, "Npad of 128 or 256");
    static constexpr int kWgs = 2;                             // warpgroups per CTA
    static constexpr int kSub = kKeys / 64 / kWgs;             // 64-key sub-blocks per warpgroup
    static constexpr int kThreads = 128 * kWgs;
    static constexpr uint32_t kTileBytes = 64 * 64;            // 64 rows of 64 bytes
    // One stage (window): q, dout (the block's 64 rows), k, v (kKeys rows), then fp32 lse, D,
    // q_inv of the 64 rows and k_inv of the keys.
    static constexpr uint32_t kQOff = 0, kOOff = kTileBytes, kKOff = 2 * kTileBytes;
    static constexpr uint32_t kVOff = kKOff + kKeys * 64;
    static constexpr uint32_t kStatOff = kVOff + kKeys * 64;
    static constexpr uint32_t kKinvOff = kStatOff + 3 * 64 * 4;
    static constexpr uint32_t kStageBytes = (kKinvOff + kKeys * 4 + 1023u) / 1024u * 1024u;
    static constexpr int kBmPitch = kKeys + 8;                 // fp32 pitch of the strip (float2 reads)
    static constexpr uint32_t kStripOff = 2 * kStageBytes;
    static constexpr uint32_t kStripBytes = 64 * kBmPitch * 4;
    // Warpgroup 1's dq partial (16 fp32 per thread) and V2 row sums (64 rows).
    static constexpr uint32_t kXOff = kStripOff + kStripBytes;
    static constexpr uint32_t kXBytes = 128 * 16 * 4 + 64 * 4;
    // `late` (the late epilogue, kTail < 64): two buffers of the partial, by window parity
    static constexpr uint32_t tail_off(bool late) { return kXOff + (kWgs - 1) * kXBytes * (late ? 2 : 1); }
    // `fold` (BwdParams::q_tail_fold, kKeys 256 at Npad 192): in each stage the 16 tail rows' q and
    // dout tiles (sw64, 64-byte rows) and fp32 lse, D, q_inv sit in the k tile of keys 192..255
    // (never loaded nor read at Npad 192); after the partials, the tail rows' bias+mask strip and
    // dbias sums (16 rows x kTailPitch fp32) and the 4 warps' dq parts (16 rows x kTailPartPitch:
    // dq, then the V2 row sum).
    static constexpr uint32_t kTQOff = kKOff + 3 * kTileBytes, kTOOff = kTQOff + 1024, kTStatOff = kTOOff + 1024;
    static constexpr int kTailPitch = 152, kTailPartPitch = 36;
    static constexpr uint32_t kTailStripBytes = 16 * kTailPitch * 4;
    static constexpr uint32_t kTailPartBytes = 4 * 16 * kTailPartPitch * 4;
    static constexpr size_t bytes(bool late = false, bool fold = false) {
        return 1024 /* alignment slack */ + tail_off(late) + (fold ? 2 * kTailStripBytes + kTailPartBytes : 0);
    }
};

// kTail < 64 (Npad 192 on the 256-key form, no dropout; fwd_wgmma_tail_keys(N, 192), picked by
// bwd_q_side): the last key block, keys 128..191, is warpgroup 0's second sub-block and is
// computed only over its first kTail keys (those N leaves in it rounded up to 16: S, dP at wgmma
// m64n{kTail}, the elementwise work over kTail / 8 n8 tiles, dq += dS k in kTail / 16 k16 steps;
// the padded keys' dS is 0, so the sums are bitwise those of the full block), against warpgroup
// 1's one full sub-block (keys 64..127).
//
// kFold (BwdParams::q_tail_fold: N = 129..144, kTail 16; the grid's query blocks are 0 and 1 only):
// rows 128..143 are computed by warpgroup 1 of the two query blocks' CTAs, each taking every other
// window of the chunk (ti % 2 == m_block), after its own sub-block: its 4 warps split the window's
// 16-key blocks (2, 2, 2, 3 of 9) on mma.sync (S = q kᵀ and dP = dout vᵀ from the tail rows' tiles
// and the stage's k, v; the elementwise operations of the sub-blocks; dbias summed in shared
// memory; the warp's dq part += dS k), the parts meet in shared memory and warp 0 adds them in warp
// order, projects (V2) and stores the 16 rows. At the chunk's end the tail rows' dbias sums go to
// rows 128 + 16 m_block .. of the partial (window_attn_reduce_partials adds the two). Where the
// third query block's CTA computed 64 rows for 16 (3/4 of its products and exponentials on padded
// rows) the two CTAs now take 16 rows every other window beside their 64.
template <typename Element, int kKeys, bool kDropout, int kTail = 64, bool kFold = false>
__global__ void __launch_bounds__(BwdQWgLayout<kKeys>::kThreads, 1) window_attn_bwd_q_wg_kernel(const BwdParams p) {
#if FWA_HAS_WGMMA
    using L = BwdQWgLayout<kKeys>;
    using Tr = ElementTraits<Element>;
    constexpr int kNT = 8;   // n8 tiles of a 64-key sub-block
    constexpr int kSub = L::kSub;
    static_assert(kTail == 64 || (kKeys == 256 && !kDropout && kTail % 16 == 0 && kTail >= 16),
                  "a narrow last key block: Npad 192 on the 256-key form, without dropout");
    static_assert(!kFold || (kKeys == 256 && kTail == 16 && !kDropout), "the folded tail rows: Npad 192, N = 129..144");
    // k / v tiles loaded per window (kFold: keys 192..255 hold the tail rows' tiles instead)
    constexpr int kLoadTiles = kFold ? 3 : kKeys / 64;

    extern __shared__ __align__(16) unsigned char smem_raw[];
    unsigned char* const smem = smem_raw + ((1024u - (smem_u32(smem_raw) & 1023u)) & 1023u);
    auto stage = [&](int st) { return smem + st * L::kStageBytes; };
    float* const sBm = reinterpret_cast<float*>(smem + L::kStripOff);
    // wgmma descriptors of stage 0's first tile, K-major (S, dP) and MN-major (dq); every tile is
    // an offset from these (wgmma_desc_add)
    const uint64_t desc0 = sw64_kmajor_desc(smem_u32(smem)), desc0_t = sw64_mnmajor_desc(smem_u32(smem));

    const int tid = threadIdx.x;
    const int wg = __shfl_sync(0xffffffffu, tid / 128, 0), wtid = tid % 128;
    const int warp = wtid >> 5, lane = tid & 31, g = lane >> 2, t4 = lane & 3;

    // blockIdx.x: (key range, query block, head, bm window, chunk), key range fastest
    const int n_kr = p.n_key_ranges;
    const int kr = static_cast<int>(blockIdx.x % n_kr);
    const int64_t bid = blockIdx.x / n_kr;
    // a later launch over a batch of chunks (key ranges: window_bwd_dq_batch) starts at chunk
    // chunk_offset: (head, bm window) come before the chunk in window_chunk_work's index
    const WindowCtaWork cta = window_chunk_work(p, bid / p.num_m_blocks + int64_t(p.chunk_offset) * p.H * p.nW,
                                                static_cast<int>(bid % p.num_m_blocks));
    const int m_block = cta.m_block, h = cta.h, w = cta.w, t_begin = cta.t_begin, t_end = cta.t_end;
    if (t_begin >= t_end) {   // the whole CTA (waiting as the others do: see pdl_wait below)
        pdl_wait();
        return;
    }
    // the launch's first window (its dq parts are indexed from it)
    const int64_t b_base = int64_t(p.nW) * p.chunk * p.chunk_offset;
    // This CTA's keys: kr0 .. kr0 + kKeys - 1 (n_kr > 1: Npad > 256, 256-key ranges, the last one
    // partly past Npad: its sub-blocks there are skipped)
    const int kr0 = kr * kKeys;

    const int N = p.N, d = p.d;
    const int row0 = m_block * kTileM;
    const int n_win = t_end - t_begin;
    const bool cosine = p.logit_scale != nullptr;
    const bool has_bm = p.bm != nullptr;
    const bool want_dbias = p.dbias_partial != nullptr;
    const float alpha = cosine ? logit_scale_alpha(p.logit_scale, h) : p.scale;
    const float al = alpha * kLog2e;
    DropoutState drop{};
    if constexpr (kDropout) drop = load_dropout_state(p.dropout);
    const int partial = w * p.n_chunks + cta.chunk_id;
    const int Npad = p.Npad;

    auto window_of = [&](int ti) -> int64_t { return w + int64_t(p.nW) * (t_begin + ti); };
    auto base = [&](const TensorRef& t, int64_t b) {
        return static_cast<const Element*>(t.ptr) + b * t.batch_stride + h * t.head_stride;
    };
    // Copies: thread tid moves the 16-byte chunk cj = tid % 4 of row cr = tid / 4 of the block's q
    // and dout rows and of rows cr + 64 i of k and v (the same swizzled position in every 64-row
    // tile), its offsets within a window in 32 bits (bwd_q_wg_shape_ok) and its row predicates
    // fixed for the CTA: per window only the 4 window bases are derived (the copies through
    // load_tile_sw64_async per tile re-derived rows, predicates and 64-bit addresses per tile:
    // ~320 of a warp's ~1600 instructions per window).
    const int cr = tid >> 2, cj = tid & 3;
    const uint32_t soff = sw64_offset(cr, cj);
    const bool col_ok = cj * 8 < d;
    const bool q_ok = col_ok && row0 + cr < N;
    const int q_off = (row0 + cr) * static_cast<int>(p.q.row_stride) + cj * 8;
    const int o_off = (row0 + cr) * static_cast<int>(p.dout.row_stride) + cj * 8;
    // kFold: the tail rows (tail0 ..; threads 0..63 copy their q and dout rows, 64..95 the statistics)
    const int tail0 = p.q_tail_fold;
    [[maybe_unused]] const bool tq_ok = col_ok && tail0 + cr < N;
    [[maybe_unused]] const int tq_off = (tail0 + cr) * static_cast<int>(p.q.row_stride) + cj * 8;
    [[maybe_unused]] const int to_off = (tail0 + cr) * static_cast<int>(p.dout.row_stride) + cj * 8;
    auto tail_mine = [&](int ti) { return (ti & 1) == m_block; };   // the CTA that takes window ti's tail rows
    const int k_off = cr * static_cast<int>(p.k.row_stride) + cj * 8;
    const int v_off = cr * static_cast<int>(p.v.row_stride) + cj * 8;
    // Window ti's copies into stage st, then its statistics.
    auto issue = [&](int ti, int st) {
        const int64_t b = window_of(ti);
        const uint32_t s0 = smem_u32(stage(st));
        const Element* q = base(p.q, b);
        const Element* o = base(p.dout, b);
        const Element* k = base(p.k, b);
        const Element* v = base(p.v, b);
        cp_async_16(s0 + L::kQOff + soff, q_ok ? q + q_off : q, q_ok ? 16 : 0);
        cp_async_16(s0 + L::kOOff + soff, q_ok ? o + o_off : o, q_ok ? 16 : 0);
#pragma unroll
        for (int i = 0; i < kLoadTiles; ++i) {
            const int kb = kr0 + 64 * i;   // this tile's first key
            const bool ok = col_ok && cr + kb < N;
            cp_async_16(s0 + L::kKOff + i * L::kTileBytes + soff, ok ? k + (k_off + kb * static_cast<int>(p.k.row_stride)) : k,
                        ok ? 16 : 0);
            cp_async_16(s0 + L::kVOff + i * L::kTileBytes + soff, ok ? v + (v_off + kb * static_cast<int>(p.v.row_stride)) : v,
                        ok ? 16 : 0);
        }
        float* stat = reinterpret_cast<float*>(stage(st) + L::kStatOff);
        const int64_t rbase = (b * p.H + h) * N;
        if (tid < kTileM) {   // rows >= N: zero-filled (their lse is replaced by +inf when read)
            const int i = row0 + tid;
            const int ok = i < N ? 4 : 0;
            const int64_t src = rbase + (i < N ? i : 0);
            cp_async_4(smem_u32(stat + tid), p.lse + src, ok);
            if (cosine) cp_async_4(smem_u32(stat + 2 * kTileM + tid), p.q_inv_norm + src, ok);
        }
        if (cosine && tid < kKeys) {   // padded keys get 0 (their logits are -inf anyway)
            const int key = kr0 + tid;
            cp_async_4(s0 + L::kKinvOff + 4 * tid, p.k_inv_norm + rbase + (key < N ? key : 0), key < N ? 4 : 0);
        }
        if constexpr (kFold) {
            if (tail_mine(ti)) {
                if (tid < 64) {
                    cp_async_16(s0 + L::kTQOff + soff, tq_ok ? q + tq_off : q, tq_ok ? 16 : 0);
                    cp_async_16(s0 + L::kTOOff + soff, tq_ok ? o + to_off : o, tq_ok ? 16 : 0);
                } else if (tid < 80) {   // rows >= N: zero-filled (lse read as +inf)
                    const int r = tid - 64, i = tail0 + r;
                    const int ok = i < N ? 4 : 0;
                    const int64_t src = rbase + (i < N ? i : 0);
                    cp_async_4(s0 + L::kTStatOff + 4 * r, p.lse + src, ok);
                    if (cosine) cp_async_4(s0 + L::kTStatOff + 4 * (32 + r), p.q_inv_norm + src, ok);
                }
            }
        }
    };
    // Window ti's D (the dsum kernel's, written by the kernel launched just before) into stage st.
    auto issue_d = [&](int ti, int st) {
        if (tid < kTileM) {
            const int i = row0 + tid;
            const int64_t src = (window_of(ti) * p.H + h) * N + (i < N ? i : 0);
            cp_async_4(smem_u32(reinterpret_cast<float*>(stage(st) + L::kStatOff) + kTileM + tid), p.dsum + src,
                       i < N ? 4 : 0);
        }
        if constexpr (kFold) {
            if (tail_mine(ti) && tid >= 80 && tid < 96) {
                const int r = tid - 80, i = tail0 + r;
                const int64_t src = (window_of(ti) * p.H + h) * N + (i < N ? i : 0);
                cp_async_4(smem_u32(stage(st)) + L::kTStatOff + 4 * (16 + r), p.dsum + src, i < N ? 4 : 0);
            }
        }
    };

    // The strip: rows row0 .. row0 + 63 of the bias+mask slice (Npad columns; at Npad 192 on the
    // 256-key kernel the last 64 columns are never read: their sub-block is skipped), or 0 / -inf
    // (padded keys).
    if (has_bm) {
        const float* bm_slice = p.bm + w * p.bm_win_stride + h * p.bm_head_stride + int64_t(row0) * Npad + kr0;
        const int chunks_per_row = min(kKeys, Npad - kr0) / 4;
        for (int c = tid; c < kTileM * chunks_per_row; c += L::kThreads) {
            const int r = c / chunks_per_row, cc = c - r * chunks_per_row;
            cp_async_16(smem_u32(sBm + r * L::kBmPitch + cc * 4), bm_slice + int64_t(r) * Npad + cc * 4, 16);
        }
    } else {
        for (int c = tid; c < kTileM * kKeys; c += L::kThreads)
            sBm[(c / kKeys) * L::kBmPitch + c % kKeys] = kr0 + c % kKeys < N ? 0.f : -INFINITY;
    }
    // kFold: the tail rows' strip (keys 0..143; the same 0 / -inf without bias and mask), their dbias
    // sums (zero) and the warps' dq parts
    [[maybe_unused]] float* const sTBm = reinterpret_cast<float*>(smem + L::tail_off(true));
    [[maybe_unused]] float* const sTDb = sTBm + 16 * L::kTailPitch;
    [[maybe_unused]] float* const sTPart = sTDb + 16 * L::kTailPitch;
    if constexpr (kFold) {
        constexpr int kCols = 144, kChunks = kCols / 4;
        if (has_bm) {
            const float* bm_t = p.bm + w * p.bm_win_stride + h * p.bm_head_stride + int64_t(tail0) * Npad;
            for (int c = tid; c < 16 * kChunks; c += L::kThreads) {
                const int r = c / kChunks, cc = c - r * kChunks;
                cp_async_16(smem_u32(sTBm + r * L::kTailPitch + cc * 4), bm_t + int64_t(r) * Npad + cc * 4, 16);
            }
        } else {
            for (int c = tid; c < 16 * kCols; c += L::kThreads) sTBm[(c / kCols) * L::kTailPitch + c % kCols] = c % kCols < N ? 0.f : -INFINITY;
        }
        for (int c = tid; c < 16 * L::kTailPitch; c += L::kThreads) sTDb[c] = 0.f;
    }
    issue(0, 0);
    // Launched as the dsum kernel's programmatic dependent (launch_bwd_tiled_impl), the CTA loads
    // the strip and the first window's tiles and statistics before pdl_wait (the dsum kernel lets it
    // launch only after its own pdl_wait: the bm build, the preprocess and the key side are
    // complete) and the window's D, which the dsum kernel writes, after it.
    pdl_wait();
    issue_d(0, 0);
    cp_async_commit();

    float dbias[kSub][kNT][4];
#pragma unroll
    for (int sb = 0; sb < kSub; ++sb) zero_acc(dbias[sb]);
    float dalpha_acc = 0.f;
    const int lrow[2] = {warp * 16 + g, warp * 16 + g + 8};

    // The late epilogue (kTail < 64: Npad 192, where warpgroup 0's keys are 64 + kTail against
    // warpgroup 1's 64, so warpgroup 1 waited at every window's barriers): warpgroup 0 leaves its dq
    // part and V2 row sums of window ti in buffer ti % 2 and goes on to window ti + 1; warpgroup 1
    // adds them to its own (dq_1 + dq_0: the same sums as dq_0 + dq_1), projects, stores dq and
    // takes dalpha, at the top of window ti + 1, with window ti's q pairs kept in registers (that
    // stage is being refilled by then). One barrier per window instead of two. Elsewhere warpgroup
    // 0 adds warpgroup 1's part after a barrier and stores, as below.
    constexpr bool kLate = kTail < 64;
    float dq[4][4];
    // dq and the V2 row sums `rs` += the other warpgroup's part in buffer x (its layout: dq as this
    // thread holds it, then the 64 rows' sums)
    auto add_part = [&](const float* x, float (&rs)[2]) {
#pragma unroll
        for (int i = 0; i < 4; ++i) {
            const float4 v = *reinterpret_cast<const float4*>(x + (i * 128 + wtid) * 4);
            dq[i][0] += v.x;
            dq[i][1] += v.y;
            dq[i][2] += v.z;
            dq[i][3] += v.w;
        }
        if (cosine) {
#pragma unroll
            for (int r = 0; r < 2; ++r) rs[r] += x[128 * 16 + lrow[r]];
        }
    };
    [[maybe_unused]] uint32_t xq[2][4] = {};                    // warpgroup 1's carry of window ti - 1:
    [[maybe_unused]] float q_inv_c[2] = {1.f, 1.f}, rs_c[2] = {0.f, 0.f};   // its q pairs, 1/||q||,
    [[maybe_unused]] int64_t b_c = 0;                                      // row sums and window
    auto late_epilogue = [&](int tp) {   // window tp, by warpgroup 1 (dq still holds its part)
        add_part(reinterpret_cast<const float*>(smem + L::kXOff + (tp & 1) * L::kXBytes), rs_c);
        if (cosine && t4 == 0) {
#pragma unroll
            for (int r = 0; r < 2; ++r) dalpha_acc += q_inv_c[r] * rs_c[r];
        }
        warp_store_grad_rows_x<32, Element>(
            dq, cosine, [&](int r, int i) { return xq[r][i]; }, q_inv_c, alpha,
            static_cast<Element*>(p.dq.ptr) + b_c * p.dq.batch_stride + h * p.dq.head_stride, p.dq.row_stride,
            row0 + warp * 16, N, d, lane);
    };

    // kFold: window ti's tail rows (stage st) by this warp of warpgroup 1 (see above the kernel).
    auto tail_window = [&](int st, int64_t b, auto cosine_tag) {
        constexpr bool kCos = decltype(cosine_tag)::value;
        const uint32_t sb0 = smem_u32(stage(st));
        const uint32_t sK = sb0 + L::kKOff, sV = sb0 + L::kVOff;
        const float* tstat = reinterpret_cast<const float*>(stage(st) + L::kTStatOff);
        const float* kinv = reinterpret_cast<const float*>(stage(st) + L::kKinvOff);
        // the lanes' ldmatrix rows (A: q, dout, and k transposed for dq; B: k, v for S, dP) and
        // this warp's 16-key blocks
        const TailWarpLanes tl(warp, lane, N, 4);
        const int a_r = tl.a_r, a_j = tl.a_j, b_r = tl.b_r, b_j = tl.b_j, blk0 = tl.blk0, n_blk = tl.n_blk;
        uint32_t qa[2][4], oa[2][4];
#pragma unroll
        for (int ks = 0; ks < 2; ++ks) {
            ldmatrix_x4(sb0 + L::kTQOff + sw64_offset(a_r, 2 * ks + a_j), qa[ks][0], qa[ks][1], qa[ks][2], qa[ks][3]);
            ldmatrix_x4(sb0 + L::kTOOff + sw64_offset(a_r, 2 * ks + a_j), oa[ks][0], oa[ks][1], oa[ks][2], oa[ks][3]);
        }
        float lse_t[2], ds_t[2], qi_t[2], qa_t[2];
#pragma unroll
        for (int r = 0; r < 2; ++r) {
            const int lr = g + 8 * r;
            const bool ok = tail0 + lr < N;
            lse_t[r] = ok ? tstat[lr] : INFINITY;
            ds_t[r] = ok ? tstat[16 + lr] : 0.f;
            qi_t[r] = (kCos && ok) ? tstat[32 + lr] : 1.f;
            qa_t[r] = kCos ? qi_t[r] * al : al;
        }
        float dqt[4][4];
        zero_acc(dqt);
        float da_t[2] = {0.f, 0.f};
#pragma unroll
        for (int j = 0; j < 3; ++j) {
            if (j >= n_blk) break;
            const int key0 = (blk0 + j) * 16;
            float sc[2][4], dpt[2][4];
            zero_acc(sc);
            zero_acc(dpt);
#pragma unroll
            for (int ks = 0; ks < 2; ++ks) {
                uint32_t kb[4], vb[4];
                ldmatrix_x4(sK + sw64_offset(key0 + b_r, 2 * ks + b_j), kb[0], kb[1], kb[2], kb[3]);
                ldmatrix_x4(sV + sw64_offset(key0 + b_r, 2 * ks + b_j), vb[0], vb[1], vb[2], vb[3]);
                mma_16816<Element>(sc[0], qa[ks], kb[0], kb[1]);
                mma_16816<Element>(sc[1], qa[ks], kb[2], kb[3]);
                mma_16816<Element>(dpt[0], oa[ks], vb[0], vb[1]);
                mma_16816<Element>(dpt[1], oa[ks], vb[2], vb[3]);
            }
            // the sub-blocks' operations (dS as the A operand: rows g | g + 8 x keys 0-7 | 8-15)
            uint32_t pa[4];
#pragma unroll
            for (int h8 = 0; h8 < 2; ++h8) {
                const int col = key0 + h8 * 8 + 2 * t4;
                float2 kf = make_float2(1.f, 1.f);
                if constexpr (kCos) kf = *reinterpret_cast<const float2*>(kinv + col);
#pragma unroll
                for (int r = 0; r < 2; ++r) {
                    const int lr = g + 8 * r;
                    const float2 gs = bwd_q_ds_pair<kCos>(sc[h8][2 * r], sc[h8][2 * r + 1], dpt[h8][2 * r], dpt[h8][2 * r + 1], kf,
                                                          *reinterpret_cast<const float2*>(sTBm + lr * L::kTailPitch + col),
                                                          qa_t[r], lse_t[r], ds_t[r], da_t[r]);
                    float2* db = reinterpret_cast<float2*>(sTDb + lr * L::kTailPitch + col);
                    float2 acc = *db;
                    acc.x += gs.x;
                    acc.y += gs.y;
                    *db = acc;
                    pa[2 * h8 + r] = kCos ? Tr::pack(gs.x * kf.x, gs.y * kf.y) : Tr::pack(gs.x, gs.y);
                }
            }
            // dq part += dS k (k read transposed: keys along K)
#pragma unroll
            for (int dd = 0; dd < 2; ++dd) {
                uint32_t kt[4];
                ldmatrix_x4_trans(sK + sw64_offset(key0 + a_r, 2 * dd + a_j), kt[0], kt[1], kt[2], kt[3]);
                mma_16816<Element>(dqt[2 * dd], pa, kt[0], kt[1]);
                mma_16816<Element>(dqt[2 * dd + 1], pa, kt[2], kt[3]);
            }
        }
        float* part = sTPart + warp * 16 * L::kTailPartPitch;
#pragma unroll
        for (int r = 0; r < 2; ++r) {
            float* prow = part + (g + 8 * r) * L::kTailPartPitch;
#pragma unroll
            for (int i = 0; i < 4; ++i) *reinterpret_cast<float2*>(prow + i * 8 + 2 * t4) = make_float2(dqt[i][2 * r], dqt[i][2 * r + 1]);
            if constexpr (kCos) {
                const float rsum = quad_sum(da_t[r]);
                if (t4 == 0) prow[32] = rsum;
            }
        }
        group_sync(1);   // warpgroup 1's 4 parts are written
        if (warp == 0) {   // the parts in warp order, projected (V2), stored; dalpha
#pragma unroll
            for (int wp = 0; wp < 4; ++wp) {
                const float* pw = sTPart + wp * 16 * L::kTailPartPitch;
#pragma unroll
                for (int r = 0; r < 2; ++r) {
                    const float* prow = pw + (g + 8 * r) * L::kTailPartPitch;
#pragma unroll
                    for (int i = 0; i < 4; ++i) {
                        const float2 v = *reinterpret_cast<const float2*>(prow + i * 8 + 2 * t4);
                        if (wp == 0) {
                            dqt[i][2 * r] = v.x;
                            dqt[i][2 * r + 1] = v.y;
                        } else {
                            dqt[i][2 * r] += v.x;
                            dqt[i][2 * r + 1] += v.y;
                        }
                    }
                    if constexpr (kCos) da_t[r] = wp == 0 ? prow[32] : da_t[r] + prow[32];
                }
            }
            if constexpr (kCos) {
                if (t4 == 0) {
#pragma unroll
                    for (int r = 0; r < 2; ++r) dalpha_acc += qi_t[r] * da_t[r];
                }
            }
            warp_store_grad_rows<32, true>(dqt, kCos, reinterpret_cast<const Element*>(stage(st) + L::kTQOff), 0, qi_t, alpha,
                                           static_cast<Element*>(p.dq.ptr) + b * p.dq.batch_stride + h * p.dq.head_stride,
                                           p.dq.row_stride, tail0, N, d, lane);
        }
        // sTPart is written again two windows on, after two CTA barriers; this stage's tail tiles are
        // refilled after the next one
    };

    for (int ti = 0; ti < n_win; ++ti) {
        const int st = ti & 1;
        cp_async_wait<0>();
        fence_proxy_async_smem();   // the tiles are read by wgmma (the async proxy)
        __syncthreads();            // window ti landed; every warp is done with window ti - 1
        if (ti + 1 < n_win) {
            issue(ti + 1, st ^ 1);
            issue_d(ti + 1, st ^ 1);
        }
        cp_async_commit();
        if constexpr (kLate) {
            if (wg == 1 && ti > 0) late_epilogue(ti - 1);
        }

        unsigned char* s0 = stage(st);
        const Element* tQ = reinterpret_cast<const Element*>(s0 + L::kQOff);
        const float* stat = reinterpret_cast<const float*>(s0 + L::kStatOff);
        const float* kinv = reinterpret_cast<const float*>(s0 + L::kKinvOff);
        const uint32_t st_bytes = uint32_t(st) * L::kStageBytes;
        const int64_t b = window_of(ti);

        float lse_r[2], dsum[2], q_inv[2], qa[2];
#pragma unroll
        for (int r = 0; r < 2; ++r) {
            const bool ok = row0 + lrow[r] < N;
            lse_r[r] = ok ? stat[lrow[r]] : INFINITY;
            dsum[r] = ok ? stat[kTileM + lrow[r]] : 0.f;
            q_inv[r] = (cosine && ok) ? stat[2 * kTileM + lrow[r]] : 1.f;
            qa[r] = cosine ? q_inv[r] * al : al;   // the row's logit factor (V2: see bwd_tiled_kernels.cuh)
        }
        zero_acc(dq);
        // V2: per row, Σ_j dS_ij (s_ij / ||k_j||) over the warpgroup's keys (two chains); dalpha takes
        // it times 1/||q_i|| (see bwd_tiled_kernels.cuh)
        float da[2][2] = {};

        // Sub-block sb of warpgroup wg: keys (sb * kWgs + wg) * 64 .. + 63 (interleaved: at Npad 192
        // warpgroup 0 takes keys 0..63 and the last block, 128..191, warpgroup 1 keys 64..127), kW of
        // them (64, or kTail for the last block).
        auto sub_block = [&](int sb, int key0, auto width_tag) {
            constexpr int kW = decltype(width_tag)::value;
            constexpr int kNW = kW / 8;   // its n8 tiles
            const uint32_t k_bytes = st_bytes + L::kKOff + key0 * 64, v_bytes = st_bytes + L::kVOff + key0 * 64;
            float s[kNW][4], dp[kNW][4];
            wg_mma_abt<Element, kW>(s, wgmma_desc_add(desc0, st_bytes + L::kQOff), wgmma_desc_add(desc0, k_bytes));
            wg_mma_abt<Element, kW>(dp, wgmma_desc_add(desc0, st_bytes + L::kOOff), wgmma_desc_add(desc0, v_bytes));
            wg_products_done(s, dp);
            if constexpr (kDropout)
                dropout_apply(dp, dropout_keep_bits<kNT>(drop, b * p.H + h, (row0 + warp * 16) >> 4, (kr0 + key0) >> 4, lane),
                              drop.scale);
            auto elementwise = [&](auto cosine_tag) {
                constexpr bool kCos = decltype(cosine_tag)::value;
                float2 kf[kCos ? kNW : 1];
                if constexpr (kCos) {
#pragma unroll
                    for (int nt = 0; nt < kNW; ++nt) kf[nt] = *reinterpret_cast<const float2*>(kinv + key0 + nt * 8 + 2 * t4);
                }
#pragma unroll
                for (int r = 0; r < 2; ++r) {
                    const float* bm_row = sBm + lrow[r] * L::kBmPitch + key0 + 2 * t4;
#pragma unroll
                    for (int nt = 0; nt < kNW; ++nt) {
                        float2 kfn = make_float2(1.f, 1.f);
                        if constexpr (kCos) kfn = kf[nt];
                        const float2 gs = bwd_q_ds_pair<kCos>(s[nt][2 * r], s[nt][2 * r + 1], dp[nt][2 * r], dp[nt][2 * r + 1], kfn,
                                                              *reinterpret_cast<const float2*>(bm_row + nt * 8), qa[r], lse_r[r],
                                                              dsum[r], da[r][nt & 1]);
                        dbias[sb][nt][2 * r] += gs.x;
                        dbias[sb][nt][2 * r + 1] += gs.y;
                        // the dq product takes dS diag(1/||k||) (V2), dS (V1)
                        dp[nt][2 * r] = kCos ? gs.x * kfn.x : gs.x;
                        dp[nt][2 * r + 1] = kCos ? gs.y * kfn.y : gs.y;
                    }
                }
            };
            if (cosine) elementwise(std::true_type{});
            else elementwise(std::false_type{});
            wg_mma_pb<Element, kW>(dq, dp, wgmma_desc_add(desc0_t, k_bytes));
            wg_products_done(dq);
        };
#pragma unroll
        for (int sb = 0; sb < kSub; ++sb) {
            const int key0 = (sb * L::kWgs + wg) * 64;
            // past Npad (Npad 192, or the last key range): warpgroup 1's second sub-block, or more
            if (kr0 + key0 >= Npad) break;
            // (sb is a constant once unrolled: one form per sub-block is compiled)
            if (kTail < 64 && sb == kSub - 1) sub_block(sb, key0, std::integral_constant<int, kTail>{});
            else sub_block(sb, key0, std::integral_constant<int, 64>{});
        }

        // The warpgroups' dq (and V2 row sums) added in warpgroup order by warpgroup 0.
        float rs[2];
#pragma unroll
        for (int r = 0; r < 2; ++r) rs[r] = quad_sum(da[r][0] + da[r][1]);
        if constexpr (kLate) {
            if (wg == 0) {   // window ti's part, for warpgroup 1 at the top of window ti + 1
                float* x = reinterpret_cast<float*>(smem + L::kXOff + (ti & 1) * L::kXBytes);
#pragma unroll
                for (int i = 0; i < 4; ++i)
                    *reinterpret_cast<float4*>(x + (i * 128 + wtid) * 4) = make_float4(dq[i][0], dq[i][1], dq[i][2], dq[i][3]);
                if (cosine && t4 == 0) {
#pragma unroll
                    for (int r = 0; r < 2; ++r) x[128 * 16 + lrow[r]] = rs[r];
                }
            } else {
#pragma unroll
                for (int r = 0; r < 2; ++r) {
                    q_inv_c[r] = q_inv[r];
                    rs_c[r] = rs[r];
                }
                b_c = b;
                if (cosine) {
#pragma unroll
                    for (int r = 0; r < 2; ++r)
#pragma unroll
                        for (int i = 0; i < 4; ++i) xq[r][i] = grad_rows_x_pair<32, true>(tQ, warp * 16, r, i, lane);
                }
                if constexpr (kFold) {
                    if (tail_mine(ti)) {
                        if (cosine) tail_window(st, b, std::true_type{});
                        else tail_window(st, b, std::false_type{});
                    }
                }
            }
            continue;
        }
        if (wg > 0) {
            float* x = reinterpret_cast<float*>(smem + L::kXOff + (wg - 1) * L::kXBytes);
#pragma unroll
            for (int i = 0; i < 4; ++i)
                *reinterpret_cast<float4*>(x + (i * 128 + wtid) * 4) = make_float4(dq[i][0], dq[i][1], dq[i][2], dq[i][3]);
            if (cosine && t4 == 0) {
#pragma unroll
                for (int r = 0; r < 2; ++r) x[128 * 16 + lrow[r]] = rs[r];
            }
        }
        __syncthreads();
        if (wg == 0) {
#pragma unroll 1
            for (int o = 1; o < L::kWgs; ++o)
                add_part(reinterpret_cast<const float*>(smem + L::kXOff + (o - 1) * L::kXBytes), rs);
            if (cosine && t4 == 0) {
#pragma unroll
                for (int r = 0; r < 2; ++r) dalpha_acc += q_inv[r] * rs[r];
            }
            // V1: dq = scale dq'; V2: dq = alpha/||q|| (dq' - q̂ <q̂, dq'>) (linear in dq': with key
            // ranges each range's part, in fp32, summed afterwards by window_attn_bwd_dq_reduce_kernel)
            if (n_kr == 1)
                warp_store_grad_rows<32, true>(dq, cosine, tQ, warp * 16, q_inv, alpha,
                                               static_cast<Element*>(p.dq.ptr) + b * p.dq.batch_stride + h * p.dq.head_stride,
                                               p.dq.row_stride, row0 + warp * 16, N, d, lane);
            else
                warp_store_grad_rows<32, true>(dq, cosine, tQ, warp * 16, q_inv, alpha,
                                               p.dq_partial + kr * p.dq_partial_range_stride + ((b - b_base) * p.H + h) * int64_t(N) * d,
                                               int64_t(d), row0 + warp * 16, N, d, lane);
        }
        // the partials are rewritten only after the next window's first barrier, which warpgroup 0
        // reaches after these reads; this stage is refilled only after it too
    }
    if constexpr (kLate) {   // the last window's dq
        __syncthreads();
        if (wg == 1) late_epilogue(n_win - 1);
    }

    // The chunk's dbias partial: the block's 64 rows x this warpgroup's keys, written once.
    if (want_dbias) {
        float* gAcc = p.dbias_partial + (int64_t(h) * p.nW * p.n_chunks + partial) * p.Npad * p.Npad + int64_t(row0) * p.Npad;
#pragma unroll
        for (int sb = 0; sb < kSub; ++sb) {
            const int key0 = kr0 + (sb * L::kWgs + wg) * 64;
            if (key0 >= Npad) break;
#pragma unroll
            for (int r = 0; r < 2; ++r)
#pragma unroll
                for (int nt = 0; nt < kNT; ++nt)
                    *reinterpret_cast<float2*>(gAcc + int64_t(lrow[r]) * p.Npad + key0 + nt * 8 + 2 * t4) =
                        make_float2(dbias[sb][nt][2 * r], dbias[sb][nt][2 * r + 1]);
        }
        if constexpr (kFold) {   // the tail rows' sums (final after the barrier above the late epilogue)
            constexpr int kChunks = 144 / 4;
            float* gT = p.dbias_partial + (int64_t(h) * p.nW * p.n_chunks + partial) * p.Npad * p.Npad +
                        int64_t(tail0 + 16 * m_block) * p.Npad;
            for (int c = tid; c < 16 * kChunks; c += L::kThreads) {
                const int r = c / kChunks, cc = c - r * kChunks;
                *reinterpret_cast<float4*>(gT + int64_t(r) * p.Npad + cc * 4) =
                    *reinterpret_cast<const float4*>(sTDb + r * L::kTailPitch + cc * 4);
            }
        }
    }
    if (cosine) {
        __shared__ float red[4];
        const float v = warp_sum(dalpha_acc);
        if (wg == (kLate ? 1 : 0) && lane == 0) red[warp] = v;   // (the warpgroup that took dalpha)
        __syncthreads();
        if (tid == 0)
            p.dalpha_partial[((int64_t(h) * p.nW * p.n_chunks + partial) * p.num_m_blocks + m_block) * n_kr + kr] =
                red[0] + red[1] + red[2] + red[3];
    }
#else
    __trap();
#endif
}

}  // namespace fwa
