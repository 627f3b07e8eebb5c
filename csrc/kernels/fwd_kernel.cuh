// Window-attention forward, fp16/bf16 on tensor cores (mma.sync m16n8k16, fp32 accumulation).
//
//   S = f(q kᵀ) + bm, P = softmax(S) (fp32, online over 64-key tiles), out = P v, lse = log Σ exp S
//
// Work split: a CTA owns one (query block of 64 rows, head h, bm window w) and a chunk of the
// windows b = w + nW * t that share the same bias+mask slice. The CTA is 1 to fwd_max_groups()
// groups of 4 warps (128 threads); group g takes the chunk's windows g, g + groups, ... and walks
// their (window, key tile) items through its own cp.async pipeline of 2-4 stages, synchronised by
// its own named barrier. The bias+mask slice is either held for the whole CTA as a strip of its 64
// rows, shared by all groups (read from L2 once per CTA instead of once per window and key tile: at
// N = 256 that slice is 5x the window's q, k and v bytes), or streamed as one 64x64 tile per stage
// (one group). The launcher picks the placement, groups and depth that give the most warps per SM
// (the kernel is latency bound), preferring the strip, then more CTAs, then more stages
// (FWA_FWD_CONFIG="mode,stages[,groups]" overrides it for tuning experiments); except at d <= 32
// and N <= 64 without dropout, where the one-group kernel's kWide instantiation (3 CTAs per SM
// with up to 168 registers, 2 stages) beats 16 warps per SM at 128 registers. Each warp owns 16
// query rows; a window's q fragments stay in registers for all its key tiles. With attention
// dropout (template parameter) the probabilities are masked after the row sums, before P v.
// For V2 (cosine) the norms are applied as fp32 factors to the raw q kᵀ product: row factors in
// registers, key factors per tile in shared memory; q and k are never re-rounded after
// normalisation. Limits: N <= 1024 (any), d <= kHeadDim (zero-padded to the bucket).
#pragma once
#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <type_traits>

#include "dropout.cuh"
#include "launch_utils.h"
#include "warp_mma.cuh"

namespace fwa {

constexpr int kBmTilePitch = kTileN + 8; // fp32 pitch of a per-stage bm tile (conflict-free float2)
constexpr int kMaxStages = 4;

// Shared-memory layout of the forward, decided at launch: `groups` x `stages` pipeline stages (group
// g's stages first), each holding the q, k, v tiles, the key inverse norms and (bm_mode == kBmTile)
// a 64x64 bm tile, followed (bm_mode == kBmStrip) by the bm strip of the CTA's 64 query rows.
enum BmMode { kBmNone = 0, kBmStrip = 1, kBmTile = 2 };

template <int kHeadDim> struct FwdLayout {
    static constexpr int kTile = TileShape<kHeadDim>::kElems;
    static constexpr size_t kQkvBytes = size_t(3) * kTile * 2;
    static constexpr size_t kKinvBytes = kTileN * sizeof(float);
    static constexpr size_t kBmTileBytes = size_t(kTileM) * kBmTilePitch * sizeof(float);
    static FWA_HOST_DEVICE size_t stage_bytes(int bm_mode) {
        return kQkvBytes + kKinvBytes + (bm_mode == kBmTile ? kBmTileBytes : 0);
    }
    static FWA_HOST_DEVICE size_t strip_bytes(int bm_mode, int Npad) {
        return bm_mode == kBmStrip ? size_t(kTileM) * (Npad + 8) * sizeof(float) : 0;
    }
    static size_t bytes(int bm_mode, int stages, int groups, int Npad) {
        return size_t(groups) * stages * stage_bytes(bm_mode) + strip_bytes(bm_mode, Npad);
    }
};

FWA_DEVICE void cp_async_wait_stages(int stages) {
    // Allow stages - 2 groups in flight: the group of the current item has landed.
    if (stages <= 2) cp_async_wait<0>();
    else if (stages == 3) cp_async_wait<1>();
    else cp_async_wait<2>();
}

// CTAs per SM the register allocation of the one-group kernel must allow (smem permitting).
template <int kHeadDim> constexpr int fwd_min_blocks() { return kHeadDim <= 32 ? 4 : (kHeadDim <= 64 ? 3 : 2); }
// The one-group kernel for N <= 64 at d <= 32 (kWide): 3 CTAs per SM at up to 168 registers (164)
// instead of 4 at 128, with 2 pipeline stages. H100, bf16, session 17 run 8: (4096,3,64) 0.101 ->
// 0.099 ms, V1 (4096,3,49) 0.081 -> 0.078, the rest of N <= 64 unchanged; at N > 64 the same
// allocation was 5-8 % slower for the one-group placements (no bias / mask: 4 CTAs of 128
// registers there), so N > 64 keeps the 128-register instantiation; so does attention dropout
// ((4096,3,49) 0.114-0.115 -> 0.117 ms with it, run 9).
constexpr int kFwdWideMinBlocks = 3;
template <int kHeadDim, bool kDropout> constexpr bool fwd_wide_used(int Npad, int groups) {
    return kHeadDim <= 32 && !kDropout && Npad <= kTileN && groups == 1;
}
// Groups of 4 warps per CTA of the grouped kernel at most: the same register cap (128, 168 and 255
// registers at d = 32, 64, 128).
template <int kHeadDim> constexpr int fwd_max_groups() { return fwd_min_blocks<kHeadDim>(); }

static_assert(kNumThreads == 128, "a group is one warpgroup (group_sync)");

// kGrouped: the CTA is p.groups groups (the strip placement only); otherwise one group, compiled as
// its own kernel (at d = 64 the grouped form's extra registers spilled under the same cap and ran
// the one-group configurations ~10 % slower).
template <typename Element, int kHeadDim, bool kDropout, bool kGrouped, bool kWide = false>
__global__ void __launch_bounds__(kNumThreads * (kGrouped ? fwd_max_groups<kHeadDim>() : 1),
                                  kGrouped ? 1 : (kWide ? kFwdWideMinBlocks : fwd_min_blocks<kHeadDim>()))
window_attn_fwd_kernel(const FwdParams p) {
    using Tr = ElementTraits<Element>;
    using Shape = TileShape<kHeadDim>;
    using Layout = FwdLayout<kHeadDim>;
    constexpr int kTile = Shape::kElems;
    constexpr int kNT = kTileN / 8;       // n8 tiles of S per warp row block
    constexpr int kDT = kHeadDim / 8;     // n8 tiles of O
    constexpr int kKS = kHeadDim / 16;    // k16 steps of q kᵀ

    const int stages = p.stages, groups = kGrouped ? p.groups : 1;
    const int bm_mode = p.bm == nullptr ? kBmNone : p.bm_mode;
    const size_t stage_bytes = Layout::stage_bytes(bm_mode);
    const int group = kGrouped ? threadIdx.x / kNumThreads : 0;
    extern __shared__ __align__(16) unsigned char smem_raw[];
    unsigned char* smem_group = smem_raw + size_t(group) * stages * stage_bytes;
    auto stage_q = [&](int st) { return reinterpret_cast<Element*>(smem_group + st * stage_bytes); };
    auto stage_k = [&](int st) { return stage_q(st) + kTile; };
    auto stage_v = [&](int st) { return stage_q(st) + 2 * kTile; };
    auto stage_kinv = [&](int st) {
        return reinterpret_cast<float*>(smem_group + st * stage_bytes + Layout::kQkvBytes);
    };
    auto stage_bm = [&](int st) {
        return reinterpret_cast<float*>(smem_group + st * stage_bytes + Layout::kQkvBytes + Layout::kKinvBytes);
    };
    float* sBm = reinterpret_cast<float*>(smem_raw + size_t(groups) * stages * stage_bytes);   // strip
    const int bm_pitch = p.Npad + 8;

    const int tid = kGrouped ? threadIdx.x % kNumThreads : threadIdx.x, warp = tid >> 5, lane = tid & 31;
    const int g = lane >> 2, t4 = lane & 3;

    const WindowCtaWork cta = window_cta_work(p);
    const int m_block = cta.m_block, h = cta.h, w = cta.w, t_begin = cta.t_begin, t_end = cta.t_end;
    if (t_begin >= t_end) return;

    const int N = p.N, d = p.d;
    const int row0 = m_block * kTileM;
    const int n_key_tiles = (N + kTileN - 1) / kTileN;
    // This group's windows: t_begin + group + groups * ti for ti < n_win.
    const int n_win = (t_end - t_begin - group + groups - 1) / groups;
    const int n_items = n_win * n_key_tiles;   // n_win >= 0: t_end > t_begin
    const bool cosine = p.logit_scale != nullptr;
    const bool has_bm = bm_mode != kBmNone;
    const float* bm_slice = has_bm ? p.bm + w * p.bm_win_stride + h * p.bm_head_stride : nullptr;
    const float alpha = cosine ? logit_scale_alpha(p.logit_scale, h) : p.scale;
    DropoutState drop{};
    if constexpr (kDropout) drop = load_dropout_state(p.dropout);

    const Element* q_base = static_cast<const Element*>(p.q.ptr) + h * p.q.head_stride;
    const Element* k_base = static_cast<const Element*>(p.k.ptr) + h * p.k.head_stride;
    const Element* v_base = static_cast<const Element*>(p.v.ptr) + h * p.v.head_stride;

    // (b < B fits an int: B is one.)
    const int t_first = t_begin + group;
    auto window_of = [&](int ti) -> int64_t {
        if constexpr (kGrouped) return w + p.nW * (t_first + groups * ti);
        else return w + int64_t(p.nW) * (t_begin + ti);
    };
    // Load cursor: the (window, key tile, stage) of the next item to load, advanced in order, and
    // the global address of this thread's first 16-byte chunk of that item's q (its window's), k
    // and v tiles (the chunk map of load_tile_async: column chunk tid % kCPR, rows tid / kCPR + i *
    // kRowStep). The addresses advance by one key tile per item and to the group's next window after
    // its last key tile (the steps are kernel parameters: FwdParams::k_tile_step ...), so an item's
    // copies cost two 64-bit adds per tensor instead of the window's base, row and chunk offsets
    // derived again for every item (~100 of the ~740 instructions per warp and item at N = 256,
    // d = 32).
    constexpr int kCPR = Shape::kChunksPerRow;
    constexpr int kRowStep = kNumThreads / kCPR;
    constexpr int kIters = kTileM * kCPR / kNumThreads;
    static_assert(kTileM * kCPR % kNumThreads == 0 && kNumThreads % kCPR == 0, "even chunk split");
    const int ld_r = tid / kCPR, ld_c = (tid % kCPR) * 8;
    const bool ld_col_ok = ld_c < d;
    const uint32_t ld_soff = uint32_t((ld_r * Shape::kPitch + ld_c) * sizeof(Element));
    const int64_t thread_off_q = int64_t(ld_r) * p.q.row_stride + ld_c;
    const int64_t thread_off_k = int64_t(ld_r) * p.k.row_stride + ld_c;
    const int64_t thread_off_v = int64_t(ld_r) * p.v.row_stride + ld_c;
    const Element* ld_q = q_base + window_of(0) * p.q.batch_stride + int64_t(row0) * p.q.row_stride + thread_off_q;
    const Element* ld_k = k_base + window_of(0) * p.k.batch_stride + thread_off_k;
    const Element* ld_v = v_base + window_of(0) * p.v.batch_stride + thread_off_v;
    // One tile's chunks from the thread's first chunk address g (rows_left rows of the tile exist;
    // the others and columns >= d are zero-filled, reading nothing: the address is then `src`, the
    // tensor's base, as in load_tile_async).
    auto copy_tile = [&](Element* tile, const Element* g, int64_t row_stride, int rows_left, const Element* src) {
        const uint32_t s = smem_u32(tile) + ld_soff;
        const int64_t g_step = int64_t(kRowStep) * row_stride;
#pragma unroll
        for (int i = 0; i < kIters; ++i) {
            const bool valid = ld_col_ok && ld_r + i * kRowStep < rows_left;
            cp_async_16(s + uint32_t(i * kRowStep * Shape::kPitch * sizeof(Element)), valid ? g + i * g_step : src,
                        valid ? 16 : 0);
        }
    };
    int load_j = 0, load_st = 0;
    auto issue_loads = [&]() {
        const int j = load_j, st = load_st;
        if (++load_st == stages) load_st = 0;
        if (j == 0) copy_tile(stage_q(st), ld_q, p.q.row_stride, N - row0, q_base);
        copy_tile(stage_k(st), ld_k, p.k.row_stride, N - j * kTileN, k_base);
        copy_tile(stage_v(st), ld_v, p.v.row_stride, N - j * kTileN, v_base);
        if (bm_mode == kBmTile)
            load_bm_tile_async(stage_bm(st), kBmTilePitch,
                               bm_slice + int64_t(row0) * p.Npad + j * kTileN, p.Npad, tid);
        if (++load_j == n_key_tiles) {
            load_j = 0;
            ld_k += p.k_wrap;
            ld_v += p.v_wrap;
            ld_q += p.q_wrap;
        } else {
            ld_k += p.k_tile_step;
            ld_v += p.v_tile_step;
        }
    };

    if (bm_mode == kBmStrip) {
        // rows row0 .. row0 + 63 of the padded bm slice, all Npad columns. One group: it lands
        // with the first stage's loads; several: loaded by the whole CTA and visible to every
        // group after the barrier.
        const int chunks_per_row = p.Npad / 4;
        for (int c = threadIdx.x; c < kTileM * chunks_per_row; c += kNumThreads * groups) {
            const int r = c / chunks_per_row, cc = c - r * chunks_per_row;
            cp_async_16(smem_u32(sBm + r * bm_pitch + cc * 4),
                        bm_slice + int64_t(row0 + r) * p.Npad + cc * 4, 16);
        }
        if constexpr (kGrouped) {
            cp_async_commit();
            cp_async_wait<0>();
            __syncthreads();
        }
    }
    for (int st = 0; st < stages - 1; ++st) {
        if (st < n_items) issue_loads();
        cp_async_commit();
    }

    // The window's accumulators: reset here and after each window's epilogue (not at its first
    // item: the compiler turned that into selects executed on every item).
    float o_acc[kDT][4];
    float row_max[2] = {-INFINITY, -INFINITY}, row_sum[2] = {0.f, 0.f}, row_factor[2];
    zero_acc(o_acc);
    // The window's q fragments live in registers from its first item on: the stage that item's
    // q tile was loaded into may receive the next window's q before this window's last key tile.
    uint32_t q_frag[kKS][4];

    int ti = 0, j = 0, stage = 0;   // compute cursor
    for (int item = 0; item < n_items; ++item) {
        cp_async_wait_stages(stages);
        if constexpr (kGrouped) group_sync(group);
        else __syncthreads();
        if (item + stages - 1 < n_items) issue_loads();
        cp_async_commit();

        const Element* tK = stage_k(stage);
        const Element* tV = stage_v(stage);
        float* kinv = stage_kinv(stage);
        const float* bm_tile = stage_bm(stage);
        if constexpr (kGrouped) {   // (the one-group kernel computes them after the S product)
            if (cosine) tile_row_inv_norms<Element, kHeadDim, true>(tK, kinv, tid);
        }

        // S = q kᵀ for this warp's 16 rows and the 64 keys of the tile.
        float s[kNT][4];
        zero_acc(s);
        float ss0 = 0.f, ss1 = 0.f;
        if (j == 0) {
#pragma unroll
            for (int ks = 0; ks < kKS; ++ks) {
                load_a_frag<kHeadDim>(stage_q(stage), warp * 16, ks * 16, lane, q_frag[ks]);
                if (cosine) accumulate_sumsq<Element>(q_frag[ks], ss0, ss1);
            }
        }
#pragma unroll
        for (int ks = 0; ks < kKS; ++ks) {
#pragma unroll
            for (int np = 0; np < kNT / 2; ++np) {
                uint32_t b[4];
                load_b_frag_nk<kHeadDim>(tK, np * 16, ks * 16, lane, b);
                mma_16816<Element>(s[2 * np], q_frag[ks], b[0], b[1]);
                mma_16816<Element>(s[2 * np + 1], q_frag[ks], b[2], b[3]);
            }
        }
        // Key inverse norms of this tile. In the one-group kernel after the products above are
        // issued, whose latency then overlaps this (nothing before the barrier below needs the
        // norms): N = 49 forward 0.086 -> 0.085 ms, bitwise the same (session 16 run 5). The
        // grouped kernel (N > 64 with the strip) ran 2-3 % slower that way and keeps them first.
        if constexpr (!kGrouped) {
            if (cosine) tile_row_inv_norms<Element, kHeadDim, true>(tK, kinv, tid);
        }
        if (j == 0) {
            // log2(e) folded in: the softmax runs on exp2.
            if (cosine) {
                const float qinv[2] = {inv_norm_from_sumsq_fast(quad_sum(ss0)), inv_norm_from_sumsq_fast(quad_sum(ss1))};
                row_factor[0] = alpha * kLog2e * qinv[0];
                row_factor[1] = alpha * kLog2e * qinv[1];
                if (p.q_inv_norm != nullptr && t4 == 0)   // the op's qk_inv_norm (FwdParams)
                    fwd_store_row_pair(p.q_inv_norm + (window_of(ti) * p.H + h) * N, row0 + warp * 16 + g, N, qinv);
            } else {
                row_factor[0] = row_factor[1] = alpha * kLog2e;
            }
        }
        if (cosine) {   // key norms of this tile
            if constexpr (kGrouped) group_sync(group);
            else __syncthreads();
            // the op's qk_inv_norm (FwdParams): the keys' from the CTAs of the first query block
            if (m_block == 0 && p.k_inv_norm != nullptr && tid < kTileN && j * kTileN + tid < N)
                p.k_inv_norm[(window_of(ti) * p.H + h) * N + j * kTileN + tid] = kinv[tid];
        }

        // Logits (log2 units) and the online softmax. Instantiated per (cosine, bias+mask) pair and
        // picked once per item: with the two flags tested per element the compiler kept a branch
        // per element pair in this loop.
        const int key0 = j * kTileN;
        auto softmax_tile = [&](auto cosine_tag, auto bm_tag) {
            constexpr bool kCos = decltype(cosine_tag)::value;
            constexpr bool kBm = decltype(bm_tag)::value;
#pragma unroll
            for (int r = 0; r < 2; ++r) {
                const int row = row0 + warp * 16 + g + 8 * r;
                const float* bm_row = bm_mode == kBmStrip ? sBm + (row - row0) * bm_pitch + key0
                                                          : bm_tile + (row - row0) * kBmTilePitch;
                // Two independent max / sum chains per row (latency, not throughput, limits here).
                float mx_even = -INFINITY, mx_odd = -INFINITY;
#pragma unroll
                for (int nt = 0; nt < kNT; ++nt) {
                    const int c = nt * 8 + 2 * t4;
                    float x0 = s[nt][2 * r] * row_factor[r];
                    float x1 = s[nt][2 * r + 1] * row_factor[r];
                    if constexpr (kCos) {
                        const float2 kf = *reinterpret_cast<const float2*>(kinv + c);
                        x0 *= kf.x;
                        x1 *= kf.y;
                    }
                    if constexpr (kBm) {
                        const float2 bb = *reinterpret_cast<const float2*>(bm_row + c);
                        x0 += bb.x;
                        x1 += bb.y;
                    } else {
                        if (key0 + c >= N) x0 = -INFINITY;
                        if (key0 + c + 1 >= N) x1 = -INFINITY;
                    }
                    s[nt][2 * r] = x0;
                    s[nt][2 * r + 1] = x1;
                    if (nt % 2 == 0) mx_even = fmaxf(mx_even, fmaxf(x0, x1));
                    else mx_odd = fmaxf(mx_odd, fmaxf(x0, x1));
                }
                online_softmax_row(s, o_acc, r, quad_max(fmaxf(mx_even, mx_odd)), row_max[r], row_sum[r]);
            }
        };
        dispatch_flag_pair(cosine, has_bm, softmax_tile);

        // Attention dropout: O accumulates (P o Z) v; the row sums above are of P itself.
        if constexpr (kDropout)
            dropout_apply(s, dropout_keep_bits<kNT>(drop, window_of(ti) * p.H + h, (row0 + warp * 16) >> 4,
                                                    key0 >> 4, lane),
                          drop.scale);

        // O += P v
        warp_mma_pb<kHeadDim>(o_acc, s, nullptr, tV, lane);

        if (j == n_key_tiles - 1) {
            const int64_t b = window_of(ti);
            Element* out = static_cast<Element*>(p.out.ptr) + b * p.out.batch_stride +
                           h * p.out.head_stride;
            // This warp's 16 rows of the current stage's q buffer are free (the window's q
            // fragments were read at its first item, and only that item loads q into a stage):
            // stage O there, then write whole 16-byte row chunks.
            Element* sOut = stage_q(stage) + warp * 16 * Shape::kPitch;
            __syncwarp();   // every lane's ldmatrix reads of these rows are done (racecheck-clean)
#pragma unroll
            for (int r = 0; r < 2; ++r) {
                const int lrow = g + 8 * r;
                const int row = row0 + warp * 16 + lrow;
                const float l = quad_sum(row_sum[r]);
                // l == 0: every logit of the row is -inf -> out 0, lse +inf. NaN propagates.
                // (approximate reciprocal and log2: the row's 16-bit outputs and the lse the
                // backward recomputes P from are unaffected at their precision; ~60 instructions
                // per row less, a tenth of a window's work at N <= 64)
                const float inv = l == 0.f ? 0.f : fast_rcp(l);
                if (row < N && t4 == 0)
                    p.lse[(b * p.H + h) * N + row] =
                        l == 0.f ? INFINITY : (row_max[r] + fast_log2(l)) * kLn2;
#pragma unroll
                for (int i = 0; i < kDT; ++i)
                    *reinterpret_cast<uint32_t*>(sOut + lrow * Shape::kPitch + i * 8 + 2 * t4) =
                        Tr::pack(o_acc[i][2 * r] * inv, o_acc[i][2 * r + 1] * inv);
            }
            __syncwarp();
#pragma unroll
            for (int c = lane; c < 16 * Shape::kChunksPerRow; c += 32) {
                const int lrow = c / Shape::kChunksPerRow, col = (c % Shape::kChunksPerRow) * 8;
                const int row = row0 + warp * 16 + lrow;
                if (row < N && col < d)
                    *reinterpret_cast<uint4*>(out + row * p.out.row_stride + col) =
                        *reinterpret_cast<const uint4*>(sOut + lrow * Shape::kPitch + col);
            }
            zero_acc(o_acc);
            row_max[0] = row_max[1] = -INFINITY;
            row_sum[0] = row_sum[1] = 0.f;
        }
        if (++j == n_key_tiles) { j = 0; ++ti; }
        if (++stage == stages) stage = 0;
    }
}

// A forward launch configuration: bias+mask placement, pipeline depth, groups per CTA, and the
// resulting CTAs per SM and dynamic shared memory.
struct FwdPlan {
    int bm_mode = kBmNone, stages = 2, groups = 1, ctas = 1;
    size_t smem = 0;
};

// The kernel that runs `groups` groups per CTA at this Npad: the grouped one for more than one, the
// one-group kernel otherwise (its kWide instantiation where fwd_wide_used).
template <typename Element, int kHeadDim, bool kDropout>
cudaError_t prepare_fwd_kernel(size_t smem, int groups, int Npad, int* ctas) {
    if (groups > 1)
        return prepare_kernel<window_attn_fwd_kernel<Element, kHeadDim, kDropout, true>>(smem, kNumThreads * groups, ctas);
    if constexpr (kHeadDim <= 32 && !kDropout) {
        if (fwd_wide_used<kHeadDim, kDropout>(Npad, groups))
            return prepare_kernel<window_attn_fwd_kernel<Element, kHeadDim, kDropout, false, true>>(smem, kNumThreads, ctas);
    }
    return prepare_kernel<window_attn_fwd_kernel<Element, kHeadDim, kDropout, false>>(smem, kNumThreads, ctas);
}

// Scores every (placement, groups, depth) that fits: most warps per SM first (the kernel is latency
// bound: measured on H200, 2 stages with more CTAs beat deeper pipelines, e.g. N=576 fwd 0.77 -> 0.57
// ms, and per-stage bm tiles at 3 CTAs beat a 2-CTA strip for N >= 144), then the strip (read once
// per CTA instead of once per tile), then fewer groups per CTA (independent CTAs balance better),
// then deeper pipelines (2 stages for the kWide kernel: 3 were 4 % slower, session 17 run 8). Only
// the strip is shared between groups, so per-stage tiles use one group; at d <= 32 and N <= 64 the
// kWide one-group kernel is planned alone (its 3 CTAs of 4 warps beat a grouped CTA of 16 warps:
// (4096,3,64) 0.099 against 0.107 ms).
template <typename Element, int kHeadDim, bool kDropout>
cudaError_t plan_fwd(int Npad, bool has_bm, FwdPlan* plan) {
    using Layout = FwdLayout<kHeadDim>;
    constexpr int kMaxGroups = fwd_max_groups<kHeadDim>();
    int best_score = -1;
    const int modes[2] = {kBmStrip, kBmTile};
    for (int mode : modes) {
        if (!has_bm && mode == kBmTile) break;
        const int layout_mode = has_bm ? mode : kBmNone;
        const int max_groups = layout_mode == kBmStrip && !fwd_wide_used<kHeadDim, kDropout>(Npad, 1) ? kMaxGroups : 1;
        for (int groups = 1; groups <= max_groups; ++groups) {
            const bool wide = fwd_wide_used<kHeadDim, kDropout>(Npad, groups);
            for (int stages = 2; stages <= kMaxStages; ++stages) {
                const size_t smem = Layout::bytes(layout_mode, stages, groups, Npad);
                if (smem > max_smem_per_block()) break;
                int ctas = 0;
                cudaError_t err = prepare_fwd_kernel<Element, kHeadDim, kDropout>(smem, groups, Npad, &ctas);
                if (err != cudaSuccess) return err;
                const int score = ctas * groups * 4 * 64 + (layout_mode == kBmTile ? 0 : 32) +
                                  (kMaxGroups - groups) * 4 + (wide ? kMaxStages - stages : stages);
                if (score > best_score) {
                    best_score = score;
                    *plan = FwdPlan{layout_mode, stages, groups, ctas, smem};
                }
            }
        }
    }
    return best_score < 0 ? cudaErrorInvalidValue : cudaSuccess;
}

template <typename Element, int kHeadDim, bool kDropout>
cudaError_t launch_fwd_impl(const FwdParams& params, cudaStream_t stream) {
    using Layout = FwdLayout<kHeadDim>;
    constexpr int kMaxGroups = fwd_max_groups<kHeadDim>();
    // Head dim <= 32 and N <= 256, or head dim 33..64 and N <= 128 (128-byte rows), without dropout
    // on sm_90a: the wgmma forward (fwd_wgmma_kernel.cuh; window_fwd_wgmma_shape_ok).
    if constexpr ((kHeadDim == 32 || kHeadDim == 64) && !kDropout) {
        if (window_fwd_wgmma_shape_ok(params) && window_fwd_wgmma_enabled()) {
            // (Npad, last block's keys): one instantiation each, in its own .cu file
            auto keys = [&](auto npad) -> cudaError_t {
                constexpr int kKeys = decltype(npad)::value;
                return dispatch_block_width(fwd_wgmma_tail_keys(params.N, kKeys), [&](auto tail) {
                    constexpr int kTail = decltype(tail)::value;
                    if constexpr (kHeadDim == 32) return run_fwd_wgmma<Element, kKeys, kTail>(params, stream);
                    else return run_fwd_wgmma_hd64<Element, kKeys, kTail>(params, stream);
                });
            };
            if (params.Npad == 64) return keys(std::integral_constant<int, 64>());
            if (kHeadDim == 64 || params.Npad == 128) return keys(std::integral_constant<int, 128>());
            if constexpr (kHeadDim == 32)
                return params.Npad == 192 ? keys(std::integral_constant<int, 192>()) : keys(std::integral_constant<int, 256>());
        }
    }
    FwdParams p = params;
    const bool has_bm = p.bm != nullptr;
    // The plan depends only on (device, Npad, has_bm): cached per instantiation, one 64-bit word per
    // entry (valid bit, mode, stages, groups, CTAs, shared-memory bytes), so a call costs no
    // occupancy queries once its shape was seen (the kernel's shared-memory attribute was raised
    // to at least the plan's size when it was made).
    constexpr int kNpadSlots = 1024 / kTileN + 1;
    static std::atomic<unsigned long long> cache[kMaxDevices][2][kNpadSlots] = {};
    std::atomic<unsigned long long>& slot = cache[current_device()][has_bm ? 1 : 0][p.Npad / kTileN % kNpadSlots];
    FwdPlan plan;
    const unsigned long long e = slot.load(std::memory_order_relaxed);
    if (e & 1ull) {
        plan.bm_mode = static_cast<int>((e >> 1) & 3);
        plan.stages = static_cast<int>((e >> 3) & 7);
        plan.groups = static_cast<int>((e >> 6) & 7);
        plan.ctas = static_cast<int>((e >> 9) & 255);
        plan.smem = static_cast<size_t>(e >> 17);
    } else {
        cudaError_t err = plan_fwd<Element, kHeadDim, kDropout>(p.Npad, has_bm, &plan);
        if (err != cudaSuccess) return err;
        slot.store(1ull | (static_cast<unsigned long long>(plan.bm_mode) << 1) |
                       (static_cast<unsigned long long>(plan.stages) << 3) |
                       (static_cast<unsigned long long>(plan.groups) << 6) |
                       (static_cast<unsigned long long>(std::min(plan.ctas, 255)) << 9) |
                       (static_cast<unsigned long long>(plan.smem) << 17),
                   std::memory_order_relaxed);
    }
    // Developer override for tuning experiments: FWA_FWD_CONFIG="<bm mode 1|2>,<stages>[,<groups>]".
    if (const char* env = std::getenv("FWA_FWD_CONFIG")) {
        int mode = 0, stages = 0, groups = 1;
        const int n = std::sscanf(env, "%d,%d,%d", &mode, &stages, &groups);
        if (n >= 2 && has_bm && (mode == kBmTile || mode == kBmStrip) && stages >= 2 &&
            stages <= kMaxStages && groups >= 1 && groups <= (mode == kBmStrip ? kMaxGroups : 1)) {
            const size_t smem = Layout::bytes(mode, stages, groups, p.Npad);
            int ctas = 0;
            if (smem <= max_smem_per_block() &&
                prepare_fwd_kernel<Element, kHeadDim, kDropout>(smem, groups, p.Npad, &ctas) == cudaSuccess &&
                ctas > 0)
                plan = FwdPlan{mode, stages, groups, ctas, smem};
        }
    }
    p.bm_mode = plan.bm_mode;
    p.stages = plan.stages;
    p.groups = plan.groups;
    {
        // the kernel's copy-cursor steps: a group's windows are nW * groups apart
        const int64_t n_key_tiles = (p.N + kTileN - 1) / kTileN;
        const int64_t win_step = int64_t(p.nW) * p.groups;
        p.k_tile_step = int64_t(kTileN) * p.k.row_stride;
        p.v_tile_step = int64_t(kTileN) * p.v.row_stride;
        p.k_wrap = win_step * p.k.batch_stride - (n_key_tiles - 1) * p.k_tile_step;
        p.v_wrap = win_step * p.v.batch_stride - (n_key_tiles - 1) * p.v_tile_step;
        p.q_wrap = win_step * p.q.batch_stride;
    }
    // One persistent wave: as many CTAs as fit, each walking a chunk of windows.
    window_attn_plan_chunks_balanced(p, num_sms(), plan.ctas, p.groups);
    // Developer override for tuning experiments: FWA_FWD_CHUNKS=<n>, n chunks of windows per
    // (m-block, head, bm window) instead of the planned count (clamped to [1, B / nW]).
    if (const char* env = std::getenv("FWA_FWD_CHUNKS")) {
        const int64_t nB = p.nW > 0 ? p.B / p.nW : 0;
        const int64_t n = std::min<int64_t>(std::max<int64_t>(std::atoll(env), 1), std::max<int64_t>(nB, 1));
        if (nB > 0 && env[0] != '\0') {
            p.chunk = static_cast<int>((nB + n - 1) / n);
            p.n_chunks = static_cast<int>((nB + p.chunk - 1) / p.chunk);
        }
    }
    const int64_t grid = int64_t(p.num_m_blocks) * p.H * p.nW * p.n_chunks;
    if (grid == 0) return cudaSuccess;
    if (p.groups > 1) {
        window_attn_fwd_kernel<Element, kHeadDim, kDropout, true>
            <<<static_cast<unsigned>(grid), kNumThreads * p.groups, plan.smem, stream>>>(p);
        return cudaGetLastError();
    }
    if constexpr (kHeadDim <= 32 && !kDropout) {
        if (fwd_wide_used<kHeadDim, kDropout>(p.Npad, 1)) {
            window_attn_fwd_kernel<Element, kHeadDim, kDropout, false, true>
                <<<static_cast<unsigned>(grid), kNumThreads, plan.smem, stream>>>(p);
            return cudaGetLastError();
        }
    }
    window_attn_fwd_kernel<Element, kHeadDim, kDropout, false>
        <<<static_cast<unsigned>(grid), kNumThreads, plan.smem, stream>>>(p);
    return cudaGetLastError();
}

template <typename Element, int kHeadDim>
cudaError_t launch_fwd(const FwdParams& p, cudaStream_t stream) {
    return p.dropout.rng_state != nullptr ? launch_fwd_impl<Element, kHeadDim, true>(p, stream)
                                          : launch_fwd_impl<Element, kHeadDim, false>(p, stream);
}

}  // namespace fwa
