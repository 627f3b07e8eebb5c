// Window-attention forward on Hopper warpgroup MMA (sm_90a) for head dim <= 32 and
// N <= 256 (Npad 64, 128, 192, 256), and for head dim <= 64 at N <= 128, without attention dropout.
//
//   S = f(q kᵀ) + bm, P = softmax(S) (fp32, online over 64-key blocks), out = P v, lse = log Σ exp S
//
// One warpgroup (4 warps, 128 threads) owns 64 query rows of a window. Its q and all Npad keys
// of k and v are in shared memory (64-byte rows: d = 32 at 16 bits, 64-byte swizzle); per 64-key
// block: S = 2 wgmma m64n64k16 (q, k from shared memory; the next block's is issued before this
// block's softmax), the logits and an online softmax in registers, then P (packed to 16 bits in
// registers, the wgmma A operand) times [v | 1] with 4
// wgmma m64n40k16 (v read transposed from shared memory; the 8 extra columns are ones, so the
// tensor cores also return the row sums of P as packed, the P that multiplies v). The last block
// computes only the keys N leaves in it, rounded up to 16 (the template's kTail: 16, 32 or 48 keys,
// wgmma m64n{16,32,48}k16 and 1-3 k16 steps of P v; 64 where N fills it): at N = 144 (Npad 192)
// a full third block spent 3/4 of its products and exponentials on padded keys. The results are
// bitwise those of the full-width block (the padded keys' P is 0; FWA_WINDOW_WGMMA_TAIL=0 keeps
// it, for A/B timing and tests). For V2 the row
// and key norms are fp32 sums of the exact squares (at head dim 32 on the CUDA cores from the
// shared-memory tiles, at 64 from the diagonals of q qᵀ and of the 64 x 64 blocks of k kᵀ on
// wgmma) and are applied as fp32 factors of the raw q kᵀ, as in the mma.sync kernel (q and k are
// never re-rounded after normalisation).
//
// Work split as in the grouped mma.sync kernel: a CTA owns one (64-row query block, head h, bm
// window w) and a chunk of the windows b = w + nW * t sharing that bias+mask slice; its `groups`
// warpgroups (up to 4) take the chunk's windows group, group + groups, ...; the bias+mask strip of
// the block's 64 rows (fp32, log2 units, Npad columns, padded keys -inf) is loaded into shared
// memory once per CTA and read by every warpgroup. Per warpgroup: its own q / k / v tiles; q and k
// of the next window are copied while this window's last softmax and P v run, v while the next S
// runs. Without bias and mask the strip is 0 / -inf (padded keys), for V1 the key factors are 1:
// one code path for every mode.
//
// H100, bf16, V2 with bias and mask (session 18 runs 9 and 13): (1024, 6, 256) 0.376 ms against
// the mma.sync kernel's 0.443, (512, 4, 144) 0.093 against 0.106, N = 100 ~15 % faster. The kernel
// issues ~2000 instructions per warp and window at N = 256 (the mma.sync one ~2950) at ~60 % of
// the issue slots: latency bound with 4 warps per scheduler. (tools/proto/wgmma_fwd_n256_d32.cu,
// V1 with one strip and S for all 256 keys at once, ran 0.261 ms for 6144 windows; the product's
// V2 factors, norms, strided copies, partial blocks and lse cost the difference.)
// Head dim 33..64 (kHeadDim = 64, Npad 64 and 128; session 38): 128-byte rows with the 128-byte
// swizzle, 4 k16 steps of q kᵀ and of the norms' products, P [v | 1] as wgmma m64n72k16; the same
// code otherwise (4 warpgroups of 110 registers and 217 KB of shared memory per CTA at Npad 64,
// 114-124 registers and 201 KB at Npad 128; no spill). H100, V2 + bias + mask, op forward:
// (1024, 4, 64, 64) 66.2 -> 62.5 us against the mma.sync kernel, (256, 4, 49, 64) 22.5 -> 19.7.
// At Npad = 64 (one key block) each warpgroup double-buffers its q / k / v tiles, the next
// window's copies in flight during all of this window's work (session 19 runs 1-3, bf16, V2 +
// bias + mask: op forward (4096, 3, 64) 0.099 -> 0.093 ms against the mma.sync kernel, N = 49
// 0.084 -> 0.082, V1 N = 49 0.078 -> 0.076; kernel alone (256, 12, 64) 0.0298 -> 0.0273 ms).
// Session 20 (runs 1 and 6, bf16, outputs bitwise unchanged): the descriptors as offsets of two
// per-warpgroup bases (N = 256 loop 1924 -> 1626 instructions; Npad 64 124 -> 108 registers) and the
// launch as a programmatic dependent of the bm build: (4096, 3, 49) 0.082 -> 0.073 ms, (4096, 3, 64)
// 0.093 -> 0.087, N = 256 0.144 -> 0.142 (latency bound: ncu 43 % of issue slots, run 3).
#pragma once
#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <type_traits>

#include "launch_utils.h"
#include "warp_mma.cuh"
#include "wgmma.cuh"
#include "window_attn.h"

namespace fwa {

constexpr int kFwdWgThreads = 128;    // one warpgroup
// Warpgroups per CTA at most: 4 at up to 128 registers (16 warps per SM with the strip; 3 at up
// to 168 registers with 128- and 96-key S blocks were 4-9 % slower at N = 144 and 256, 5 %
// faster at N = 100: session 18 run 9).
constexpr int kFwdWgMaxGroups = 4;

// Cosine attention (V2) bounds every logit: in log2 units S_ij = alpha log2(e) cos_ij + bm_ij with
// |cos_ij| <= 1, so m_i = alpha log2(e) + max_j bm_ij is at least the row's maximum and at most
// 2 alpha log2(e) above it. Where that gap is at most kFwdFixedMaxShift (alpha <= 34.6; timm and
// transformers start at alpha = 10), the softmax takes m_i as its shift, fixed for the CTA (its rows
// and head): P = exp2(S - m_i) <= 1 needs no running maximum and no rescaling of the output
// accumulators, and the strip holds bm - m_i, so a logit costs one FMUL, one FFMA and the exp2.
// Nothing underflows that matters: the terms within 2^-24 of the row's largest are >= 2^-124, fp32
// and bf16 normals. Otherwise (V1, larger alpha) the online softmax with the running maximum.
// Only at 16-bit P of bf16 (fp16's normals end at 2^-14: its P would lose the row) and Npad 256
// (session 29 run F, bf16 V2: forward (1024, 6, 256) 0.355 -> 0.323 ms, (512, 4, 256) 0.127 ->
// 0.117; at Npad 64 and 192 the form cost more than it saved, +1-5 %, with more spilling):
// fwd_wgmma_fixed_form.
constexpr float kFwdFixedMaxShift = 100.f;
template <typename Element, int kKeys>
constexpr bool fwd_wgmma_fixed_form() { return kKeys == 256 && std::is_same<Element, __nv_bfloat16>::value; }

// The folded row tail (fwd_wgmma_fold_form: Npad 192, head dim 32, the last key block 16 keys
// wide, N in 129..144): the main kernel's CTAs also compute the rows past their query blocks
// (rows 128..143) of half their windows, on mma.sync (see window_attn_fwd_wgmma_kernel).
template <int kKeys, int kTail, int kHeadDim>
constexpr bool fwd_wgmma_fold_form() { return kHeadDim == 32 && kKeys == 192 && kTail == 16; }

// The warps of the row tail (the row-tail kernel's CTA, or the warpgroup of the folded row tail)
constexpr int kRowTailWarps = 4;
// fp32 pitch of a row of the warps' partial results (32 columns of o, the row max and the row
// sum; float2 stores of half a warp: 16 distinct bank pairs)
constexpr int kRowTailPitch = 40;

template <int kKeys, int kHeadDim = 32, bool kFold = false> struct FwdWgmmaLayout {
    static_assert(kKeys % 64 == 0 && kKeys <= 256, "Npad of 64, 128, 192 or 256");
    static_assert(kHeadDim == 32 || (kHeadDim == 64 && kKeys <= 128), "head dim 32, or 64 at Npad 64 / 128");
    static_assert(!kFold || (kKeys == 192 && kHeadDim == 32), "the folded row tail: Npad 192, head dim 32");
    // Npad = 64: two buffers of q / k / v per warpgroup (the next window's copies overlap all of
    // this window's work: one 64-key block leaves nothing to hide them behind otherwise).
    static constexpr int kStages = kKeys == 64 ? 2 : 1;
    // rows of kHeadDim 16-bit elements: 64 bytes (64-byte swizzle) or 128 (128-byte swizzle)
    static constexpr uint32_t kRowBytes = 2 * kHeadDim;
    static constexpr uint32_t kQBytes = kTileM * kRowBytes;
    static constexpr uint32_t kKBytes = kKeys * kRowBytes;
    static constexpr uint32_t kVBytes = kKeys * kRowBytes;
    // the key inverse norms, then the query rows' (copied to FwdParams::q_inv_norm after the
    // norm phase's barrier)
    static constexpr uint32_t kKinvBytes = (kKeys + kTileM) * sizeof(float);
    // the folded row tail's 16 q rows (after the inverse norms; 1024-aligned: kKinvBytes is 1024)
    static constexpr uint32_t kQTailBytes = kFold ? 16 * kRowBytes : 0;
    // one warpgroup's q, k, v tiles (512-byte aligned: the swizzle pattern) and inverse norms
    static constexpr uint32_t kStageBytes = (kQBytes + kKBytes + kVBytes + 1023u) / 1024u * 1024u;
    static constexpr uint32_t kGroupBytes = (kStages * kStageBytes + kKinvBytes + kQTailBytes + 1023u) / 1024u * 1024u;
    static_assert(!kFold || (kStages * kStageBytes + kKinvBytes) % 1024 == 0, "the q tail tile is 1024-aligned");
    // The strip: the bias+mask rows of the CTA's 64-row query block, then (kFold) of the 16 tail
    // rows, fp32, the columns the blocks read (kFold: the 144 keys of two 64-key blocks and the
    // 16-key last one; its narrower rows pay for the tail rows' 16).
    static constexpr int kStripRows = kTileM + (kFold ? 16 : 0);
    static constexpr int kStripCols = kFold ? kKeys - 48 : kKeys;
    static constexpr int kBmPitch = kStripCols + 8;           // fp32 pitch of the strip (float2 reads)
    static constexpr size_t kStripBytes = size_t(kStripRows) * kBmPitch * sizeof(float);
    // 16 rows of ones (one k16 step of the second panel of [v | 1]), 1024-aligned
    static constexpr size_t kOnesBytes = 16 * kRowBytes;
    static FWA_HOST_DEVICE size_t strip_offset(int groups) { return size_t(groups) * kGroupBytes; }
    static FWA_HOST_DEVICE size_t ones_offset(int groups) { return (strip_offset(groups) + kStripBytes + 1023) / 1024 * 1024; }
    // the fixed shifts of the strip's 64 rows (kFwdFixedMaxShift; Npad 256 only)
    static constexpr size_t kRowMaxBytes = kKeys == 256 ? kTileM * sizeof(float) : 0;
    static FWA_HOST_DEVICE size_t row_max_offset(int groups) { return ones_offset(groups) + kOnesBytes; }
    static size_t bytes(int groups) { return 1024 /* alignment slack */ + row_max_offset(groups) + kRowMaxBytes; }
    // The row-tail kernel (window_attn_fwd_row_tail_kernel): the strip's 16 rows, 2 stages of one
    // window's 16 q rows and the `keys` keys of k and v its blocks compute (Npad - 64 + the last
    // block's width; 64-byte rows with the 64-byte swizzle). The warps' partial results
    // (kRowTailWarps x 16 rows x kRowTailPitch fp32) reuse the window's stage once every warp is
    // done with its q, k and v. N = 144: 13 + 2 x 19 KB, 4 CTAs per SM.
    static constexpr uint32_t kRowTailStripBytes = (16u * kBmPitch * sizeof(float) + 1023u) / 1024u * 1024u;
    static constexpr uint32_t row_tail_stage_bytes(int keys) { return 16u * kRowBytes + 2u * uint32_t(keys) * kRowBytes; }
    static constexpr uint32_t row_tail_part_bytes(int warps) { return uint32_t(warps) * 16u * kRowTailPitch * sizeof(float); }
    static FWA_HOST_DEVICE size_t row_tail_bytes(int keys) {
        return 1024 /* alignment slack */ + kRowTailStripBytes + 2 * size_t(row_tail_stage_bytes(keys));
    }
};

// K-major q / k operands: sw64_kmajor_desc at a tile's first k16 step; step ks is 32 ks bytes into
// the 64-byte rows (wgmma_desc_add; the swizzle is applied by the hardware to the full address).
// MN-major [v | 1] operand (keys along K, head dim along N) at a tile's first k16 step (step kk:
// 16 keys = 1024 kk bytes on, fwd_wg_v_desc_add); 8-key groups 512 bytes apart; the second
// 32-column panel (columns 32..39 of the m64n40k16: the row sums of P) is `ones` (all 1, so its
// swizzle does not matter), the leading byte offset away.
// Head dim 64 (Npad 64 only): 128-byte rows with the 128-byte swizzle (8-row groups 1024 bytes
// apart, k16 step ks of q / k 32 ks bytes on within the row, a k16 step of [v | 1] 16 keys = 2048
// bytes; the second panel, columns 64..71, is `ones`).
template <int kHeadDim>
FWA_DEVICE uint64_t fwd_wg_v_desc(uint32_t tile, uint32_t ones) {
    return kHeadDim == 32 ? wgmma_desc(tile, ones - tile, 512, 2) : wgmma_desc(tile, ones - tile, 1024, 1);
}
template <int kHeadDim>
FWA_DEVICE uint64_t fwd_wg_kmajor_desc(uint32_t tile) {
    return kHeadDim == 32 ? sw64_kmajor_desc(tile) : wgmma_desc(tile, 16, 1024, 1);
}
// The descriptor of a tile `bytes` further on (a multiple of 16): for q / k wgmma_desc_add (the
// start address field), for [v | 1] also the leading byte offset (bits 16-29: the distance to the
// fixed ones panel shrinks by as much). Every field stays in range, so a 32-bit add of the low
// word: with the descriptors built per wgmma from the tile address (shift, mask, or, and two R2UR
// each) the window loop spent ~290 of its ~1900 instructions on them.
FWA_DEVICE uint64_t fwd_wg_v_desc_add(uint64_t desc, uint32_t bytes) {
    return (desc & 0xFFFFFFFF00000000ull) | uint32_t(uint32_t(desc) + (bytes >> 4) - ((bytes >> 4) << 16));
}

// Rows row0 .. row0 + kRows - 1 of the (bm window w, head h) bias+mask slice (its first kCols of
// the Npad = kKeys columns, log2 units) into a strip of pitch kPitch, by threads tid, tid + stride,
// ...:
//  - from bm (built by the op layer): cp.async, the caller commits and waits;
//  - from the bias and mask themselves (FwdParams::bias / mask, no bm: window_attn_fwd_reads_bias_mask):
//    (bias + mask) log2(e) with window_attn_build_bm's operations, so the strip is bitwise its bm's
//    rows; loads through the read-only path, kBatch chunks of 4 columns in flight per thread;
//  - without bias and mask 0 for the keys < N,
// and -inf for the padded keys (0 for the padded rows), so that one softmax serves every mode.
template <int kKeys, int kRows, int kCols = kKeys, int kPitch = FwdWgmmaLayout<kKeys>::kBmPitch>
FWA_DEVICE void load_fwd_strip(float* sBm, const FwdParams& p, int h, int w, int row0, int N, int tid, int stride) {
    static_assert(kCols % 4 == 0 && kCols <= kKeys, "whole 16-byte chunks of the slice's rows");
    constexpr int kChunksPerRow = kCols / 4;
    constexpr int kChunks = kRows * kChunksPerRow;
    if (p.bm != nullptr) {
        const float* bm_slice = p.bm + w * p.bm_win_stride + h * p.bm_head_stride;
        for (int c = tid; c < kChunks; c += stride) {
            const int r = c / kChunksPerRow, cc = c - r * kChunksPerRow;
            cp_async_16(smem_u32(sBm + r * kPitch + cc * 4), bm_slice + int64_t(row0 + r) * kKeys + cc * 4, 16);
        }
    } else if (p.bias != nullptr || p.mask != nullptr) {
        const float* bias = p.bias != nullptr ? p.bias + h * p.bias_s0 : nullptr;
        const float* mask = p.mask != nullptr ? p.mask + w * p.mask_s0 : nullptr;
        // kBatch chunks per thread at a time: every load of the batch is issued (from an address
        // clamped into the N x N slice, no branch) before any value is used (with the padded
        // elements' loads under branches, each load waited for the one before: ~3x slower)
        constexpr int kBatch = 4;
        for (int c0 = tid; c0 < kChunks; c0 += kBatch * stride) {
            float bv[kBatch][4], mv[kBatch][4];
#pragma unroll
            for (int u = 0; u < kBatch; ++u) {
                const int c = min(c0 + u * stride, kChunks - 1);
                const int r = c / kChunksPerRow, j0 = (c - r * kChunksPerRow) * 4;
                const int64_t i = min(row0 + r, N - 1);
#pragma unroll
                for (int e = 0; e < 4; ++e) {
                    const int64_t j = min(j0 + e, N - 1);
                    bv[u][e] = bias != nullptr ? __ldg(bias + i * p.bias_s1 + j * p.bias_s2) : 0.f;
                    mv[u][e] = mask != nullptr ? __ldg(mask + i * p.mask_s1 + j * p.mask_s2) : 0.f;
                }
            }
#pragma unroll
            for (int u = 0; u < kBatch; ++u) {
                const int c = c0 + u * stride;
                if (c < kChunks) {
                    const int r = c / kChunksPerRow, j0 = (c - r * kChunksPerRow) * 4;
                    float v[4];
#pragma unroll
                    for (int e = 0; e < 4; ++e) {
                        float x = 0.f;
                        if (bias != nullptr) x += bv[u][e];
                        if (mask != nullptr) x += mv[u][e];
                        // padded key: probability 0; padded query row: finite, never stored
                        v[e] = j0 + e >= N ? -INFINITY : (row0 + r >= N ? 0.f : x * kLog2e);
                    }
                    *reinterpret_cast<float4*>(sBm + r * kPitch + j0) = make_float4(v[0], v[1], v[2], v[3]);
                }
            }
        }
    } else {
        for (int c = tid; c < kRows * kCols; c += stride) sBm[(c / kCols) * kPitch + c % kCols] = c % kCols < N ? 0.f : -INFINITY;
    }
}

// The copies of both window forwards below into swizzled tiles of kHeadDim 16-bit elements per row
// (64-byte rows with the 64-byte swizzle at head dim 32, 128-byte rows with the 128-byte swizzle
// at 64) by a warpgroup: thread tid moves 16-byte chunk ld_j = tid % kChunks of rows ld_r +
// kRowStep i, ld_r = tid / kChunks, whose swizzled position in a row is the same for every i
// (kRowStep = 32 or 16 rows: whole swizzle periods; 2048 bytes per step either way).
// copy<kRows>: rows first_row .. first_row + kRows - 1 of one window (`win`: its row 0, rs its row
// stride in elements), zero-filled beyond N and d. Offsets within a window in 32 bits (rows < 1024
// apart; row strides are element counts of a few rows of a tensor: window_fwd_wgmma_shape_ok), the
// chunk addresses advanced by kRowStep rows each: with the offsets derived per chunk (or held in 64
// bits), the compiler re-derived them from the parameters per chunk (~25 instructions each, ~450
// per window) or spilled.
template <typename Element, int kHeadDim = 32> struct SwRowCopier {
    static_assert(kHeadDim == 32 || kHeadDim == 64, "64- or 128-byte rows");
    static constexpr int kChunks = kHeadDim / 8;        // 16-byte chunks per row
    static constexpr int kRowStep = kFwdWgThreads / kChunks;
    int ld_r, ld_j;
    bool col_ok;
    uint32_t soff;
    FWA_DEVICE SwRowCopier(int tid, int d)
        : ld_r(tid / kChunks), ld_j(tid % kChunks), col_ok((tid % kChunks) * 8 < d),
          soff(kHeadDim == 32 ? sw64_offset(tid / kChunks, tid % kChunks) : sw128_offset(tid / kChunks, tid % kChunks)) {}
    template <int kRows>
    FWA_DEVICE void copy(uint32_t tile, const Element* win, int rs, int first_row, int N, const Element* src) const {
        constexpr int kPasses = (kRows + kRowStep - 1) / kRowStep;
        // (kRows < kRowStep or not a multiple: the threads past its last row copy nothing there)
        auto in_tile = [&](int i) { return kRows % kRowStep == 0 || ld_r + kRowStep * i < kRows; };
        const Element* gp = win + ((first_row + ld_r) * rs + ld_j * 8);
        const int step = kRowStep * rs;
        if (col_ok && first_row + kRows <= N) {   // every row of the tile exists
#pragma unroll
            for (int i = 0; i < kPasses; ++i) {
                if (in_tile(i)) cp_async_16(tile + soff + uint32_t(i) * 2048u, gp, 16);
                gp += step;
            }
        } else {
            const int rows_left = N - first_row - ld_r;   // rows ld_r + kRowStep i < rows_left exist
#pragma unroll
            for (int i = 0; i < kPasses; ++i) {
                const bool valid = col_ok && kRowStep * i < rows_left;
                if (in_tile(i)) cp_async_16(tile + soff + uint32_t(i) * 2048u, valid ? gp : src, valid ? 16 : 0);
                gp += step;
            }
        }
    }
};
template <typename Element> using Sw64RowCopier = SwRowCopier<Element, 32>;

// A warp's share of a 16-row tail on mma.sync m16n8k16 (the row-tail kernel below, and the main
// kernel's folded row tail): q's 16 rows in a tile of their own, k and v in tiles, 64-byte rows
// with the 64-byte swizzle; the bias+mask rows in a strip. The kRowTailWarps warps split the keys
// (16-key blocks, contiguous ranges: N = 144 takes 2, 2, 2 and 3 blocks): per warp S from ldmatrix
// fragments, P = exp2(S - m_w) with m_w the row max over the warp's keys, P v, and the row sums of
// P as packed from one more mma against a fragment of ones. The warps' (o, m_w, l_w) then meet in
// shared memory: out = sum_w 2^(m_w - m) o_w / sum_w 2^(m_w - m) l_w, m = max_w m_w
// (row_tail_combine_store).
template <typename Element, int kMaxBlocks> struct RowTailWarp : TailWarpLanes {
    using Tr = ElementTraits<Element>;
    // (the lanes' ldmatrix geometry and the warp's key blocks: TailWarpLanes)
    FWA_DEVICE RowTailWarp(int warp, int lane, int N) : TailWarpLanes(warp, lane, N, kRowTailWarps) {}

    // q's fragments (the tile sQ) and the row factors alpha log2(e), for V2 times the rows' inverse
    // norms (qinv, from the fragments' sums of squares)
    FWA_DEVICE void load_q(uint32_t sQ, bool cosine, float alpha, uint32_t (&qa)[2][4], float (&row_factor)[2],
                           float (&qinv)[2]) const {
#pragma unroll
        for (int ks = 0; ks < 2; ++ks) ldmatrix_x4(sQ + sw64_offset(a_r, 2 * ks + a_j), qa[ks][0], qa[ks][1], qa[ks][2], qa[ks][3]);
        row_factor[0] = row_factor[1] = alpha * kLog2e;
        qinv[0] = qinv[1] = 1.f;
        if (cosine) {
            float ss0 = 0.f, ss1 = 0.f;
            accumulate_sumsq<Element>(qa[0], ss0, ss1);
            accumulate_sumsq<Element>(qa[1], ss0, ss1);
            qinv[0] = inv_norm_from_sumsq_fast(quad_sum(ss0));
            qinv[1] = inv_norm_from_sumsq_fast(quad_sum(ss1));
            row_factor[0] *= qinv[0];
            row_factor[1] *= qinv[1];
        }
    }

    // The logits of the warp's keys (s, log2 units) and m_w. S = q kᵀ from the k tile sK; the
    // logits S row_factor kf + bm with the strip's rows g and g + 8 (sBm: the tail's row 0 and key 0,
    // pitch kPitch) and the key factors kf: 1 for V1; for V2 the keys' inverse norms, from kinv
    // (kKinv: the main kernel's, in shared memory) or from the sums of squares of the k fragments
    // (a quad sum, then a shuffle to the lanes that hold those keys' columns of S).
    template <int kPitch, bool kKinv>
    FWA_DEVICE void logits(uint32_t sK, const uint32_t (&qa)[2][4], const float (&row_factor)[2], bool cosine,
                           const float* kinv, const float* sBm, float (&s)[2 * kMaxBlocks][4], float (&m_w)[2]) const {
        // S over the warp's keys (n8 tiles 2 j, 2 j + 1: block blk0 + j)
        float kss[2 * kMaxBlocks];
#pragma unroll
        for (int nt = 0; nt < 2 * kMaxBlocks; ++nt) s[nt][0] = s[nt][1] = s[nt][2] = s[nt][3] = kss[nt] = 0.f;
#pragma unroll
        for (int j = 0; j < kMaxBlocks; ++j) {
            if (j >= n_blk) break;
#pragma unroll
            for (int ks = 0; ks < 2; ++ks) {
                uint32_t kb[4];
                ldmatrix_x4(sK + sw64_offset((blk0 + j) * 16 + b_r, 2 * ks + b_j), kb[0], kb[1], kb[2], kb[3]);
                mma_16816<Element>(s[2 * j], qa[ks], kb[0], kb[1]);
                mma_16816<Element>(s[2 * j + 1], qa[ks], kb[2], kb[3]);
                if (!kKinv && cosine) {   // keys g of n8 tiles 2 j and 2 j + 1, dims 2 t4 + {0, 1, 8, 9} of this step
#pragma unroll
                    for (int e = 0; e < 4; ++e) {
                        const float2 x = Tr::unpack(kb[e]);
                        kss[2 * j + (e >> 1)] = fmaf(x.x, x.x, fmaf(x.y, x.y, kss[2 * j + (e >> 1)]));
                    }
                }
            }
        }
        // logits (log2 units); from the fragments, the key factors of this thread's columns 2 t4,
        // 2 t4 + 1 of each n8 tile are held by lanes 8 t4 and 8 t4 + 4 (g = 2 t4, 2 t4 + 1)
        float mx[2] = {-INFINITY, -INFINITY};
#pragma unroll
        for (int nt = 0; nt < 2 * kMaxBlocks; ++nt) {
            if (nt >= 2 * n_blk) break;
            float kf0 = 1.f, kf1 = 1.f;
            if (cosine) {
                if constexpr (kKinv) {
                    const float2 kf = *reinterpret_cast<const float2*>(kinv + blk0 * 16 + nt * 8 + 2 * t4);
                    kf0 = kf.x;
                    kf1 = kf.y;
                } else {
                    const float kinv_g = inv_norm_from_sumsq_fast(quad_sum(kss[nt]));
                    kf0 = __shfl_sync(0xffffffffu, kinv_g, 8 * t4);
                    kf1 = __shfl_sync(0xffffffffu, kinv_g, 8 * t4 + 4);
                }
            }
            const float* bm0 = sBm + g * kPitch + blk0 * 16 + nt * 8 + 2 * t4;
            const float2 b0 = *reinterpret_cast<const float2*>(bm0);
            const float2 b1 = *reinterpret_cast<const float2*>(bm0 + 8 * kPitch);
            s[nt][0] = fmaf(s[nt][0] * row_factor[0], kf0, b0.x);
            s[nt][1] = fmaf(s[nt][1] * row_factor[0], kf1, b0.y);
            s[nt][2] = fmaf(s[nt][2] * row_factor[1], kf0, b1.x);
            s[nt][3] = fmaf(s[nt][3] * row_factor[1], kf1, b1.y);
            mx[0] = fmaxf(mx[0], fmaxf(s[nt][0], s[nt][1]));
            mx[1] = fmaxf(mx[1], fmaxf(s[nt][2], s[nt][3]));
        }
#pragma unroll
        for (int r = 0; r < 2; ++r) m_w[r] = quad_max(mx[r]);
    }

    // P = exp2(s - m_w) (packed to 16 bits per block, the A operand), o = P v (the v tile sV) and
    // l, the row sums of P as packed (B = ones: every column of l is the row sum)
    FWA_DEVICE void pv(uint32_t sV, const float (&s)[2 * kMaxBlocks][4], const float (&m_w)[2], float (&o)[4][4],
                       float (&l)[4]) const {
        const uint32_t one2 = Tr::pack(1.f, 1.f);
        float m_use[2];
#pragma unroll
        for (int r = 0; r < 2; ++r) m_use[r] = m_w[r] == -INFINITY ? 0.f : m_w[r];   // keys all -inf: P = 0, not NaN
#pragma unroll
        for (int i = 0; i < 4; ++i) o[i][0] = o[i][1] = o[i][2] = o[i][3] = l[i] = 0.f;
#pragma unroll
        for (int j = 0; j < kMaxBlocks; ++j) {
            if (j >= n_blk) break;
            uint32_t pa[4];
            pa[0] = Tr::pack(fast_exp2(s[2 * j][0] - m_use[0]), fast_exp2(s[2 * j][1] - m_use[0]));
            pa[1] = Tr::pack(fast_exp2(s[2 * j][2] - m_use[1]), fast_exp2(s[2 * j][3] - m_use[1]));
            pa[2] = Tr::pack(fast_exp2(s[2 * j + 1][0] - m_use[0]), fast_exp2(s[2 * j + 1][1] - m_use[0]));
            pa[3] = Tr::pack(fast_exp2(s[2 * j + 1][2] - m_use[1]), fast_exp2(s[2 * j + 1][3] - m_use[1]));
#pragma unroll
            for (int dd = 0; dd < 2; ++dd) {
                uint32_t vb[4];
                ldmatrix_x4_trans(sV + sw64_offset((blk0 + j) * 16 + a_r, 2 * dd + a_j), vb[0], vb[1], vb[2], vb[3]);
                mma_16816<Element>(o[2 * dd], pa, vb[0], vb[1]);
                mma_16816<Element>(o[2 * dd + 1], pa, vb[2], vb[3]);
            }
            mma_16816<Element>(l, pa, one2, one2);
        }
    }

    // this warp's part (16 rows of pitch kRowTailPitch at `part`): columns 0..31 o, 32 the row
    // max, 33 the row sum
    FWA_DEVICE void store_part(float* part, const float (&o)[4][4], const float (&m_w)[2], const float (&l)[4]) const {
#pragma unroll
        for (int r = 0; r < 2; ++r) {
            float* prow = part + (g + 8 * r) * kRowTailPitch;
#pragma unroll
            for (int i = 0; i < 4; ++i) *reinterpret_cast<float2*>(prow + i * 8 + 2 * t4) = make_float2(o[i][2 * r], o[i][2 * r + 1]);
            if (t4 == 0) *reinterpret_cast<float2*>(prow + 32) = make_float2(m_w[r], l[2 * r]);
        }
    }
};

// The kRowTailWarps warps' parts (sPart: warp w's 16 rows from row 16 w) combined, and the rows
// row0 .. row0 + 15 (those < N) of out and lse of window b, head h stored: thread tid of 128 takes
// row tid / 8, columns 4 (tid % 8) .. + 3.
template <typename Element>
FWA_DEVICE void row_tail_combine_store(const float* sPart, const FwdParams& p, int64_t b, int h, int row0, int tid) {
    using Tr = ElementTraits<Element>;
    constexpr int kPitch = kRowTailPitch;
    const int r = tid >> 3, c0 = (tid & 7) * 4;
    float m = -INFINITY;
#pragma unroll
    for (int wp = 0; wp < kRowTailWarps; ++wp) m = fmaxf(m, sPart[(wp * 16 + r) * kPitch + 32]);
    float lsum = 0.f;
    float4 acc = make_float4(0.f, 0.f, 0.f, 0.f);
#pragma unroll
    for (int wp = 0; wp < kRowTailWarps; ++wp) {
        const float* prow = sPart + (wp * 16 + r) * kPitch;
        const float mw = prow[32];
        const float f = mw == -INFINITY ? 0.f : fast_exp2(mw - m);   // (a warp whose keys are all -inf)
        const float4 ov = *reinterpret_cast<const float4*>(prow + c0);
        lsum = fmaf(f, prow[33], lsum);
        acc.x = fmaf(f, ov.x, acc.x);
        acc.y = fmaf(f, ov.y, acc.y);
        acc.z = fmaf(f, ov.z, acc.z);
        acc.w = fmaf(f, ov.w, acc.w);
    }
    const int row = row0 + r, N = p.N;
    if (row < N) {
        // lsum == 0: every logit of the row is -inf -> out 0, lse +inf. NaN propagates.
        const float inv_l = lsum == 0.f ? 0.f : fast_rcp(lsum);
        if ((tid & 7) == 0)
            p.lse[(b * p.H + h) * N + row] = lsum == 0.f ? INFINITY : ((m == -INFINITY ? 0.f : m) + fast_log2(lsum)) * kLn2;
        if (c0 < p.d) {
            Element* out = static_cast<Element*>(p.out.ptr) + b * p.out.batch_stride + h * p.out.head_stride +
                           int64_t(row) * p.out.row_stride + c0;
            *reinterpret_cast<uint2*>(out) = make_uint2(Tr::pack(acc.x * inv_l, acc.y * inv_l), Tr::pack(acc.z * inv_l, acc.w * inv_l));
        }
    }
}

// The row-tail kernel. Where the last 64-query block holds at most 16 rows of data (N = 144: rows
// 128..143 of the padded 192; N = 196: 4 rows), a warpgroup's m64 tile spends 3/4 or more of its
// products, exponentials and P v on padded rows: at N = 144 a quarter of the forward. With
// fwd_wgmma_row_tail(N) the main grid covers the other query blocks and, outside the folded form
// (fwd_wgmma_fold_form: the main grid's CTAs take those rows themselves), this kernel those rows
// on mma.sync m16n8k16 (an m16 tile: no padded rows beyond 16; RowTailWarp), one CTA of
// kRowTailWarps warps per (head, bm window, chunk id). The CTA walks its windows (every n_chunks-th
// batch index, downwards: see fwd_row_tail_cta) one at a time, the next window's q, k and v copied
// (2 stages) while this one's are used; the strip's 16 rows are loaded once. For V2 the key norms
// come from the k fragments' sums of squares. The warps' parts go to the window's stage, once
// every warp is done with its q, k and v.
// (Session 32 run A, one window per warp, each warp holding its own window: N = 144 76.8 -> 69.0
// us, but N = 196 98.6 -> 108.8: 4 warps per SM at 27 KB each, each waiting for its own copies.)
// It is launched right after the main grid as its programmatic dependent (the main kernel
// triggers its dependents once past its own wait for the bm build), so its CTAs take the SMs the
// main grid's last wave leaves; it waits for the main grid only before it exits (so that its
// completion, which later work on the stream waits for, implies the main grid's). It reads bm
// before that wait, through L2 (cp.async.cg): the build grid completed before any main CTA passed
// its wait, hence before this grid was launched. FWA_WINDOW_ROW_TAIL=0 keeps the rows on the
// warpgroup (A/B timing, tests).
// (4 CTAs per SM at 128 registers without spilling: the N = 144 forward 66.9-67.8 us; at 3 CTAs
// (170 registers) and 62 KB, the parts in a buffer of their own, 67.3-68.2 us: session 40 run G)
constexpr int kRowTailCtasPerSm = 4;

template <typename Element, int kKeys, int kTail>
FWA_DEVICE void fwd_row_tail_cta(const FwdParams& p, unsigned char* smem_raw) {
    using Layout = FwdWgmmaLayout<kKeys>;
    constexpr int kThreads = kRowTailWarps * 32;
    constexpr int kRowsK = kKeys - kTileN + kTail;            // the keys the blocks compute
    constexpr int kBlocks = kRowsK / 16;                      // 16-key blocks
    constexpr int kMaxBlocks = (kBlocks + kRowTailWarps - 1) / kRowTailWarps;
    constexpr uint32_t kStage = Layout::row_tail_stage_bytes(kRowsK);
    const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
    const uint32_t raw = smem_u32(smem_raw);
    const uint32_t base = (raw + 1023u) & ~1023u;

    // (p.num_m_blocks: the main grid's query blocks; this CTA's rows follow them)
    const WindowCtaWork cta = window_chunk_work(p, blockIdx.x, p.num_m_blocks);
    // This CTA's windows: every n_chunks-th batch index, from the last one of the chunk id down
    // (nB - 1 - chunk_id, then n_chunks less each): the main grid walks the batch indices upwards,
    // so the CTAs that start once it has finished read its latest windows' k and v first, while
    // they are still in L2.
    const int nB = p.B / p.nW;
    const int h = cta.h, w = cta.w, chunk_id = cta.chunk_id;
    const int n_win = chunk_id < nB ? (nB - 1 - chunk_id) / p.n_chunks + 1 : 0;
    if (n_win <= 0) return;   // the whole CTA
    const int N = p.N, d = p.d;
    const int row0 = cta.m_block * kTileM;
    const bool cosine = p.logit_scale != nullptr;
    const float alpha = cosine ? logit_scale_alpha(p.logit_scale, h) : p.scale;
    auto window_of = [&](int ti) -> int64_t {
        return w + int64_t(p.nW) * (nB - 1 - chunk_id - int64_t(p.n_chunks) * ti);
    };

    float* sBm = reinterpret_cast<float*>(smem_raw + (base - raw));
    const uint32_t sStage0 = base + Layout::kRowTailStripBytes;
    static_assert(Layout::row_tail_part_bytes(kRowTailWarps) <= kStage, "the partial results fit a stage");
    const Element* q_base = static_cast<const Element*>(p.q.ptr) + h * p.q.head_stride;
    const Element* k_base = static_cast<const Element*>(p.k.ptr) + h * p.k.head_stride;
    const Element* v_base = static_cast<const Element*>(p.v.ptr) + h * p.v.head_stride;
    const Sw64RowCopier<Element> cp(tid, d);
    auto issue = [&](int ti) {
        const int64_t b = window_of(ti);
        const uint32_t sQ = sStage0 + uint32_t(ti & 1) * kStage;
        cp.copy<16>(sQ, q_base + b * p.q.batch_stride, static_cast<int>(p.q.row_stride), row0, N, q_base);
        cp.copy<kRowsK>(sQ + 16u * Layout::kRowBytes, k_base + b * p.k.batch_stride, static_cast<int>(p.k.row_stride), 0, N,
                        k_base);
        cp.copy<kRowsK>(sQ + (16u + kRowsK) * Layout::kRowBytes, v_base + b * p.v.batch_stride,
                        static_cast<int>(p.v.row_stride), 0, N, v_base);
    };
    issue(0);
    // the strip's rows row0 .. row0 + 15
    load_fwd_strip<kKeys, 16>(sBm, p, h, w, row0, N, tid, kThreads);
    cp_async_commit();

    const RowTailWarp<Element, kMaxBlocks> rw(warp, lane, N);
    for (int ti = 0; ti < n_win; ++ti) {
        cp_async_wait<0>();   // window ti's copies (and the strip) landed
        // ... for every thread, and every thread is done with window ti - 1's stage (its partial
        // results): window ti + 1's copies go there
        __syncthreads();
        if (ti + 1 < n_win) issue(ti + 1);
        cp_async_commit();
        const uint32_t sQ = sStage0 + uint32_t(ti & 1) * kStage;
        float* const sPart = reinterpret_cast<float*>(smem_raw + (sQ - raw));   // (after the barrier below)
        const uint32_t sK = sQ + 16u * Layout::kRowBytes;
        const uint32_t sV = sK + uint32_t(kRowsK) * Layout::kRowBytes;

        uint32_t qa[2][4];
        float row_factor[2], qinv[2];
        rw.load_q(sQ, cosine, alpha, qa, row_factor, qinv);
        // the op's qk_inv_norm (FwdParams): these rows' (the keys' come from the main grid)
        if (cosine && warp == 0 && rw.t4 == 0 && p.q_inv_norm != nullptr)
            fwd_store_row_pair(p.q_inv_norm + (window_of(ti) * p.H + h) * N, row0 + rw.g, N, qinv);
        float s[2 * kMaxBlocks][4], m_w[2];
        rw.template logits<Layout::kBmPitch, false>(sK, qa, row_factor, cosine, nullptr, sBm, s, m_w);
        float o[4][4], l[4];
        rw.pv(sV, s, m_w, o, l);
        __syncthreads();   // every warp is done with this window's q, k and v: its parts go there
        rw.store_part(sPart + warp * 16 * kRowTailPitch, o, m_w, l);
        __syncthreads();   // every part is written
        row_tail_combine_store<Element>(sPart, p, window_of(ti), h, row0, tid);
    }
}

template <typename Element, int kKeys, int kTail>
__global__ void __launch_bounds__(kRowTailWarps * 32, kRowTailCtasPerSm) window_attn_fwd_row_tail_kernel(const FwdParams p) {
#if FWA_HAS_WGMMA   // (launched only after the sm_90a main grid; griddepcontrol needs sm_90)
    extern __shared__ __align__(1024) unsigned char smem_raw[];
    fwd_row_tail_cta<Element, kKeys, kTail>(p, smem_raw);
    // (every thread, also where the CTA had no window: see above)
    pdl_wait();
#else
    __trap();
#endif
}

static_assert(kFwdWgThreads == 128, "a group is one warpgroup (group_sync)");

// The last key block's width (fwd_wgmma_tail_keys): 16, 32, 48 or 64 keys. kHeadDim: 32, or 64 at
// Npad 64 and 128 (window_fwd_wgmma_shape_ok).
template <typename Element, int kKeys, int kTail, int kHeadDim = 32>
__global__ void __launch_bounds__(kFwdWgThreads * kFwdWgMaxGroups, 1)
window_attn_fwd_wgmma_kernel(const FwdParams p) {
#if FWA_HAS_WGMMA
    using Tr = ElementTraits<Element>;
    // the folded row tail's form (its layout: the q tail tiles and the strip's tail rows)
    constexpr bool kFold = fwd_wgmma_fold_form<kKeys, kTail, kHeadDim>();
    using Layout = FwdWgmmaLayout<kKeys, kHeadDim, kFold>;
    constexpr int kKSteps = kHeadDim / 16;   // k16 steps of q kᵀ (and of the norms' products)
    constexpr int kONT = kHeadDim / 8 + 1;   // n8 tiles of o = P [v | 1]: the head dim, the row sums
    constexpr uint32_t kRowBytes = Layout::kRowBytes;
    // Keys per S block: 64 (32 fp32 per thread), which fits the 128-register cap of 4 warpgroups
    // per CTA; S for all 256 keys at once spilled S itself even at 168 registers.
    constexpr int kBN = 64;
    constexpr int kTiles = kKeys / kBN;
    constexpr int kNT = kBN / 8;      // n8 tiles of an S block per thread row pair
    constexpr int kKK = kBN / 16;     // k16 steps of P v per block
    // The last block computes only its first kTail keys (the keys >= N there are -inf in the
    // strip: P = 0, as in a full block): S, softmax and P v over kTail / 8 n8 tiles and kTail / 16
    // k16 steps. After the loop's unrolling the block index is a constant, so every branch on
    // it below folds away at compile time.
    static_assert(kTail % 16 == 0 && kTail >= 16 && kTail <= kBN, "a last block of 16, 32, 48 or 64 keys");
    constexpr int kTailNT = kTail / 8;
    constexpr int kTailKK = kTail / 16;
    auto block_nt = [](int kt) { return kt == kTiles - 1 ? kTailNT : kNT; };
    auto block_kk = [](int kt) { return kt == kTiles - 1 ? kTailKK : kKK; };

    extern __shared__ __align__(1024) unsigned char smem_raw[];
    const uint32_t raw = smem_u32(smem_raw);
    const uint32_t base = (raw + 1023u) & ~1023u;
    const int groups = p.groups;
    // warp-uniform (shfl from lane 0): the tile addresses and wgmma descriptors derived from it
    // live in uniform registers
    const int group = __shfl_sync(0xffffffffu, int(threadIdx.x / kFwdWgThreads), 0);
    constexpr bool kDouble = Layout::kStages == 2;
    const uint32_t sGroup = base + group * Layout::kGroupBytes;
    float* kinv = reinterpret_cast<float*>(smem_raw + (sGroup + Layout::kStages * Layout::kStageBytes - raw));
    float* sBm = reinterpret_cast<float*>(smem_raw + (base + Layout::strip_offset(groups) - raw));
    const uint32_t sOnes = base + static_cast<uint32_t>(Layout::ones_offset(groups));

    const int tid = threadIdx.x % kFwdWgThreads, warp = tid >> 5, lane = tid & 31;
    const int g = lane >> 2, t4 = lane & 3;

    const WindowCtaWork cta = window_cta_work(p);
    const int m_block = cta.m_block, h = cta.h, w = cta.w, t_begin = cta.t_begin, t_end = cta.t_end;
    if (t_begin >= t_end) return;   // the whole CTA

    const int N = p.N, d = p.d;
    const int row0 = m_block * kTileM;
    const bool cosine = p.logit_scale != nullptr;
    const bool has_bm = p.bm != nullptr;   // (the strip by cp.async from bm)
    const float alpha = cosine ? logit_scale_alpha(p.logit_scale, h) : p.scale;

    // This warpgroup's windows: t_begin + group + groups * ti for ti < n_win (from here on only
    // its own named barrier: a warpgroup without windows leaves after the CTA barrier below).
    const int n_win = (t_end - t_begin - group + groups - 1) / groups;
    auto window_of = [&](int ti) -> int64_t { return w + int64_t(p.nW) * (t_begin + group + int64_t(groups) * ti); };

    // The folded row tail (FwdParams::fold_row_tail, in the form fwd_wgmma_fold_form; otherwise
    // false at compile time): rows tail_row0 = num_m_blocks * 64 .. N - 1 (at most 16) of this
    // warpgroup's windows ti with (ti + group) % num_m_blocks == m_block: the query blocks' CTAs of
    // a window take turns, and the warpgroups of a CTA too (window t = t_begin + group + groups ti
    // of the chunk has its rows in exactly one of the query blocks' CTAs). Their q rows are copied
    // with the window's q and k (a 16-row tile after the inverse norms); at the last key block,
    // once its S is done and before the next window's q and k are issued, each warp computes its
    // share of the keys (RowTailWarp, mma.sync m16n8k16: S from q's tail tile and k's tile, the key
    // factors from kinv, the bias+mask from the strip's rows 64..79, then P v) and the warps' parts
    // meet in the k tile. So k and v are read once per window, where the row-tail kernel read them
    // again after the main grid (~15 us of the N = 144 forward's 67).
    const bool fold = kFold && p.fold_row_tail;
    const int tail_row0 = p.num_m_blocks * kTileM;
    auto tail_window = [&](int ti) { return fold && (ti + group) % p.num_m_blocks == m_block; };
    constexpr int kFoldMaxBlocks = kFold ? ((kKeys - kTileN + kTail) / 16 + kRowTailWarps - 1) / kRowTailWarps : 1;
    const uint32_t sQTail = sGroup + Layout::kStages * Layout::kStageBytes + Layout::kKinvBytes;

    const Element* q_base = static_cast<const Element*>(p.q.ptr) + h * p.q.head_stride;
    const Element* k_base = static_cast<const Element*>(p.k.ptr) + h * p.k.head_stride;
    const Element* v_base = static_cast<const Element*>(p.v.ptr) + h * p.v.head_stride;
    const SwRowCopier<Element, kHeadDim> cp(tid, d);
    // Stage st's tiles: q, then k, then v.
    auto stage_q = [&](int st) { return sGroup + uint32_t(st) * Layout::kStageBytes; };
    auto issue_qk = [&](int64_t b, int st, bool tail) {
        const uint32_t tq = stage_q(st);
        cp.copy<kTileM>(tq, q_base + b * p.q.batch_stride, static_cast<int>(p.q.row_stride), row0, N, q_base);
        cp.copy<kKeys>(tq + Layout::kQBytes, k_base + b * p.k.batch_stride, static_cast<int>(p.k.row_stride), 0, N, k_base);
        if constexpr (kFold) {
            if (tail) cp.copy<16>(sQTail, q_base + b * p.q.batch_stride, static_cast<int>(p.q.row_stride), tail_row0, N, q_base);
        }
    };
    auto issue_v = [&](int64_t b, int st) {
        cp.copy<kKeys>(stage_q(st) + Layout::kQBytes + Layout::kKBytes, v_base + b * p.v.batch_stride,
                       static_cast<int>(p.v.row_stride), 0, N, v_base);
    };


    // With the bm build possibly still running (FwdParams::bm_pdl: this grid is then its
    // programmatic dependent; griddepcontrol.wait returns once the build is complete and visible),
    // at Npad = 64 the first window's q / k / v copies go out before the wait, as they do not
    // depend on it. (At Npad >= 128 after the strip: issued here, their addresses stayed live across
    // the strip's loop and the main loop spilled 44 instead of 12-20 bytes.)
    if constexpr (kDouble) {
        if (n_win > 0) {
            issue_qk(window_of(0), 0, false);
            issue_v(window_of(0), 0);
        }
        cp_async_commit();
    }
    pdl_wait();
    // the row-tail kernel (launched after this grid as its programmatic dependent, if at all) may
    // start once every CTA is here: past the bm build
    pdl_launch_dependents();

    // The strip: rows row0 .. row0 + 63 of the padded bias+mask slice (all Npad = kKeys columns,
    // from bm or from the bias and mask: load_fwd_strip), loaded by the CTA; without bias and mask,
    // 0 for the keys < N and -inf for the padded ones, so that one
    // softmax serves every mode (with a variant per mode, their register assignments of S were
    // merged after the softmax with ~400 moves per window; with a loop per mode the registers
    // spilled: session 18 runs 5-6). V1 likewise uses key factors of 1.
    load_fwd_strip<kKeys, kTileM, Layout::kStripCols, Layout::kBmPitch>(sBm, p, h, w, row0, N, threadIdx.x,
                                                                         kFwdWgThreads * groups);
    if (fold)   // the tail rows' (rows 64..79 of the strip)
        load_fwd_strip<kKeys, 16, Layout::kStripCols, Layout::kBmPitch>(sBm + kTileM * Layout::kBmPitch, p, h, w, tail_row0, N,
                                                                        threadIdx.x, kFwdWgThreads * groups);
    if (has_bm) {
        cp_async_commit();
        cp_async_wait<0>();   // (at Npad = 64 also the first window's copies, issued above)
    }
    if (!cosine)
        for (int c = threadIdx.x % kFwdWgThreads; c < kKeys; c += kFwdWgThreads) kinv[c] = 1.f;
    if (threadIdx.x < Layout::kOnesBytes / 16) {
        const uint32_t one2 = Tr::pack(1.f, 1.f);
        *reinterpret_cast<uint4*>(smem_raw + (sOnes - raw) + threadIdx.x * 16) = make_uint4(one2, one2, one2, one2);
        fence_proxy_async_smem();   // read by wgmma (the async proxy)
    }
    __syncthreads();
    // The fixed shifts (kFwdFixedMaxShift): row max of the strip (2 threads per row), m_i into
    // sRowMax, the strip's row less m_i in place. A row whose strip is all -inf (or -inf and NaN)
    // keeps its strip and m_i = -inf: P = 0 (or NaN), as with the running maximum.
    // (false at compile time outside fwd_wgmma_fixed_form: the branches on it fold away)
    const bool fixed_max = fwd_wgmma_fixed_form<Element, kKeys>() && cosine && 2.f * alpha * kLog2e <= kFwdFixedMaxShift;
    float* sRowMax = reinterpret_cast<float*>(smem_raw + (base + Layout::row_max_offset(groups) - raw));
    if (fixed_max) {
        if (threadIdx.x < 2 * kTileM) {
            constexpr int kHalf = kKeys / 2;
            float* row = sBm + (threadIdx.x >> 1) * Layout::kBmPitch + (threadIdx.x & 1) * kHalf;
            float m = -INFINITY;
#pragma unroll 8
            for (int c = 0; c < kHalf; c += 4) {
                const float4 v = *reinterpret_cast<const float4*>(row + c);
                m = fmaxf(m, fmaxf(fmaxf(v.x, v.y), fmaxf(v.z, v.w)));
            }
            m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, 1));
            const float m_fix = m == -INFINITY ? -INFINITY : m + alpha * kLog2e;
            if ((threadIdx.x & 1) == 0) sRowMax[threadIdx.x >> 1] = m_fix;
            if (m_fix != -INFINITY) {
#pragma unroll 8
                for (int c = 0; c < kHalf; c += 4) {
                    float4 v = *reinterpret_cast<const float4*>(row + c);
                    v.x -= m_fix;
                    v.y -= m_fix;
                    v.z -= m_fix;
                    v.w -= m_fix;
                    *reinterpret_cast<float4*>(row + c) = v;
                }
            }
        }
        __syncthreads();
    }
    if (n_win <= 0) return;
    if constexpr (!kDouble) {
        issue_qk(window_of(0), 0, tail_window(0));
        cp_async_commit();
        issue_v(window_of(0), 0);
        cp_async_commit();
    }

    // Stage 0's wgmma descriptors (q and k: k16 step 0; [v | 1]: keys 0..15); every other one is
    // an offset from these (wgmma_desc_add).
    const uint64_t desc_q0 = fwd_wg_kmajor_desc<kHeadDim>(stage_q(0));
    const uint64_t desc_v0 = fwd_wg_v_desc<kHeadDim>(stage_q(0) + Layout::kQBytes + Layout::kKBytes, sOnes);

    for (int ti = 0; ti < n_win; ++ti) {
        const int64_t b = window_of(ti);
        const int st = kDouble ? (ti & 1) : 0;
        const uint32_t st_off = uint32_t(st) * Layout::kStageBytes;
        const uint64_t dQ = wgmma_desc_add(desc_q0, st_off);
        const uint64_t dK = wgmma_desc_add(desc_q0, st_off + Layout::kQBytes);
        const uint64_t dV = fwd_wg_v_desc_add(desc_v0, st_off);
        // q / k operand of k16 step ks at `off` bytes into the tile
        auto q_desc = [&](int ks) { return wgmma_desc_add(dQ, uint32_t(ks) * 32u); };
        auto k_desc = [&](uint32_t off, int ks) { return wgmma_desc_add(dK, off + uint32_t(ks) * 32u); };
        if constexpr (kDouble) {
            cp_async_wait<0>();   // this window's q, k and v landed
            fence_proxy_async_smem();
            // every warp's copies are visible, and every warp is done with window ti - 1 (the
            // other stage): the next window's copies may go there
            group_sync(group);
            if (ti + 1 < n_win) {
                issue_qk(window_of(ti + 1), st ^ 1, false);
                issue_v(window_of(ti + 1), st ^ 1);
            }
            cp_async_commit();
        } else {
            cp_async_wait<1>();   // this window's q and k landed (its v may be in flight)
            fence_proxy_async_smem();
            group_sync(group);
        }

        // The row factors (log2(e) folded in) and, for V2, the inverse norms of the rows and keys
        // (fp32 sums of exact squares, in a fixed order per instantiation), before the window's
        // first S.
        float row_factor[2];
        if (cosine) {
            if constexpr (kHeadDim == 32) {
                // On the CUDA cores (session 63): each thread sums the squares of a quarter of its
                // two rows (the quad's partial sums added by shuffles) and of half of one key per
                // 64-key block (the pair's added), then one barrier. Against the tensor-core
                // diagonals below (10 wgmma at Npad 256 in two waited batches): forward kernel
                // 2-4.5 % faster at N = 49-256, fp16 and bf16 (H200, run G). (Key blocks 1.. inside
                // the block loop instead, while P v and the next S run: spills at Npad 256, 3-4 %
                // slower there (run F); at head dim 64 the CUDA-core sums were 13 % slower.)
                float ss[2] = {0.f, 0.f};
                const unsigned char* tq = smem_raw + (stage_q(st) - raw);
#pragma unroll
                for (int r = 0; r < 2; ++r) {
                    ss[r] = chunk_sumsq<Element>(*reinterpret_cast<const uint4*>(tq + sw64_offset(warp * 16 + g + 8 * r, t4)), 0.f);
                    ss[r] += __shfl_xor_sync(0xffffffffu, ss[r], 1);
                    ss[r] += __shfl_xor_sync(0xffffffffu, ss[r], 2);
                }
                const float qinv[2] = {inv_norm_from_sumsq_fast(ss[0]), inv_norm_from_sumsq_fast(ss[1])};
                row_factor[0] = alpha * kLog2e * qinv[0];
                row_factor[1] = alpha * kLog2e * qinv[1];
                if (t4 == 0) {
                    kinv[kKeys + warp * 16 + g] = qinv[0];
                    kinv[kKeys + warp * 16 + g + 8] = qinv[1];
                }
                // keys kb 64 + tid / 2, chunks 2 (tid & 1) and 2 (tid & 1) + 1 (keys >= N are zero
                // rows: 1 / eps, never used, their bias+mask -inf and S 0)
                const unsigned char* tk = tq + Layout::kQBytes;
                float ks[kKeys / 64];
#pragma unroll
                for (int kb = 0; kb < kKeys / 64; ++kb) {
                    const int key = kb * 64 + (tid >> 1);
                    ks[kb] = chunk_sumsq<Element>(*reinterpret_cast<const uint4*>(tk + sw64_offset(key, 2 * (tid & 1))), 0.f);
                    ks[kb] = chunk_sumsq<Element>(*reinterpret_cast<const uint4*>(tk + sw64_offset(key, 2 * (tid & 1) + 1)), ks[kb]);
                }
#pragma unroll
                for (int kb = 0; kb < kKeys / 64; ++kb) {
                    ks[kb] += __shfl_xor_sync(0xffffffffu, ks[kb], 1);
                    if ((tid & 1) == 0) kinv[kb * 64 + (tid >> 1)] = inv_norm_from_sumsq_fast(ks[kb]);
                }
                group_sync(group);   // every key's inverse norm is in shared memory
            } else {
                // Row warp * 16 + g of a 64 x 64 block's accumulators: its diagonal element is in n8
                // tile 2 warp, column g, held by lane t4 == g / 2 (element g % 2); row + 8's in tile
                // 2 warp + 1 (element 2 + g % 2).
                // (the last key block's product covers its first kTail keys: warps w4 < kTail / 16)
                constexpr int kKB = kKeys / 64;   // 64-key blocks
                auto block_warps = [](int block) { return block == kKB - 1 ? kTail / 16 : 4; };
                auto diag = [&](const float (&acc)[8][4], float& lo, float& hi, int warps) {
                    lo = hi = 0.f;
#pragma unroll
                    for (int w4 = 0; w4 < 4; ++w4)
                        if (w4 < warps && warp == w4) {
                            lo = (g & 1) ? acc[2 * w4][1] : acc[2 * w4][0];
                            hi = (g & 1) ? acc[2 * w4 + 1][3] : acc[2 * w4 + 1][2];
                        }
                };
                const bool holder = t4 == (g >> 1);
                auto store_kinv = [&](const float (&acc)[8][4], int block) {
                    float lo, hi;
                    diag(acc, lo, hi, block_warps(block));
                    if (holder && warp < block_warps(block)) {
                        kinv[block * 64 + warp * 16 + g] = inv_norm_from_sumsq_fast(lo);
                        kinv[block * 64 + warp * 16 + g + 8] = inv_norm_from_sumsq_fast(hi);
                    }
                };
                // k kᵀ of key block `block`, k16 step ks (the last block: its first kTail columns)
                auto kk_block = [&](float (&acc)[8][4], int block, int ks) {
                    const uint32_t off = uint32_t(block) * 64u * kRowBytes;
                    if (kTail != 64 && block == kKB - 1)
                        wgmma_s<Element, kTail>(*reinterpret_cast<float (*)[kTail / 8][4]>(&acc[0][0]), k_desc(off, ks),
                                                k_desc(off, ks), ks > 0);
                    else
                        wgmma_s<Element, 64>(acc, k_desc(off, ks), k_desc(off, ks), ks > 0);
                };
                {
                    float dq[8][4], dk0[8][4], dk1[8][4];
                    wgmma_fence();
#pragma unroll
                    for (int ks = 0; ks < kKSteps; ++ks) {
                        wgmma_s<Element, 64>(dq, q_desc(ks), q_desc(ks), ks > 0);
                        kk_block(dk0, 0, ks);
                        if constexpr (kKB > 1) kk_block(dk1, 1, ks);
                    }
                    wgmma_commit();
                    wgmma_wait<0>();
                    wgmma_fence_operand(dq);
                    wgmma_fence_operand(dk0);
                    if constexpr (kKB > 1) wgmma_fence_operand(dk1);
                    float lo, hi;
                    diag(dq, lo, hi, 4);
                    const int src = (lane & ~3) | (g >> 1);
                    lo = __shfl_sync(0xffffffffu, lo, src);
                    hi = __shfl_sync(0xffffffffu, hi, src);
                    const float qinv[2] = {inv_norm_from_sumsq_fast(lo), inv_norm_from_sumsq_fast(hi)};
                    row_factor[0] = alpha * kLog2e * qinv[0];
                    row_factor[1] = alpha * kLog2e * qinv[1];
                    // for the qk_inv_norm store below (through shared memory: stored from here they
                    // made the kernel spill)
                    if (t4 == 0) {
                        kinv[kKeys + warp * 16 + g] = qinv[0];
                        kinv[kKeys + warp * 16 + g + 8] = qinv[1];
                    }
                    store_kinv(dk0, 0);
                    if constexpr (kKB > 1) store_kinv(dk1, 1);
                }
                if constexpr (kKB > 2) {
                    float dk2[8][4], dk3[8][4];
                    wgmma_fence();
#pragma unroll
                    for (int ks = 0; ks < kKSteps; ++ks) {
                        kk_block(dk2, 2, ks);
                        if constexpr (kKB > 3) kk_block(dk3, 3, ks);
                    }
                    wgmma_commit();
                    wgmma_wait<0>();
                    wgmma_fence_operand(dk2);
                    store_kinv(dk2, 2);
                    if constexpr (kKB > 3) {
                        wgmma_fence_operand(dk3);
                        store_kinv(dk3, 3);
                    }
                }
                group_sync(group);   // every key's inverse norm is in shared memory
            }
            // the op's qk_inv_norm (FwdParams): the rows' and, from the CTAs of the first query
            // block, the keys'
            if (p.q_inv_norm != nullptr) {
                float* qn = p.q_inv_norm + (b * p.H + h) * N;
                if (tid < kTileM && row0 + tid < N) qn[row0 + tid] = kinv[kKeys + tid];
                if (m_block == 0) {
                    float* kn = p.k_inv_norm + (b * p.H + h) * N;
                    // (not unrolled: unrolled 4x, its copies made the bf16 Npad 256 kernels with
                    // a 16- or 32-key last block spill 76 instead of 12 bytes)
#pragma unroll 1
                    for (int c = tid; c < N; c += kFwdWgThreads) kn[c] = kinv[c];
                }
            }
        } else {
            row_factor[0] = row_factor[1] = alpha * kLog2e;
        }
        // The keys in kTiles blocks of kBN, an online softmax across the blocks. m_run: the row
        // max so far (log2 units).
        // o = P [v | 1]: the 8 columns after the head dim (o[kONT - 1]) are the row sums of P as
        // packed to 16 bits, the P that multiplies v (the tensor cores add them: 64 FADD per thread
        // and block less).
        float o[kONT][4];
#pragma unroll
        for (int i = 0; i < kONT; ++i) o[i][0] = o[i][1] = o[i][2] = o[i][3] = 0.f;
        // (fixed_max: the rows' fixed shifts, for the lse; kept in registers across the window
        // loop, 2 more live values made ptxas spill ~5x more at Npad 256)
        float m_run[2] = {-INFINITY, -INFINITY};
        if (fixed_max) {
            m_run[0] = sRowMax[warp * 16 + g];
            m_run[1] = sRowMax[warp * 16 + g + 8];
        }
        // The folded row tail's state: this warp's P (packed) and row max, its o and row sums.
        const bool tail = tail_window(ti);
        // S of block kt + 1 is issued before block kt's softmax (its accumulators are the other
        // buffer of sb), so the tensor cores compute it while the softmax runs; P v of block kt
        // completes with it at the top of the next block.
        float sb[2][kNT][4];
        auto issue_s = [&](float (&acc)[kNT][4], int kt) {
            wgmma_fence();
            if (kTail != kBN && kt == kTiles - 1) {
                // the first kTailNT n8 tiles of the accumulator
                float (&acc_t)[kTailNT][4] = *reinterpret_cast<float (*)[kTailNT][4]>(&acc[0][0]);
#pragma unroll
                for (int ks = 0; ks < kKSteps; ++ks)
                    wgmma_s<Element, kTail>(acc_t, q_desc(ks), k_desc(uint32_t(kt * kBN) * kRowBytes, ks), ks > 0);
            } else {
#pragma unroll
                for (int ks = 0; ks < kKSteps; ++ks)
                    wgmma_s<Element, kBN>(acc, q_desc(ks), k_desc(uint32_t(kt * kBN) * kRowBytes, ks), ks > 0);
            }
            wgmma_commit();
        };
        issue_s(sb[0], 0);
#pragma unroll
        for (int kt = 0; kt < kTiles; ++kt) {
            float (&s)[kNT][4] = sb[kt & 1];
            wgmma_wait<0>();   // S of block kt and P v of block kt - 1
            wgmma_fence_operand(s);
            wgmma_fence_operand(o);
            if (kt == kTiles - 1) {
                if constexpr (!kDouble) {
                    if constexpr (kFold) {
                        if (tail) {
                            // the tail rows: P from q's tail tile and k (the key factors from
                            // kinv), P v; the warps' parts meet in the k tile (its S all done)
                            const RowTailWarp<Element, kFoldMaxBlocks> rw(warp, lane, N);
                            const uint32_t sK = stage_q(0) + Layout::kQBytes;
                            float* const sPart = reinterpret_cast<float*>(smem_raw + (sK - raw));
                            static_assert(kRowTailWarps * 16 * kRowTailPitch * sizeof(float) <= Layout::kKBytes,
                                          "the tail's parts fit the k tile");
                            float tail_o[4][4], tail_l[4], tail_m[2];
                            {
                                uint32_t qa[2][4];
                                float tail_factor[2], qinv[2], ts[2 * kFoldMaxBlocks][4];
                                rw.load_q(sQTail, cosine, alpha, qa, tail_factor, qinv);
                                if (cosine && warp == 0 && t4 == 0 && p.q_inv_norm != nullptr)
                                    fwd_store_row_pair(p.q_inv_norm + (b * p.H + h) * N, tail_row0 + g, N, qinv);
                                rw.template logits<Layout::kBmPitch, true>(sK, qa, tail_factor, cosine, kinv,
                                                                           sBm + kTileM * Layout::kBmPitch, ts, tail_m);
                                rw.pv(sK + Layout::kKBytes, ts, tail_m, tail_o, tail_l);
                            }
                            group_sync(group);   // every warp is done with k
                            rw.store_part(sPart + warp * 16 * kRowTailPitch, tail_o, tail_m, tail_l);
                            group_sync(group);   // every part is written
                            row_tail_combine_store<Element>(sPart, p, b, h, tail_row0, tid);
                        }
                    }
                    group_sync(group);   // every warp's last S is done: q and k may be overwritten
                    if (ti + 1 < n_win) issue_qk(window_of(ti + 1), 0, tail_window(ti + 1));
                    cp_async_commit();
                }
            } else {
                issue_s(sb[(kt + 1) & 1], kt + 1);
            }

            // Logits (log2 units) of this thread's two rows, side by side (each key factor read
            // once: looped per row, the compiler kept the first row's factors live and spilled).
            const float* bm_row0 = sBm + (warp * 16 + g) * Layout::kBmPitch + kt * kBN + 2 * t4;
            const float* bm_row1 = bm_row0 + 8 * Layout::kBmPitch;
            const float* kinv_t = kinv + kt * kBN + 2 * t4;
            // one branch per block, uniform over the CTA (two copies of the window loop, one per form,
            // made ptxas spill ~10x more at Npad 256; one logit loop for both forms before the
            // branch, 124 instead of 56 spill-store bytes: hence the loop in each branch)
            if (fixed_max) {
                // P = exp2(S - m_i) with the strip already less m_i
#pragma unroll
                for (int nt = 0; nt < block_nt(kt); ++nt) {
                    const float2 kf = *reinterpret_cast<const float2*>(kinv_t + nt * 8);
                    const float2 b0 = *reinterpret_cast<const float2*>(bm_row0 + nt * 8);
                    const float2 b1 = *reinterpret_cast<const float2*>(bm_row1 + nt * 8);
                    s[nt][0] = fast_exp2(fmaf(s[nt][0] * row_factor[0], kf.x, b0.x));
                    s[nt][1] = fast_exp2(fmaf(s[nt][1] * row_factor[0], kf.y, b0.y));
                    s[nt][2] = fast_exp2(fmaf(s[nt][2] * row_factor[1], kf.x, b1.x));
                    s[nt][3] = fast_exp2(fmaf(s[nt][3] * row_factor[1], kf.y, b1.y));
                }
            } else {
                float mx[2][2] = {{-INFINITY, -INFINITY}, {-INFINITY, -INFINITY}};   // [row][n8 tile parity]
#pragma unroll
                for (int nt = 0; nt < block_nt(kt); ++nt) {
                    const float2 kf = *reinterpret_cast<const float2*>(kinv_t + nt * 8);
                    const float2 b0 = *reinterpret_cast<const float2*>(bm_row0 + nt * 8);
                    const float2 b1 = *reinterpret_cast<const float2*>(bm_row1 + nt * 8);
                    s[nt][0] = fmaf(s[nt][0] * row_factor[0], kf.x, b0.x);
                    s[nt][1] = fmaf(s[nt][1] * row_factor[0], kf.y, b0.y);
                    s[nt][2] = fmaf(s[nt][2] * row_factor[1], kf.x, b1.x);
                    s[nt][3] = fmaf(s[nt][3] * row_factor[1], kf.y, b1.y);
                    mx[0][nt & 1] = fmaxf(mx[0][nt & 1], fmaxf(s[nt][0], s[nt][1]));
                    mx[1][nt & 1] = fmaxf(mx[1][nt & 1], fmaxf(s[nt][2], s[nt][3]));
                }
                float m_use[2];
#pragma unroll
                for (int r = 0; r < 2; ++r) {
                    const float m_new = fmaxf(m_run[r], quad_max(fmaxf(mx[r][0], mx[r][1])));
                    m_use[r] = m_new == -INFINITY ? 0.f : m_new;   // a row of -inf so far: P = 0, not NaN
                    if (kt > 0) {
                        const float corr = fast_exp2(m_run[r] - m_use[r]);   // exp2(-inf) = 0
#pragma unroll
                        for (int i = 0; i < kONT; ++i) {
                            o[i][2 * r] *= corr;
                            o[i][2 * r + 1] *= corr;
                        }
                    }
                    m_run[r] = m_new;
                }
#pragma unroll
                for (int nt = 0; nt < block_nt(kt); ++nt)
#pragma unroll
                    for (int e = 0; e < 4; ++e) s[nt][e] = fast_exp2(s[nt][e] - m_use[e >> 1]);
            }   // online softmax

            // P as the register A operand: k16 step kk covers S's n8 tiles 2 kk and 2 kk + 1.
            uint32_t a[kKK][4];
#pragma unroll
            for (int kk = 0; kk < block_kk(kt); ++kk) {
                a[kk][0] = Tr::pack(s[2 * kk][0], s[2 * kk][1]);
                a[kk][1] = Tr::pack(s[2 * kk][2], s[2 * kk][3]);
                a[kk][2] = Tr::pack(s[2 * kk + 1][0], s[2 * kk + 1][1]);
                a[kk][3] = Tr::pack(s[2 * kk + 1][2], s[2 * kk + 1][3]);
            }
            if (!kDouble && kt == 0) {
                // this window's v landed (the only copy in flight: the next q and k are issued
                // after the last block's S, kTiles >= 2)
                static_assert(kDouble || kTiles >= 2, "the copy groups assume the next q, k follow the first P v");
                cp_async_wait<0>();
                fence_proxy_async_smem();
                group_sync(group);
            }
            wgmma_fence();
#pragma unroll
            for (int kk = 0; kk < block_kk(kt); ++kk)
                wgmma_pv<Element, kHeadDim + 8>(o, a[kk], fwd_wg_v_desc_add(dV, uint32_t(kt * kBN + kk * 16) * kRowBytes), 1);
            wgmma_commit();
        }
        wgmma_wait<0>();   // the last P v
        wgmma_fence_operand(o);
        if constexpr (!kDouble) {
            group_sync(group);   // every warp's P v is done: v may be overwritten
            if (ti + 1 < n_win) issue_v(window_of(ti + 1), 0);
            cp_async_commit();
        }

        float inv_l[2], lse2[2];
#pragma unroll
        for (int r = 0; r < 2; ++r) {
            const float l = o[kONT - 1][2 * r];   // every column of the last n8 tile holds the row sum
            // l == 0: every logit of the row is -inf -> out 0, lse +inf. NaN propagates.
            inv_l[r] = l == 0.f ? 0.f : fast_rcp(l);
            lse2[r] = l == 0.f ? INFINITY : (m_run[r] == -INFINITY ? 0.f : m_run[r]) + fast_log2(l);
        }

        Element* out = static_cast<Element*>(p.out.ptr) + b * p.out.batch_stride + h * p.out.head_stride;
#pragma unroll
        for (int r = 0; r < 2; ++r) {
            const int row = row0 + warp * 16 + g + 8 * r;
            if (row < N) {
                if (t4 == 0) p.lse[(b * p.H + h) * N + row] = lse2[r] * kLn2;
#pragma unroll
                for (int i = 0; i < kHeadDim / 8; ++i)
                    if (i * 8 < d)
                        *reinterpret_cast<uint32_t*>(out + int64_t(row) * p.out.row_stride + i * 8 + 2 * t4) =
                            Tr::pack(o[i][2 * r] * inv_l[r], o[i][2 * r + 1] * inv_l[r]);
            }
        }
    }
#else
    __trap();
#endif
}

// Warpgroups per CTA of the wgmma forward: FWA_FWD_WG=<1..4> (tuning experiments, tests) or the plan.
inline int fwd_wgmma_forced_groups() {
    static const int forced = [] {
        const char* e = std::getenv("FWA_FWD_WG");
        return e != nullptr && e[0] >= '1' && e[0] <= '0' + kFwdWgMaxGroups && e[1] == '\0' ? e[0] - '0' : 0;
    }();
    return forced;
}

// The rows of the last query block where it holds at most 16 rows of data and is not the only one,
// below Npad 256 (N in 65..80, 129..144), leave the warpgroups' m64 tiles (unless
// FWA_WINDOW_ROW_TAIL=0): the main grid's CTAs take them in the folded form (fwd_wgmma_fold_form,
// fwd_wgmma_fold_row_tail), the row-tail kernel (fwd_row_tail_cta) otherwise.
inline bool fwd_wgmma_row_tail(int N) {
    static const bool on = env_switch_on("FWA_WINDOW_ROW_TAIL");
    // (not at Npad 256: N = 196 ran 98.4 -> 105.1 us, fp16, session 32 run B; its 4 rows cost less
    // on the warpgroup than k and v copied again)
    return on && N > kTileM && N <= 192 && N - (N - 1) / kTileM * kTileM <= 16;
}

// The row-tail kernel's launch (fwd_row_tail_cta), right after the main grid: `p` as planned for the
// main grid (num_m_blocks its query blocks). n_chunks CTAs per (head, bm window), about one CTA per
// slot of the device in all; each walks every n_chunks-th window (n_chunks as windows split into
// chunks of p.chunk).
template <typename Element, int kKeys, int kTail>
cudaError_t launch_fwd_row_tail(const FwdParams& main_plan, cudaStream_t stream) {
    using Layout = FwdWgmmaLayout<kKeys>;
    constexpr auto kKernel = window_attn_fwd_row_tail_kernel<Element, kKeys, kTail>;
    const size_t smem = Layout::row_tail_bytes(kKeys - 64 + kTail);
    int ctas = 0;
    cudaError_t err = prepare_kernel<kKernel>(smem, kRowTailWarps * 32, &ctas);
    if (err != cudaSuccess) return err;
    FwdParams p = main_plan;
    const int64_t nB = p.B / p.nW, hw = int64_t(p.H) * p.nW;
    const int64_t n = std::min<int64_t>(nB, std::max<int64_t>(1, int64_t(num_sms()) * std::max(ctas, 1) / hw));
    p.chunk = static_cast<int>((nB + n - 1) / n);
    p.n_chunks = static_cast<int>((nB + p.chunk - 1) / p.chunk);
    cudaLaunchAttribute attr;
    const cudaLaunchConfig_t cfg = launch_config(dim3(static_cast<unsigned>(hw * p.n_chunks)), dim3(kRowTailWarps * 32),
                                                 smem, stream, window_pdl_enabled(), attr);
    return cudaLaunchKernelEx(&cfg, kKernel, p);
}

// The main grid takes the row tail's rows itself (the folded row tail, where fwd_wgmma_fold_form
// holds), unless FWA_WINDOW_ROW_TAIL_FOLD=0 (the row-tail kernel then: A/B timing, tests).
inline bool fwd_wgmma_fold_row_tail() {
    static const bool on = env_switch_on("FWA_WINDOW_ROW_TAIL_FOLD");
    return on;
}

template <typename Element, int kKeys, int kTail, int kHeadDim = 32>
cudaError_t launch_fwd_wgmma(const FwdParams& params, cudaStream_t stream) {
    constexpr bool kFold = fwd_wgmma_fold_form<kKeys, kTail, kHeadDim>();
    using Layout = FwdWgmmaLayout<kKeys, kHeadDim, kFold>;
    constexpr auto kKernel = window_attn_fwd_wgmma_kernel<Element, kKeys, kTail, kHeadDim>;
    FwdParams p = params;
    // The plan (warpgroups per CTA, CTAs per SM): the most warpgroups per SM, then fewer per CTA
    // (independent CTAs balance better). It depends on the device only (the strip is there with or
    // without bias and mask): cached per device.
    static std::atomic<int> cache[kMaxDevices] = {};   // (per instantiation)
    std::atomic<int>& slot = cache[current_device()];
    int groups = 0, ctas = 0;
    const int forced = fwd_wgmma_forced_groups();
    const int e = slot.load(std::memory_order_relaxed);
    if (forced == 0 && e != 0) {
        groups = e & 7;
        ctas = e >> 3;
    } else {
        int best = -1;
        for (int gr = 1; gr <= kFwdWgMaxGroups; ++gr) {
            if (forced != 0 && gr != forced) continue;
            int c = 0;
            cudaError_t err = prepare_kernel<kKernel>(Layout::bytes(gr), kFwdWgThreads * gr, &c);
            if (err == cudaErrorInvalidValue) continue;   // does not fit the device's shared memory
            if (err != cudaSuccess) return err;
            if (c * gr > best) {
                best = c * gr;
                groups = gr;
                ctas = c;
            }
        }
        if (best <= 0) return cudaErrorInvalidConfiguration;
        if (forced == 0) slot.store(groups | (ctas << 3), std::memory_order_relaxed);
    }
    p.groups = groups;
    // (the row-tail kernel exists where fwd_wgmma_row_tail can hold: Npad 128 and 192, the last key
    // block 16 keys wide, or 64 where FWA_WINDOW_WGMMA_TAIL=0; at Npad 192 with the 16-key block
    // the main grid takes the rows itself unless FWA_WINDOW_ROW_TAIL_FOLD=0)
    constexpr bool kRowTailForm = kHeadDim == 32 && (kKeys == 128 || kKeys == 192) && (kTail == 16 || kTail == 64);
    const bool row_tail = kRowTailForm && fwd_wgmma_row_tail(p.N);
    if (row_tail) {
        // the main grid: planned as for the rows of its query blocks
        FwdParams rows = p;
        rows.N = (p.N - 1) / kTileM * kTileM;
        window_attn_plan_chunks_balanced(rows, num_sms(), ctas, groups);
        p.num_m_blocks = rows.num_m_blocks;
        p.chunk = rows.chunk;
        p.n_chunks = rows.n_chunks;
        p.fold_row_tail = kFold && fwd_wgmma_fold_row_tail();
    } else {
        window_attn_plan_chunks_balanced(p, num_sms(), ctas, groups);
    }
    const int64_t grid = int64_t(p.num_m_blocks) * p.H * p.nW * p.n_chunks;
    if (grid == 0) return cudaSuccess;
    // Right after the bm build (FwdParams::bm_pdl): a programmatic dependent launch, so the grid's
    // launch and its first copies overlap the build (the kernel waits on it before the strip).
    cudaLaunchAttribute attr;
    const cudaLaunchConfig_t cfg = launch_config(dim3(static_cast<unsigned>(grid)), dim3(kFwdWgThreads * groups),
                                                 Layout::bytes(groups), stream, p.bm_pdl && window_pdl_enabled(), attr);
    const cudaError_t err = cudaLaunchKernelEx(&cfg, kKernel, p);
    if constexpr (kRowTailForm) {
        if (err == cudaSuccess && row_tail && !p.fold_row_tail) return launch_fwd_row_tail<Element, kKeys, kTail>(p, stream);
    }
    return err;
}

}  // namespace fwa
