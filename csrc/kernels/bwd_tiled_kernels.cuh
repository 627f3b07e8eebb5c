// Window-attention backward for 64 < N <= 1024, fp16/bf16, mma.sync. Three kernels:
//
//  1. preprocess: per row, D_i = dout_i · out_i and (V2, unless the caller gave the forward's:
//     BwdParams::inv_norms_given) the inverse norms 1/max(||q_i||, eps), 1/max(||k_i||, eps), into
//     (B, H, N) fp32 workspaces.
//  2. key side, one CTA per (window, head, 64-key block): loops over the query blocks and
//     accumulates dv = Pᵀ dout and dk = f'(dSᵀ q) in registers. It computes Sᵀ = k qᵀ directly,
//     so Pᵀ and dSᵀ are already in the A-operand layout of the next products (no smem round trip).
//     On wgmma, where the last key block holds at most 16 keys and N <= 192 (N = 65..80, 129..144),
//     that block is left to window_attn_bwd_kv_tail_kernel (mma.sync, a warp per (window, head)),
//     bitwise the same results.
//  3. query side, one CTA per (64-query block, head, bm window, chunk of windows sharing it):
//     loops over windows and key blocks, accumulates dq = f'(dS k) per window, and dbias for its
//     rows over the whole chunk in a per-thread accumulator (a shared-memory strip where it fits
//     the device, a CTA-private global slice otherwise), written once as a partial: deterministic.
// P = exp(S - lse) is recomputed from q, k and the forward's lse in both 2 and 3, with the same
// operations in every kernel pair (bitwise the same P: see BwdParams::dsum). V2's logit in log2
// units is fma(s / ||k_j||, alpha log2(e) / ||q_i||, bm) with s the raw q_i · k_j, so that the
// query side gets dalpha = Σ_i (1/||q_i||) Σ_j dS_ij (s_ij / ||k_j||) from the s / ||k_j|| it has
// anyway (one FMA per element; the form Σ P dP cos - D Σ P cos took four).
//
// kWgmma (head dim <= 32 on sm_90a; window_bwd_wgmma_enabled): kernels 2 and 3 take their products
// from Hopper warpgroup MMA instead of mma.sync, with the same CTAs, tiles and pipeline. The 4
// warps of a CTA are one warpgroup; q, k, v and dout tiles are 64-byte-swizzled (load_tile_sw64_async)
// and read by the tensor cores from shared memory (no ldmatrix), P and dS go in as register A
// operands. A wgmma m64nN accumulator gives each warp its 16 rows in the mma.sync C-fragment layout,
// so everything between the products (the logits, P, dS, the dbias strip, the D and dalpha sums,
// dropout, the epilogues) is the same code in both forms. At Npad 256 the query side is instead
// bwd_q_wg_kernel.cuh's kernel (all keys of a window per CTA, dbias in registers; bwd_q_side).
#pragma once
#include <cstdlib>
#include <type_traits>

#include "bwd_q_wg_kernel.cuh"
#include "fwd_kernel.cuh"
#include "warp_mma.cuh"
#include "warp_reduce.cuh"
#include "wgmma.cuh"

namespace fwa {

template <typename Element, int kHeadDim>
__global__ void __launch_bounds__(kNumThreads) window_attn_bwd_preprocess_kernel(const BwdParams p) {
    using Tr = ElementTraits<Element>;
    // the key-side kernel, this one's programmatic dependent, reads what this kernel writes only
    // after its pdl_wait: it may launch now (its CTAs load their tiles while the last ones here run)
    pdl_launch_dependents();
    constexpr int kTPR = kHeadDim / 8;           // threads per row, one 16-byte chunk each
    constexpr int kRowsPerBlock = kNumThreads / kTPR;
    const int tid = threadIdx.x;
    // BwdParams::bm_build: the first CTAs build bm, a float4 per thread
    const int64_t quads = window_bm_build_quads(p);
    const int64_t build_ctas = (quads + kNumThreads - 1) / kNumThreads;
    if (int64_t(blockIdx.x) < build_ctas) {
        const int64_t qd = int64_t(blockIdx.x) * kNumThreads + tid;
        if (qd < quads) {
            const int Hb = p.bias != nullptr ? p.H : 1;
            if (quads <= INT32_MAX)
                build_bm_quad<int>(p.bm_build, p.bias, p.bias_s0, p.bias_s1, p.bias_s2, p.mask, p.mask_s0, p.mask_s1,
                                   p.mask_s2, Hb, p.N, p.Npad, static_cast<int>(qd));
            else
                build_bm_quad<int64_t>(p.bm_build, p.bias, p.bias_s0, p.bias_s1, p.bias_s2, p.mask, p.mask_s0,
                                       p.mask_s1, p.mask_s2, Hb, p.N, p.Npad, qd);
        }
        return;
    }
    const int64_t total = int64_t(p.B) * p.H * p.N;
    const int64_t row_id = (int64_t(blockIdx.x) - build_ctas) * kRowsPerBlock + tid / kTPR;
    const int c = (tid % kTPR) * 8;
    const bool valid = row_id < total && c < p.d;
    float dsum = 0.f, qss = 0.f, kss = 0.f;
    // (with the forward's norms given, only out and dout are read: half the bytes)
    const bool cosine = p.logit_scale != nullptr && !p.inv_norms_given;
    if (valid) {
        const int64_t b = row_id / (int64_t(p.H) * p.N);
        const int rem = static_cast<int>(row_id - b * p.H * p.N);
        const int h = rem / p.N, i = rem - h * p.N;
        auto ld = [&](const TensorRef& t) {
            return *reinterpret_cast<const uint4*>(static_cast<const Element*>(t.ptr) + b * t.batch_stride +
                                                   h * t.head_stride + int64_t(i) * t.row_stride + c);
        };
        const uint4 o = ld(p.out), dout = ld(p.dout);
        const uint32_t ow[4] = {o.x, o.y, o.z, o.w}, dw[4] = {dout.x, dout.y, dout.z, dout.w};
#pragma unroll
        for (int e = 0; e < 4; ++e) {
            const float2 x = Tr::unpack(ow[e]), y = Tr::unpack(dw[e]);
            dsum = fmaf(x.x, y.x, fmaf(x.y, y.y, dsum));
        }
        if (cosine) {
            const uint4 q = ld(p.q), k = ld(p.k);
            const uint32_t qw[4] = {q.x, q.y, q.z, q.w}, kw[4] = {k.x, k.y, k.z, k.w};
#pragma unroll
            for (int e = 0; e < 4; ++e) {
                const float2 x = Tr::unpack(qw[e]), y = Tr::unpack(kw[e]);
                qss = fmaf(x.x, x.x, fmaf(x.y, x.y, qss));
                kss = fmaf(y.x, y.x, fmaf(y.y, y.y, kss));
            }
        }
    }
#pragma unroll
    for (int o = 1; o < kTPR; o <<= 1) {
        dsum += __shfl_xor_sync(0xffffffffu, dsum, o);
        qss += __shfl_xor_sync(0xffffffffu, qss, o);
        kss += __shfl_xor_sync(0xffffffffu, kss, o);
    }
    if (row_id < total && tid % kTPR == 0) {
        p.dsum[row_id] = dsum;
        if (cosine) {
            p.q_inv_norm[row_id] = inv_norm_from_sumsq(qss);
            p.k_inv_norm[row_id] = inv_norm_from_sumsq(kss);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// dsum[r] = (sum_jb partial[jb][r].x) / (sum_jb partial[jb][r].y), key blocks jb in order: with
// .x = sum of P dP and .y = sum of P over one key block, D = sum_j P_ij dP_ij / sum_j P_ij for the
// query-side kernel (BwdParams::dsum). Dividing by the recomputed row sum makes sum_j dS_ij vanish
// for the P both kernels recompute (which sums to 1 only to within the rounding of the stored lse:
// ~2e-6 at logits ~50). Rows whose keys are all excluded have P = 0 and get D = 0; NaN propagates.
template <int kThreads>
__global__ void __launch_bounds__(kThreads) window_attn_bwd_dsum_kernel(const BwdParams p) {
    // Launched as the key side's programmatic dependent: every input is the key side's. The query
    // side, this kernel's dependent, launches once every CTA here is past pdl_wait (the key side
    // complete), and reads D, which this kernel writes, only after its own pdl_wait.
    pdl_wait();
    pdl_launch_dependents();
    const int64_t rows = int64_t(p.B) * p.H * p.N;
    const int64_t r = int64_t(blockIdx.x) * kThreads + threadIdx.x;
    if (r >= rows) return;
    const int n_blocks = (p.N + kTileN - 1) / kTileN;
    const float2* part = reinterpret_cast<const float2*>(p.dsum_partial);
    float2 sum = part[r];
    for (int jb = 1; jb < n_blocks; ++jb) {
        const float2 v = part[jb * rows + r];
        sum.x += v.x;
        sum.y += v.y;
    }
    p.dsum[r] = sum.y != 0.f ? sum.x / sum.y : sum.x;
}

// The wgmma descriptors (K-major, sw64_kmajor_desc) of bwd_s_dp's four tiles, in its argument order.
struct BwdSdpDescs {
    uint64_t s, sk, p, pk;
};

// The two products both tiled backward kernels start an item with, this warp's 16 rows of each:
// s = tS tSkᵀ and dp = tP tPkᵀ (64 x 64 from 64-row tiles; key side: Sᵀ = k qᵀ, dPᵀ = v doutᵀ,
// query side: S = q kᵀ, dP = dout vᵀ), on wgmma (kWgmma: the tiles given by `desc`) or mma.sync.
template <bool kWgmma, int kHeadDim, typename Element>
FWA_DEVICE void bwd_s_dp(float (&s)[kTileN / 8][4], float (&dp)[kTileN / 8][4], const Element* tS, const Element* tSk,
                         const Element* tP, const Element* tPk, const BwdSdpDescs& desc, int warp, int lane) {
    if constexpr (kWgmma) {
        wg_mma_abt<Element>(s, desc.s, desc.sk);
        wg_mma_abt<Element>(dp, desc.p, desc.pk);
        wg_products_done(s, dp);
    } else {
        zero_acc(s);
        zero_acc(dp);
        warp_mma_abt<kHeadDim>(s, tS, warp * 16, tSk, lane);
        warp_mma_abt<kHeadDim>(dp, tP, warp * 16, tPk, lane);
    }
}

// Key side: dk, dv.

constexpr int kKvBmPitch = kTileN + 4;   // fp32 pitch of the staged bias+mask tile (conflict-free)

// Elements of a 64-row tile: padded rows for ldmatrix, or (kWgmma) 64-byte swizzled rows, 4 KB
// per tile (its kernel aligns its shared memory to the 512-byte swizzle period: kWgmmaSlack).
template <int kHeadDim, bool kWgmma> constexpr int bwd_tile_elems() {
    static_assert(!kWgmma || kHeadDim == 32, "the wgmma tiles hold 64-byte rows");
    return kWgmma ? kTileM * 32 : TileShape<kHeadDim>::kElems;
}
constexpr size_t kWgmmaSlack = 512;

template <int kHeadDim, bool kWgmma = false> struct BwdKvSmem {
    static constexpr int kTile = bwd_tile_elems<kHeadDim, kWgmma>();
    // k, v of the key block, q and dout (2 stages), row statistics (2 stages x lse, D, q_inv),
    // the per-warp sums of P dP and of P (2 stages x 4 warps x 64 queries x 2), then (with
    // bias/mask) the 64x64 bias+mask tile of each stage.
    static constexpr size_t kFixedBytes = (kWgmma ? kWgmmaSlack : 0) + size_t(6) * kTile * 2 +
                                          size_t(2) * 3 * kTileM * sizeof(float) +
                                          size_t(2) * (kNumThreads / 32) * kTileM * 2 * sizeof(float);
    static constexpr size_t kBmBytes = size_t(2) * kTileM * kKvBmPitch * sizeof(float);
    static size_t bytes(bool has_bm) { return kFixedBytes + (has_bm ? kBmBytes : 0); }
};

// CTAs per SM the key-side kernel's register allocation must allow: at d = 32 shared memory holds 3
// (71 KB each) and 3 x 4 warps fit in 167 registers without spilling (the default allocation took
// 180, which capped it at 2); at d >= 64 shared memory caps it at 2 or 1 anyway.
template <int kHeadDim> constexpr int bwd_kv_min_blocks() { return kHeadDim <= 32 ? 3 : 1; }

// The start of a kernel's dynamic shared memory, aligned to the 512-byte swizzle period for kWgmma.
template <bool kWgmma> FWA_DEVICE unsigned char* bwd_smem_base(unsigned char* raw) {
    if constexpr (kWgmma) return raw + ((kWgmmaSlack - (smem_u32(raw) & (kWgmmaSlack - 1))) & (kWgmmaSlack - 1));
    else return raw;
}

// The key side's elementwise work on an item's Sᵀ (s) and dPᵀ (dp), rows keys (this warp's 16:
// lkey0 + g, lkey0 + g + 8 of the block starting at key0), columns queries (the first kNW n8 tiles):
// Pᵀ into s, dSᵀ diag(1/||q||) into dp, and P dP summed over the thread's two keys into pdp, per
// query column. qinv, lse, dsum: the queries' statistics; bmt: the staged bias+mask, [query][key]
// with pitch kBmPitch. (window_attn_bwd_kv_kernel's items and window_attn_bwd_kv_tail_kernel's.)
template <bool kCos, bool kBm, int kNW, int kBmPitch>
FWA_DEVICE void bwd_kv_elementwise(float (&s)[kTileM / 8][4], float (&dp)[kTileM / 8][4], float (&pdp)[kTileM / 4],
                                   float al, const float (&k_inv)[2], int lkey0, int key0, int N, const float* qinv,
                                   const float* bmt, const float* lse, const float* dsum, int g, int t4) {
#pragma unroll
    for (int r = 0; r < 2; ++r) {
        const int lkey = lkey0 + g + 8 * r;
        const int key = key0 + lkey;
        const bool key_out = !kBm && key >= N;
#pragma unroll
        for (int nt = 0; nt < kNW; ++nt) {
            const int c = nt * 8 + 2 * t4;   // query within the block
            // P is computed with exactly the operations of the query-side kernel, so that
            // both kernels see the same bits: the D summed here (sum P dP / sum P) must
            // make sum_j dS_ij vanish there to within fp32 summation order (a per-row
            // mismatch enters dq_i = sum_j dS_ij k_j times the mean of the keys).
            // V2: the logit (s / ||k_j||) (alpha log2(e) / ||q_i||), see the top of this file
            float x0 = s[nt][2 * r], x1 = s[nt][2 * r + 1];
            const float2 qf = kCos ? *reinterpret_cast<const float2*>(qinv + c) : make_float2(1.f, 1.f);
            float f0 = al, f1 = al;
            if constexpr (kCos) {
                x0 *= k_inv[r];
                x1 *= k_inv[r];
                f0 = qf.x * al;
                f1 = qf.y * al;
            }
            if constexpr (kBm) {   // explicit FMA: the same rounding in both kernels
                x0 = fmaf(x0, f0, bmt[c * kBmPitch + lkey]);
                x1 = fmaf(x1, f1, bmt[(c + 1) * kBmPitch + lkey]);
            } else {
                x0 *= f0;
                x1 *= f1;
                if (key_out) x0 = x1 = -INFINITY;
            }
            const float2 l2 = *reinterpret_cast<const float2*>(lse + c);
            const float p0 = fast_exp2(fmaf(-l2.x, kLog2e, x0));
            const float p1 = fast_exp2(fmaf(-l2.y, kLog2e, x1));
            s[nt][2 * r] = p0;
            s[nt][2 * r + 1] = p1;
            const float2 ds = *reinterpret_cast<const float2*>(dsum + c);
            pdp[2 * nt] = fmaf(p0, dp[nt][2 * r], pdp[2 * nt]);
            pdp[2 * nt + 1] = fmaf(p1, dp[nt][2 * r + 1], pdp[2 * nt + 1]);
            dp[nt][2 * r] = p0 * (dp[nt][2 * r] - ds.x) * qf.x;
            dp[nt][2 * r + 1] = p1 * (dp[nt][2 * r + 1] - ds.y) * qf.y;
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The key side's last key block where it holds at most 16 keys and N <= 192 (N = 65..80 and
// 129..144; bwd_kv_tail_kernel_on). The warpgroup kernel spent a 64-key m64 tile on it, 48 rows of
// padding (session 35 run C: the key side 123 -> 88 us at (512, 4, 144) without that block). This
// kernel takes the 16 keys on mma.sync m16n8k16, each warp on its own (window, head) items: per
// 16-query unit of the item Sᵀ = k qᵀ and dPᵀ = v doutᵀ (16 x 16), P and dS with the key side's
// operations (bwd_kv_elementwise), the unit's part of D (the column sums of P dP and of P over the
// 16 keys), dv += Pᵀ dout and dk' += dSᵀ q in registers, and at the item's end dk and dv as the key
// side writes them. The results are bitwise those of the warpgroup tile: the same P and dS, dv and
// dk' summed over the queries 16 at a time in query order (its k16 steps), and the D sums reduced
// over the lanes in the order of column_sums_over_g (the tile's other warps add zeros there).
// A warp's copies run kTailStages - 1 units ahead (its own cp.async groups, a ring of unit slots:
// q, dout rows, their statistics and bias+mask columns; per item k, v rows, inverse norms and logit
// scale): no CTA barrier, no combine across warps, no division per unit (a copy cursor of per-lane
// pointers). 16 warps per SM: at (512, 4, 144) about one item per warp.
// (A code path of its own inside the warpgroup kernel was slower: its CTAs stalled on instruction
// fetch, or ran one item each without overlap; so was a kernel whose 4 warps split an item's
// queries, with three CTA barriers and a combine per item: session 35 runs D-H. Session 35 run I's
// form of this kernel, 12 warps per SM, 64-bit divisions per unit and 24 shuffles for D, took 35.6
// us at (512, 4, 144); this one 27.9, session 36 run K.)
constexpr int kTailStages = 3;       // unit slots per warp
constexpr int kTailBmPitch = 20;     // fp32 pitch of the bias+mask columns (conflict-free reads)
struct BwdKvTailLayout {
    // a unit slot: q and dout (16 rows of 64 bytes, swizzled), lse / D / q_inv (3 x 16 fp32), the
    // bias+mask columns (16 x kTailBmPitch fp32)
    static constexpr uint32_t kQ = 0, kO = 1024, kStat = 2048, kBm = kStat + 3 * 16 * 4;
    static constexpr uint32_t kSlot = (kBm + 16 * kTailBmPitch * 4 + 127u) / 128u * 128u;
    // the item's buffer: k and v (16 rows), k_inv (16 fp32), the logit scale. One per warp: the
    // next item's copies land there kTailStages - 1 units before its first unit, after the
    // current item's first unit moved what it needs into registers (n_sub >= kTailStages)
    static constexpr uint32_t kK = 0, kV = 1024, kKinv = 2048, kLs = kKinv + 16 * 4;
    static constexpr uint32_t kItem = (kLs + 4 + 127u) / 128u * 128u;
    static constexpr uint32_t kWarp = kTailStages * kSlot + kItem;
    static constexpr size_t kBytes = 128 /* alignment */ + 4 * size_t(kWarp);
};

inline bool bwd_kv_tail_kernel_on(int N) {
    static const bool on = env_switch_on("FWA_WINDOW_KV_TAIL");
    // (N > 64: an item has (N + 15) / 16 >= 5 >= kTailStages units, see BwdKvTailLayout::kItem)
    return on && N > kTileN && N <= 192 && N - (N - 1) / kTileN * kTileN <= 16;
}

template <typename Element>
__global__ void __launch_bounds__(kNumThreads, 4) window_attn_bwd_kv_tail_kernel(const BwdParams p) {
    using L = BwdKvTailLayout;
    using Tr = ElementTraits<Element>;
    static_assert(kTailStages <= 5, "an item has at least 5 units");
    extern __shared__ __align__(128) unsigned char smem_raw[];
    const uint32_t raw = smem_u32(smem_raw);
    const uint32_t base = (raw + 127u) & ~127u;
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, g = lane >> 2, t4 = lane & 3;
    const uint32_t wbase = base + warp * L::kWarp;
    unsigned char* const wsm = smem_raw + (wbase - raw);
    const uint32_t ib = wbase + kTailStages * L::kSlot;
    const unsigned char* const sib = wsm + kTailStages * L::kSlot;

    const int N = p.N, d = p.d, H = p.H;
    const int n_blocks = (N + kTileN - 1) / kTileN;
    const int jb = n_blocks - 1, key0 = jb * kTileN;
    const int n_sub = (N + 15) / 16;   // 16-query units per item
    const int64_t total_rows = int64_t(p.B) * H * N;
    const bool cosine = p.logit_scale != nullptr;
    const bool has_bm = p.bm != nullptr;
    // this warp's items: w0, w0 + n_warps, ...
    const int64_t n_warps = int64_t(gridDim.x) * 4;
    const int64_t w0 = int64_t(blockIdx.x) * 4 + warp;

    // A lane's part of a 16-row tile copy (64-byte rows, swizzled): chunk j = lane % 4 of rows
    // rl = lane / 4 and rl + 8; of the bias+mask columns, 16 bytes at column 4 j of the same rows.
    const int rl = lane >> 2, lj = lane & 3;
    const bool col_ok = lj * 8 < d;
    const uint32_t t_off = sw64_offset(rl, lj);                        // row rl + 8: + 512
    const uint32_t bm_off = L::kBm + uint32_t(rl * kTailBmPitch + lj * 4) * 4u;   // row rl + 8: + 8 pitches
    // The copy cursor: the next unit to copy (item c_b H + c_h, sub-block c_sb, ring slot
    // c_slot) and the lane's source pointers for it, advanced one unit per issue with no division
    // (n_warps = qn H + rn: the next item of a warp is c_b + qn (+ 1), c_h + rn (- H)).
    const int64_t qn = n_warps / H;
    const int rn = static_cast<int>(n_warps - qn * H);
    const int qnw = static_cast<int>(qn % p.nW);
    int64_t c_b = w0 / H;
    int c_h = static_cast<int>(w0 - c_b * H), c_bw = static_cast<int>(c_b % p.nW);
    int c_sb = 0, c_slot = 0;
    const Element *qsrc = nullptr, *osrc = nullptr;   // row rl of the unit, chunk lj
    const float* bsrc = nullptr;                       // bias+mask row rl of the unit, column key0 + 4 lj
    int64_t c_stat = 0;                                // the unit's row 0 in the (B, H, N) statistics
    auto c_item = [&]() {   // the cursor's item: its k, v rows, key inverse norms, logit scale
        qsrc = static_cast<const Element*>(p.q.ptr) + c_b * p.q.batch_stride + c_h * p.q.head_stride +
               rl * p.q.row_stride + lj * 8;
        osrc = static_cast<const Element*>(p.dout.ptr) + c_b * p.dout.batch_stride + c_h * p.dout.head_stride +
               rl * p.dout.row_stride + lj * 8;
        if (has_bm) bsrc = p.bm + c_bw * p.bm_win_stride + c_h * p.bm_head_stride + rl * p.Npad + key0 + lj * 4;
        c_stat = (c_b * H + c_h) * N;
        const Element* ks = static_cast<const Element*>(p.k.ptr) + c_b * p.k.batch_stride + c_h * p.k.head_stride;
        const Element* vs = static_cast<const Element*>(p.v.ptr) + c_b * p.v.batch_stride + c_h * p.v.head_stride;
#pragma unroll
        for (int i = 0; i < 2; ++i) {
            const int row = key0 + rl + 8 * i;
            const bool ok = col_ok && row < N;
            cp_async_16(ib + L::kK + t_off + 512u * i, ok ? ks + int64_t(row) * p.k.row_stride + lj * 8 : ks, ok ? 16 : 0);
            cp_async_16(ib + L::kV + t_off + 512u * i, ok ? vs + int64_t(row) * p.v.row_stride + lj * 8 : vs, ok ? 16 : 0);
        }
        if (cosine && lane < 16) {
            const int key = key0 + lane;
            cp_async_4(ib + L::kKinv + lane * 4, p.k_inv_norm + c_stat + (key < N ? key : 0), key < N ? 4 : 0);
        }
        if (cosine && lane == 16) cp_async_4(ib + L::kLs, p.logit_scale + c_h, 4);
    };
    auto issue = [&]() {
        if (c_b < p.B) {
            if (c_sb == 0) c_item();
            const uint32_t slot = wbase + uint32_t(c_slot) * L::kSlot;
            const int row = c_sb * 16 + rl;
            const bool ok0 = col_ok && row < N, ok1 = col_ok && row + 8 < N;
            const Element* q0 = static_cast<const Element*>(p.q.ptr);
            const Element* o0 = static_cast<const Element*>(p.dout.ptr);
            cp_async_16(slot + L::kQ + t_off, ok0 ? qsrc : q0, ok0 ? 16 : 0);
            cp_async_16(slot + L::kQ + t_off + 512u, ok1 ? qsrc + 8 * p.q.row_stride : q0, ok1 ? 16 : 0);
            cp_async_16(slot + L::kO + t_off, ok0 ? osrc : o0, ok0 ? 16 : 0);
            cp_async_16(slot + L::kO + t_off + 512u, ok1 ? osrc + 8 * p.dout.row_stride : o0, ok1 ? 16 : 0);
            if (lane < 16) {
                const int srow = c_sb * 16 + lane;
                const int ok = srow < N ? 4 : 0;
                const int64_t src = srow < N ? c_stat + srow : 0;
                cp_async_4(slot + L::kStat + lane * 4, p.lse + src, ok);
                cp_async_4(slot + L::kStat + 64 + lane * 4, p.dsum + src, ok);
                if (cosine) cp_async_4(slot + L::kStat + 128 + lane * 4, p.q_inv_norm + src, ok);
            }
            if (has_bm) {   // (rows < 16 * n_sub <= Npad)
                cp_async_16(slot + bm_off, bsrc, 16);
                cp_async_16(slot + bm_off + 8u * kTailBmPitch * 4u, bsrc + 8 * p.Npad, 16);
                bsrc += 16 * p.Npad;
            }
            qsrc += 16 * p.q.row_stride;
            osrc += 16 * p.dout.row_stride;
            if (++c_sb == n_sub) {   // the warp's next item
                c_sb = 0;
                c_b += qn;
                c_h += rn;
                c_bw += qnw;
                if (c_h >= H) {
                    c_h -= H;
                    ++c_b;
                    ++c_bw;
                }
                if (c_bw >= p.nW) c_bw -= p.nW;
            }
            c_slot = c_slot + 1 == kTailStages ? 0 : c_slot + 1;
        }
        cp_async_commit();   // (empty past the last unit: the wait below counts groups)
    };

    // Launched as the key side's programmatic dependent: its inputs are the preprocess's, complete
    // before any key-side CTA let it launch; it waits for the key side only before it exits.
#pragma unroll
    for (int u = 0; u < kTailStages - 1; ++u) issue();
    // ldmatrix rows: A (k, v rows) and the transposed B (q, dout rows): matrices (rows 0-7 | 8-15) x
    // (chunk 0 | 1); B (q, dout rows as n): (rows 0-7, chunk 0 | 1), then rows 8-15
    const int a_r = (lane & 7) + ((lane >> 3) & 1) * 8, a_j = lane >> 4;
    const int b_r = (lane & 7) + ((lane >> 4) & 1) * 8, b_j = (lane >> 3) & 1;
    // the query within the unit whose D sums this lane writes: m = 2 (lane bit 4) + (lane bit 3)
    const int m_row = ((lane >> 4) & 1) * 8 + ((lane >> 3) & 1) + 2 * t4;
    int slot_i = 0;
    int64_t b = w0 / H;   // this item's (b, h), advanced as the copy cursor's
    int h = static_cast<int>(w0 - b * H);
    for (; b < p.B; ) {   // this warp's items it = b H + h: w0, w0 + n_warps, ...
        uint32_t ka[2][4], va[2][4];
        float k_inv[2] = {1.f, 1.f}, alpha = p.scale;
        float dk[4][4], dv[4][4];
        zero_acc(dk);
        zero_acc(dv);
        float2* const dpart = reinterpret_cast<float2*>(p.dsum_partial) + jb * total_rows + (b * H + h) * N;
        for (int sb = 0; sb < n_sub; ++sb) {
            issue();
            cp_async_wait<kTailStages - 1>();
            __syncwarp();
            const uint32_t slot = wbase + uint32_t(slot_i) * L::kSlot;
            const unsigned char* sslot = wsm + uint32_t(slot_i) * L::kSlot;
            slot_i = slot_i + 1 == kTailStages ? 0 : slot_i + 1;
            if (sb == 0) {   // (the item buffer is refilled only after this: see BwdKvTailLayout)
#pragma unroll
                for (int ks = 0; ks < 2; ++ks) {
                    ldmatrix_x4(ib + L::kK + sw64_offset(a_r, 2 * ks + a_j), ka[ks][0], ka[ks][1], ka[ks][2], ka[ks][3]);
                    ldmatrix_x4(ib + L::kV + sw64_offset(a_r, 2 * ks + a_j), va[ks][0], va[ks][1], va[ks][2], va[ks][3]);
                }
                if (cosine) {
                    const float* kin = reinterpret_cast<const float*>(sib + L::kKinv);
                    k_inv[0] = key0 + g < N ? kin[g] : 1.f;
                    k_inv[1] = key0 + g + 8 < N ? kin[g + 8] : 1.f;
                    alpha = logit_scale_alpha(reinterpret_cast<const float*>(sib + L::kLs), 0);
                }
            }
            // Sᵀ, dPᵀ: 16 keys x the unit's 16 queries (n8 tiles 0, 1)
            float s[kTileN / 8][4], dp[kTileN / 8][4];
            zero_acc(s);
            zero_acc(dp);
#pragma unroll
            for (int ks = 0; ks < 2; ++ks) {
                uint32_t qb[4], ob[4];
                ldmatrix_x4(slot + L::kQ + sw64_offset(b_r, 2 * ks + b_j), qb[0], qb[1], qb[2], qb[3]);
                ldmatrix_x4(slot + L::kO + sw64_offset(b_r, 2 * ks + b_j), ob[0], ob[1], ob[2], ob[3]);
                mma_16816<Element>(s[0], ka[ks], qb[0], qb[1]);
                mma_16816<Element>(s[1], ka[ks], qb[2], qb[3]);
                mma_16816<Element>(dp[0], va[ks], ob[0], ob[1]);
                mma_16816<Element>(dp[1], va[ks], ob[2], ob[3]);
            }
            const float* stat = reinterpret_cast<const float*>(sslot + L::kStat);
            const float* bmt = reinterpret_cast<const float*>(sslot + L::kBm);
            float pdp[kTileN / 4];
#pragma unroll
            for (int i = 0; i < kTileN / 4; ++i) pdp[i] = 0.f;
            dispatch_flag_pair(cosine, has_bm, [&](auto cosine_tag, auto bm_tag) {
                bwd_kv_elementwise<decltype(cosine_tag)::value, decltype(bm_tag)::value, 2, kTailBmPitch>(
                    s, dp, pdp, alpha * kLog2e, k_inv, 0, key0, N, stat + 32, bmt, stat, stat + 16, g, t4);
            });
            // The unit's part of D: per query column, the sums over the 16 keys of P dP (the lane's two
            // keys already in pdp) and of P, reduced over the lanes' g by column_sums_step in the order
            // of column_sums_over_g: value 2 m + k (query m_row; k = 0: P dP, 1: P) ends in the lane
            // with bits (4, 3) = m and bit 2 = k, which writes that half of the row's float2.
            float cs[8];
#pragma unroll
            for (int m = 0; m < 4; ++m) {   // query nt * 8 + 2 t4 + e, m = 2 nt + e
                cs[2 * m] = pdp[m];
                cs[2 * m + 1] = s[m >> 1][m & 1] + s[m >> 1][2 + (m & 1)];
            }
            column_sums_step<4, 16>(cs, lane);
            column_sums_step<2, 8>(cs, lane);
            column_sums_step<1, 4>(cs, lane);
            if (sb * 16 + m_row < N) reinterpret_cast<float*>(dpart + sb * 16 + m_row)[(lane >> 2) & 1] = cs[0];
            // dv += Pᵀ dout, dk' += (dS diag(1/||q||))ᵀ q (the unit's 16 queries: one k16 step)
            uint32_t pa[4], da[4];
            pa[0] = Tr::pack(s[0][0], s[0][1]);
            pa[1] = Tr::pack(s[0][2], s[0][3]);
            pa[2] = Tr::pack(s[1][0], s[1][1]);
            pa[3] = Tr::pack(s[1][2], s[1][3]);
            da[0] = Tr::pack(dp[0][0], dp[0][1]);
            da[1] = Tr::pack(dp[0][2], dp[0][3]);
            da[2] = Tr::pack(dp[1][0], dp[1][1]);
            da[3] = Tr::pack(dp[1][2], dp[1][3]);
#pragma unroll
            for (int dd = 0; dd < 2; ++dd) {
                uint32_t ob[4], qb[4];
                ldmatrix_x4_trans(slot + L::kO + sw64_offset(a_r, 2 * dd + a_j), ob[0], ob[1], ob[2], ob[3]);
                ldmatrix_x4_trans(slot + L::kQ + sw64_offset(a_r, 2 * dd + a_j), qb[0], qb[1], qb[2], qb[3]);
                mma_16816<Element>(dv[2 * dd], pa, ob[0], ob[1]);
                mma_16816<Element>(dv[2 * dd + 1], pa, ob[2], ob[3]);
                mma_16816<Element>(dk[2 * dd], da, qb[0], qb[1]);
                mma_16816<Element>(dk[2 * dd + 1], da, qb[2], qb[3]);
            }
            __syncwarp();   // (the slot is refilled by a later unit's issue)
        }
        // Epilogue, as the key side's: V1 dk = scale dk'; V2 dk = alpha/||k|| (dk' - k̂ <k̂, dk'>),
        // with the k rows from the A fragments (pair (r, i): row g + 8 r, columns i * 8 + 2 t4)
        Element* dk_dst = static_cast<Element*>(p.dk.ptr) + b * p.dk.batch_stride + h * p.dk.head_stride;
        Element* dv_dst = static_cast<Element*>(p.dv.ptr) + b * p.dv.batch_stride + h * p.dv.head_stride;
        auto k_pair = [&](int r, int i) { return ka[i >> 1][2 * (i & 1) + r]; };
        // (dv first: its accumulators are free during dk's projection)
        warp_store_grad_rows_x<32, Element>(dv, false, k_pair, k_inv, 1.f, dv_dst, p.dv.row_stride, key0, N, d, lane);
        warp_store_grad_rows_x<32, Element>(dk, cosine, k_pair, k_inv, alpha, dk_dst, p.dk.row_stride, key0, N, d, lane);
        b += qn;
        h += rn;
        if (h >= H) {
            h -= H;
            ++b;
        }
    }
    cp_async_wait<0>();
    pdl_launch_dependents();
    // (every thread: this grid completes only after the key side's, for the dsum kernel after it)
    pdl_wait();
}

// kTailQ < 64 (kWgmma without dropout; fwd_wgmma_tail_keys(N, Npad), picked by
// launch_bwd_tiled_impl): the last query block is computed only over its first kTailQ queries
// (those N leaves in it rounded up to 16; N = 144: 16 of 64): Sᵀ and dPᵀ at wgmma m64n{kTailQ},
// the elementwise work over kTailQ / 8 n8 tiles (the others' P is 0 for the column sums of P and
// P dP, as a padded query's is), dv += Pᵀ dout and dk' += dSᵀ q in kTailQ / 16 k16 steps. The
// padded queries' P and dS are 0, so every sum is bitwise that of the full block
// (FWA_WINDOW_WGMMA_TAIL=0 keeps it, for A/B timing and tests).
template <typename Element, int kHeadDim, bool kDropout, bool kWgmma = false, int kTailQ = 64>
__global__ void __launch_bounds__(kNumThreads, bwd_kv_min_blocks<kHeadDim>()) window_attn_bwd_kv_kernel(const BwdParams p) {
    constexpr int kTile = bwd_tile_elems<kHeadDim, kWgmma>();
    constexpr int kNT = kTileM / 8;   // n8 tiles over the 64 queries of a block
    constexpr int kDT = kHeadDim / 8;
    static_assert(kTailQ == kTileM || (kWgmma && !kDropout && kTailQ % 16 == 0 && kTailQ >= 16),
                  "a narrow last query block: wgmma products, no dropout");

    extern __shared__ __align__(16) unsigned char smem_raw[];
    Element* sK = reinterpret_cast<Element*>(bwd_smem_base<kWgmma>(smem_raw));
    Element* sV = sK + kTile;
    Element* sQ = sV + kTile;          // 2 stages
    Element* sO = sQ + 2 * kTile;      // dout, 2 stages
    float* sRow = reinterpret_cast<float*>(sO + 2 * kTile);   // [2 stages][3][64]: lse, D, q_inv
    float* sPdp = sRow + 2 * 3 * kTileM;                       // [2 stages][4 warps][64]: sum P dP
    float* sPsum = sPdp + 2 * (kNumThreads / 32) * kTileM;     // [2 stages][4 warps][64]: sum P
    float* sBm = sPsum + 2 * (kNumThreads / 32) * kTileM;      // [2 stages][64 queries][kKvBmPitch]
    // kWgmma: the descriptors of k and v, and of stage 0 of q and dout as K-major (Sᵀ, dPᵀ) and
    // MN-major (dv, dk) operands; stage st is st * kTile elements on (wgmma_desc_add)
    [[maybe_unused]] uint64_t dK = 0, dV = 0, dQ0 = 0, dO0 = 0, dQt0 = 0, dOt0 = 0;
    if constexpr (kWgmma) {
        dK = sw64_kmajor_desc(smem_u32(sK));
        dV = sw64_kmajor_desc(smem_u32(sV));
        dQ0 = sw64_kmajor_desc(smem_u32(sQ));
        dO0 = sw64_kmajor_desc(smem_u32(sO));
        dQt0 = sw64_mnmajor_desc(smem_u32(sQ));
        dOt0 = sw64_mnmajor_desc(smem_u32(sO));
    }

    const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
    const int g = lane >> 2, t4 = lane & 3;
    const int N = p.N, d = p.d;
    const int n_blocks = (N + kTileN - 1) / kTileN;

    int64_t bid = blockIdx.x;
    // (the key blocks this grid covers: all, or all but the last one where
    // window_attn_bwd_kv_tail_kernel takes it)
    const int kb = p.kv_grid_key_blocks > 0 ? p.kv_grid_key_blocks : n_blocks;
    const int jb = static_cast<int>(bid % kb); bid /= kb;
    const int h = static_cast<int>(bid % p.H);
    const int64_t b = bid / p.H;
    const int key0 = jb * kTileN;
    const bool cosine = p.logit_scale != nullptr;
    const bool has_bm = p.bm != nullptr;
    const float alpha = cosine ? logit_scale_alpha(p.logit_scale, h) : p.scale;
    const float* bm_slice = has_bm ? p.bm + (b % p.nW) * p.bm_win_stride + h * p.bm_head_stride : nullptr;
    const int64_t row_base = (b * p.H + h) * N;   // into lse / dsum / inv-norm workspaces
    DropoutState drop{};
    if constexpr (kDropout) drop = load_dropout_state(p.dropout);

    auto ptr = [&](const TensorRef& t) {
        return static_cast<const Element*>(t.ptr) + b * t.batch_stride + h * t.head_stride;
    };
    auto load_tile = [&](Element* tile, const TensorRef& t, int row0) {
        if constexpr (kWgmma) load_tile_sw64_async<Element>(smem_u32(tile), ptr(t), t.row_stride, row0, N, d, tid);
        else load_tile_async<Element, kHeadDim>(tile, ptr(t), t.row_stride, row0, N, d, tid);
    };
    auto issue_tiles = [&](int ib) {
        const int st = ib & 1;
        load_tile(sQ + st * kTile, p.q, ib * kTileM);
        load_tile(sO + st * kTile, p.dout, ib * kTileM);
    };
    auto issue_stats = [&](int ib) {
        const int st = ib & 1;
        // Row statistics of the query block. Rows >= N are zero-filled: their q and dout rows
        // are zero too, so whatever P they get, they add nothing to dk and dv.
        if (tid < kTileM) {
            const int i = ib * kTileM + tid;
            const int ok = i < N ? 4 : 0;
            const int64_t src = row_base + (i < N ? i : 0);
            float* dst = sRow + st * 3 * kTileM;
            cp_async_4(smem_u32(dst + tid), p.lse + src, ok);
            cp_async_4(smem_u32(dst + kTileM + tid), p.dsum + src, ok);
            if (cosine) cp_async_4(smem_u32(dst + 2 * kTileM + tid), p.q_inv_norm + src, ok);
        }
        // bias+mask of (these 64 queries, this key block): staged, since the loop below reads it
        // transposed (one key per lane row, queries along the columns).
        if (has_bm)
            load_bm_tile_async(sBm + st * kTileM * kKvBmPitch, kKvBmPitch,
                               bm_slice + int64_t(ib) * kTileM * p.Npad + key0, p.Npad, tid);
    };

    // Launched as the preprocess's programmatic dependent (launch_bwd_tiled_impl), the kernel loads
    // the tiles of k, v, q and dout (written before the backward began) before pdl_wait, and the
    // preprocess's D, inverse norms and bm tile (bm built by its first CTAs: BwdParams::bm_build)
    // only after it.
    load_tile(sK, p.k, key0);
    load_tile(sV, p.v, key0);
    issue_tiles(0);
    pdl_wait();
    // (the dsum kernel, this kernel's dependent, reads nothing before its own pdl_wait)
    pdl_launch_dependents();
    issue_stats(0);
    cp_async_commit();

    // Inverse norms of this warp's two key rows.
    float k_inv[2] = {1.f, 1.f};
    if (cosine) {
#pragma unroll
        for (int r = 0; r < 2; ++r) {
            const int key = key0 + warp * 16 + g + 8 * r;
            k_inv[r] = key < N ? p.k_inv_norm[row_base + key] : 1.f;
        }
    }

    float dk[kDT][4], dv[kDT][4];
    zero_acc(dk);
    zero_acc(dv);

    // This key block's part of D_i = sum_j P_ij dP_ij / sum_j P_ij for query block ib (see
    // BwdParams::dsum): the 4 warps' column sums of P dP and of P (staged at the end of item ib),
    // added in warp order by the first 64 threads once the barrier after the item has passed.
    const int64_t total_rows = int64_t(p.B) * p.H * N;
    auto store_pdp_partial = [&](int ib) {
        const int i = ib * kTileM + tid;
        if (tid < kTileM && i < N) {
            const int off = (ib & 1) * (kNumThreads / 32) * kTileM + tid;
            reinterpret_cast<float2*>(p.dsum_partial)[jb * total_rows + row_base + i] =
                sum_staged_columns<kNumThreads / 32>(sPdp, sPsum, off, kTileM);
        }
    };

    // Query block ib (kW wide: 64, or kTailQ for the last one).
    auto block = [&](const int ib, auto block_width_tag) {
        cp_async_wait<0>();
        if constexpr (kWgmma) fence_proxy_async_smem();   // the tiles are read by wgmma (the async proxy)
        __syncthreads();
        if (ib > 0) store_pdp_partial(ib - 1);
        if (ib + 1 < n_blocks) {
            issue_tiles(ib + 1);
            issue_stats(ib + 1);
        }
        cp_async_commit();
        const int st = ib & 1;
        const Element* tQ = sQ + st * kTile;
        const Element* tO = sO + st * kTile;
        const float* lse = sRow + st * 3 * kTileM;
        const float* dsum = lse + kTileM;
        const float* qinv = lse + 2 * kTileM;
        const float* bmt = sBm + st * kTileM * kKvBmPitch;

        // Sᵀ = k qᵀ and dPᵀ = v doutᵀ for this warp's 16 keys and the 64 queries of the block (the
        // last block: its first kW, kTailQ).
        const uint32_t st_bytes = uint32_t(st) * kTile * sizeof(Element);
        auto item = [&](auto width_tag) {
            constexpr int kW = decltype(width_tag)::value;
            constexpr int kNW = kW / 8;   // n8 tiles computed
            float s[kNT][4], dp[kNT][4];
            // (narrow: the first kNW n8 tiles of s and dp)
            float (&sw)[kNW][4] = *reinterpret_cast<float (*)[kNW][4]>(&s[0][0]);
            float (&dpw)[kNW][4] = *reinterpret_cast<float (*)[kNW][4]>(&dp[0][0]);
            if constexpr (kW == kTileM) {
                bwd_s_dp<kWgmma, kHeadDim>(s, dp, sK, tQ, sV, tO,
                                           {dK, wgmma_desc_add(dQ0, st_bytes), dV, wgmma_desc_add(dO0, st_bytes)}, warp, lane);
            } else {
                // (into arrays of their own width, then copied: with the products written through
                // views of s and dp, ptxas serialised every wgmma of the fp16 kernels, C7511)
                float sn[kNW][4], dpn[kNW][4];
                wg_mma_abt<Element, kW>(sn, dK, wgmma_desc_add(dQ0, st_bytes));
                wg_mma_abt<Element, kW>(dpn, dV, wgmma_desc_add(dO0, st_bytes));
                wg_products_done(sn, dpn);
#pragma unroll
                for (int nt = 0; nt < kNT; ++nt)
#pragma unroll
                    for (int e = 0; e < 4; ++e) {
                        s[nt][e] = nt < kNW ? sn[nt][e] : 0.f;   // (P of no query)
                        dp[nt][e] = nt < kNW ? dpn[nt][e] : 0.f;
                    }
            }

            // Attention dropout: dPᵀ o Zᵀ is the gradient reaching P; dv takes (P o Z)ᵀ dout.
            uint32_t keep_bits = 0;
            if constexpr (kDropout) {
                keep_bits = dropout_keep_bits_transposed<kNT>(drop, b * p.H + h, ib * (kTileM / 16),
                                                              (key0 + warp * 16) >> 4, lane);
                dropout_apply(dp, keep_bits, drop.scale);
            }
            // Pᵀ (into s) and dSᵀ (into dp); rows are keys, columns queries; pdp: P dP summed over
            // the thread's two keys, per query column. Instantiated per (cosine, bias+mask) pair,
            // picked once per item (see the query-side kernel).
            float pdp[2 * kNT];
#pragma unroll
            for (int i = 0; i < 2 * kNT; ++i) pdp[i] = 0.f;
            auto elementwise = [&](auto cosine_tag, auto bm_tag) {
                bwd_kv_elementwise<decltype(cosine_tag)::value, decltype(bm_tag)::value, kNW, kKvBmPitch>(
                    s, dp, pdp, alpha * kLog2e, k_inv, warp * 16, key0, N, qinv, bmt, lse, dsum, g, t4);
            };
            dispatch_flag_pair(cosine, has_bm, elementwise);

            // sums of P dP and of P (before dropout) over the warp's 16 keys, per query
            static_assert(kNT == 8, "stage_warp_column_sums sums a 64-column tile");
            stage_warp_column_sums(pdp, s, sPdp, sPsum, (st * (kNumThreads / 32) + warp) * kTileM);

            if constexpr (kDropout) dropout_apply(s, keep_bits, drop.scale);
            // dv += Pᵀ dout, dk' += (dS diag(1/||q||))ᵀ q
            if constexpr (kWgmma) {
                wg_mma_pb<Element, kW>(dv, sw, wgmma_desc_add(dOt0, st_bytes));
                wg_mma_pb<Element, kW>(dk, dpw, wgmma_desc_add(dQt0, st_bytes));
                wg_products_done(dk, dv);
            } else {
                warp_mma_pb<kHeadDim>(dv, s, nullptr, tO, lane);
                warp_mma_pb<kHeadDim>(dk, dp, nullptr, tQ, lane);
            }
        };
        item(block_width_tag);
    };
    // The last block peeled off the loop where it is narrow: with both widths' items in one loop
    // body ptxas serialised every wgmma of the kernel (a wait after each; "insufficient register
    // resources for the wgmma pipeline", C7511), the full blocks' too. Check -Xptxas -v for C7511
    // after any change here, fp16 and bf16.
    const int n_full = kTailQ < kTileM ? n_blocks - 1 : n_blocks;
    for (int ib = 0; ib < n_full; ++ib) block(ib, std::integral_constant<int, kTileM>{});
    if constexpr (kTailQ < kTileM) block(n_blocks - 1, std::integral_constant<int, kTailQ>{});
    __syncthreads();
    store_pdp_partial(n_blocks - 1);

    // Epilogue. V1: dk = scale dk'. V2: dk = alpha/||k|| (dk' - k̂ <k̂, dk'>).
    auto dst = [&](const TensorRef& t) {
        return static_cast<Element*>(t.ptr) + b * t.batch_stride + h * t.head_stride;
    };
    warp_store_grad_rows<kHeadDim, kWgmma>(dk, cosine, sK, warp * 16, k_inv, alpha, dst(p.dk),
                                           p.dk.row_stride, key0 + warp * 16, N, d, lane);
    warp_store_grad_rows<kHeadDim, kWgmma>(dv, false, sK, warp * 16, k_inv, 1.f, dst(p.dv),
                                           p.dv.row_stride, key0 + warp * 16, N, d, lane);
}

// ---------------------------------------------------------------------------------------------
// Query side: dq, dbias partials, dalpha partials.

template <int kHeadDim, bool kWgmma = false> struct BwdQSmem {
    static constexpr int kTile = bwd_tile_elems<kHeadDim, kWgmma>();
    // q, dout per window (2 stages), k, v per key block (2 stages), key inverse norms (2 stages),
    // row statistics per window (2 stages x lse, D, q_inv), then the dbias strip when it fits.
    static constexpr size_t kFixedBytes = (kWgmma ? kWgmmaSlack : 0) + size_t(8) * kTile * 2 +
                                          2 * kTileN * sizeof(float) + size_t(2) * 3 * kTileM * sizeof(float);
    static size_t bytes(int Npad, bool strip) {
        return kFixedBytes + (strip ? size_t(kTileM) * (Npad + 8) * sizeof(float) : 0);
    }
};

// kStrip: the dbias partial of the CTA's rows is accumulated in a shared-memory strip (dbias wanted,
// the strip fits), read-modify-written with plain shared loads and stores; otherwise (no dbias, or
// a strip too large for shared memory) in the CTA-private global slice. A template parameter, not
// a runtime flag: with the choice made per element at run time the compiler emitted generic
// (address-space agnostic) loads and stores and re-materialised the per-element predicates every
// item (ncu, H100: ~2900 instructions per warp and 64-key item, 48 of them tensor-core products).
template <typename Element, int kHeadDim, bool kDropout, bool kStrip, bool kWgmma = false>
__global__ void __launch_bounds__(kNumThreads) window_attn_bwd_q_kernel(const BwdParams p) {
    constexpr int kTile = bwd_tile_elems<kHeadDim, kWgmma>();
    constexpr int kNT = kTileN / 8;
    constexpr int kDT = kHeadDim / 8;

    extern __shared__ __align__(16) unsigned char smem_raw[];
    Element* sQ = reinterpret_cast<Element*>(bwd_smem_base<kWgmma>(smem_raw));
    Element* sO = sQ + 2 * kTile;
    Element* sK = sO + 2 * kTile;
    Element* sV = sK + 2 * kTile;
    float* sKinv = reinterpret_cast<float*>(sV + 2 * kTile);
    float* sStat = sKinv + 2 * kTileN;   // [2 windows][3][64]: lse, D, q_inv of the CTA's rows
    float* sAcc = sStat + 2 * 3 * kTileM;
    // kWgmma: the K-major descriptors of stage 0 of q, dout, k, v (S, dP) and the MN-major one of
    // k (dq); stage st is st * kTile elements on (wgmma_desc_add)
    [[maybe_unused]] uint64_t dQ0 = 0, dO0 = 0, dK0 = 0, dV0 = 0, dKt0 = 0;
    if constexpr (kWgmma) {
        dQ0 = sw64_kmajor_desc(smem_u32(sQ));
        dO0 = sw64_kmajor_desc(smem_u32(sO));
        dK0 = sw64_kmajor_desc(smem_u32(sK));
        dV0 = sw64_kmajor_desc(smem_u32(sV));
        dKt0 = sw64_mnmajor_desc(smem_u32(sK));
    }
    const int acc_pitch = p.Npad + 8;

    const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
    const int g = lane >> 2, t4 = lane & 3;

    const WindowCtaWork cta = window_cta_work(p);
    const int m_block = cta.m_block, h = cta.h, w = cta.w, t_begin = cta.t_begin, t_end = cta.t_end;
    const int chunk_id = cta.chunk_id;
    if (t_begin >= t_end) return;

    const int N = p.N, d = p.d;
    const int row0 = m_block * kTileM;
    const int n_key_tiles = (N + kTileN - 1) / kTileN;
    const int n_items = (t_end - t_begin) * n_key_tiles;
    const bool cosine = p.logit_scale != nullptr;
    const bool has_bm = p.bm != nullptr;
    const bool want_dbias = p.dbias_partial != nullptr;   // always true with kStrip
    const float* bm_slice = has_bm ? p.bm + w * p.bm_win_stride + h * p.bm_head_stride : nullptr;
    const float alpha = cosine ? logit_scale_alpha(p.logit_scale, h) : p.scale;
    DropoutState drop{};
    if constexpr (kDropout) drop = load_dropout_state(p.dropout);
    const int partial = w * p.n_chunks + chunk_id;
    float* gAcc = want_dbias ? p.dbias_partial + (int64_t(h) * p.nW * p.n_chunks + partial) * p.Npad * p.Npad +
                                   int64_t(row0) * p.Npad
                             : nullptr;

    auto window_of = [&](int ti) -> int64_t { return w + int64_t(p.nW) * (t_begin + ti); };
    auto base = [&](const TensorRef& t, int64_t b) {
        return static_cast<const Element*>(t.ptr) + b * t.batch_stride + h * t.head_stride;
    };
    auto load_tile = [&](Element* tile, const TensorRef& t, int64_t b, int row0) {
        if constexpr (kWgmma) load_tile_sw64_async<Element>(smem_u32(tile), base(t, b), t.row_stride, row0, N, d, tid);
        else load_tile_async<Element, kHeadDim>(tile, base(t, b), t.row_stride, row0, N, d, tid);
    };
    // (window, key tile) cursors of the next item to load and of the item being computed,
    // advanced in order (no integer division per item)
    int load_ti = 0, load_j = 0;
    auto issue_loads = [&](int item) {
        const int ti = load_ti, j = load_j;
        if (++load_j == n_key_tiles) { load_j = 0; ++load_ti; }
        const int64_t b = window_of(ti);
        const int st = item & 1;
        if (j == 0) {
            load_tile(sQ + (ti & 1) * kTile, p.q, b, row0);
            load_tile(sO + (ti & 1) * kTile, p.dout, b, row0);
            // the window's row statistics, staged like its q tile (read at its first item: a
            // direct global load there stalled every warp for a memory latency per window)
            if (tid < kTileM) {
                const int i = row0 + tid;
                const int ok = i < N ? 4 : 0;
                const int64_t src = (b * p.H + h) * N + (i < N ? i : 0);
                float* dst = sStat + (ti & 1) * 3 * kTileM;
                cp_async_4(smem_u32(dst + tid), p.lse + src, ok);
                cp_async_4(smem_u32(dst + kTileM + tid), p.dsum + src, ok);
                if (cosine) cp_async_4(smem_u32(dst + 2 * kTileM + tid), p.q_inv_norm + src, ok);
            }
        }
        load_tile(sK + st * kTile, p.k, b, j * kTileN);
        load_tile(sV + st * kTile, p.v, b, j * kTileN);
        if (cosine && tid < kTileN) {   // padded keys get 0 (their logits are masked anyway)
            const int key = j * kTileN + tid;
            cp_async_4(smem_u32(sKinv + st * kTileN + tid),
                       p.k_inv_norm + (b * p.H + h) * N + (key < N ? key : 0), key < N ? 4 : 0);
        }
    };

    if constexpr (kStrip)
        for (int c = tid; c < kTileM * acc_pitch; c += kNumThreads) sAcc[c] = 0.f;
    issue_loads(0);
    cp_async_commit();

    float dq[kDT][4];
    float lse_r[2], dsum[2], q_inv[2];
    // dalpha = Σ_ij dS_ij cos_ij = Σ_i (1/||q_i||) Σ_j dS_ij (s_ij / ||k_j||) (see the top of this file),
    // in fp32 from dS before its rounding to 16 bits; da: the inner sums of the thread's two rows
    // (two chains each: even / odd column), qa: their logit factors alpha log2(e) / ||q_i||.
    float da[2][2], qa[2];
    float dalpha_acc = 0.f;

    // bias+mask of this warp's rows for one key tile (it depends on the key tile only: every
    // window of the CTA shares the slice), loaded into registers one item ahead so that the
    // L2 latency hides behind the products (for kHeadDim <= 64; at 128 the registers are not
    // there and the tile is loaded just before use).
    constexpr bool kPrefetchBm = kHeadDim <= 64;
    float2 bmr[2][kNT];
    auto load_bm_regs = [&](int j) {
#pragma unroll
        for (int r = 0; r < 2; ++r) {
            const float* src = bm_slice + int64_t(row0 + warp * 16 + g + 8 * r) * p.Npad + j * kTileN + 2 * t4;
#pragma unroll
            for (int nt = 0; nt < kNT; ++nt) bmr[r][nt] = __ldg(reinterpret_cast<const float2*>(src + nt * 8));
        }
    };
    if (has_bm && kPrefetchBm) load_bm_regs(0);

    int ti = 0, j = 0;
    for (int item = 0; item < n_items; ++item) {
        cp_async_wait<0>();
        if constexpr (kWgmma) fence_proxy_async_smem();   // the tiles are read by wgmma (the async proxy)
        __syncthreads();
        if (item + 1 < n_items) issue_loads(item + 1);
        cp_async_commit();

        const int st = item & 1;
        const int64_t b = window_of(ti);
        const Element* tQ = sQ + (ti & 1) * kTile;
        const Element* tO = sO + (ti & 1) * kTile;
        const Element* tK = sK + st * kTile;
        const Element* tV = sV + st * kTile;
        const float* kinv = sKinv + st * kTileN;

        if (j == 0) {
            zero_acc(dq);
            const float* stat = sStat + (ti & 1) * 3 * kTileM;
#pragma unroll
            for (int r = 0; r < 2; ++r) {
                const int lrow = warp * 16 + g + 8 * r;
                const bool ok = row0 + lrow < N;
                lse_r[r] = ok ? stat[lrow] : INFINITY;
                dsum[r] = ok ? stat[kTileM + lrow] : 0.f;
                q_inv[r] = (cosine && ok) ? stat[2 * kTileM + lrow] : 1.f;
                qa[r] = q_inv[r] * (alpha * kLog2e);
                da[r][0] = da[r][1] = 0.f;
            }
        }

        float s[kNT][4], dp[kNT][4];
        const uint32_t w_bytes = uint32_t(ti & 1) * kTile * sizeof(Element);   // the window's q / dout stage
        const uint32_t st_bytes = uint32_t(st) * kTile * sizeof(Element);       // the item's k / v stage
        bwd_s_dp<kWgmma, kHeadDim>(s, dp, tQ, tK, tO, tV,
                                   {wgmma_desc_add(dQ0, w_bytes), wgmma_desc_add(dK0, st_bytes),
                                    wgmma_desc_add(dO0, w_bytes), wgmma_desc_add(dV0, st_bytes)},
                                   warp, lane);

        const int key0 = j * kTileN;
        // Attention dropout: the gradient reaching P is dP o Z (and D = sum_j P (dP o Z) / sum_j P,
        // as the key-side kernel summed it).
        if constexpr (kDropout)
            dropout_apply(dp, dropout_keep_bits<kNT>(drop, b * p.H + h, (row0 + warp * 16) >> 4, key0 >> 4, lane),
                          drop.scale);
        if (has_bm && !kPrefetchBm) load_bm_regs(j);
        // P, dS, the dbias partial and the dalpha sums. The body
        // is instantiated per (cosine, bias+mask) pair and picked once per item: with the two flags
        // tested per element the compiler kept a branch per element pair in the loop.
        auto elementwise = [&](auto cosine_tag, auto bm_tag) {
            constexpr bool kCos = decltype(cosine_tag)::value;
            constexpr bool kBm = decltype(bm_tag)::value;
            [[maybe_unused]] float* sAcc_row[2];   // kStrip only
            if constexpr (kStrip) {
#pragma unroll
                for (int r = 0; r < 2; ++r) sAcc_row[r] = sAcc + (warp * 16 + g + 8 * r) * acc_pitch + key0;
            }
            // key inverse norms of the tile, read before the strip's shared-memory stores (which
            // the compiler must assume alias them)
            float2 kf[kCos ? kNT : 1];
            if constexpr (kCos) {
#pragma unroll
                for (int nt = 0; nt < kNT; ++nt) kf[nt] = *reinterpret_cast<const float2*>(kinv + nt * 8 + 2 * t4);
            }
            const float al = alpha * kLog2e;
#pragma unroll
            for (int r = 0; r < 2; ++r) {
#pragma unroll
                for (int nt = 0; nt < kNT; ++nt) {
                    const int c = nt * 8 + 2 * t4;
                    float c0 = s[nt][2 * r], c1 = s[nt][2 * r + 1];
                    if constexpr (kCos) {   // s / ||k_j||
                        c0 *= kf[nt].x;
                        c1 *= kf[nt].y;
                    }
                    const float f = kCos ? qa[r] : al;
                    float x0, x1;
                    if constexpr (kBm) {   // explicit FMA: the same rounding as the key-side kernel
                        x0 = fmaf(c0, f, bmr[r][nt].x);
                        x1 = fmaf(c1, f, bmr[r][nt].y);
                    } else {
                        x0 = c0 * f;
                        x1 = c1 * f;
                        if (key0 + c >= N) x0 = -INFINITY;
                        if (key0 + c + 1 >= N) x1 = -INFINITY;
                    }
                    // the same operations as the key-side kernel (see there)
                    const float p0 = fast_exp2(fmaf(-lse_r[r], kLog2e, x0));
                    const float p1 = fast_exp2(fmaf(-lse_r[r], kLog2e, x1));
                    const float g0 = p0 * (dp[nt][2 * r] - dsum[r]);
                    const float g1 = p1 * (dp[nt][2 * r + 1] - dsum[r]);
                    if constexpr (kCos) da[r][nt & 1] = fmaf(g0, c0, fmaf(g1, c1, da[r][nt & 1]));
                    // the dq product takes dS diag(1/||k||) (V2), dS (V1)
                    if constexpr (kCos) {
                        dp[nt][2 * r] = g0 * kf[nt].x;
                        dp[nt][2 * r + 1] = g1 * kf[nt].y;
                    } else {
                        dp[nt][2 * r] = g0;
                        dp[nt][2 * r + 1] = g1;
                    }
                    if constexpr (kStrip) {
                        float2* acc = reinterpret_cast<float2*>(sAcc_row[r] + c);
                        float2 v = *acc;
                        v.x += g0;
                        v.y += g1;
                        *acc = v;
                    } else if (want_dbias) {
                        const int lrow = warp * 16 + g + 8 * r;
                        float2* acc = reinterpret_cast<float2*>(gAcc + int64_t(lrow) * p.Npad + key0 + c);
                        float2 v = ti == 0 ? make_float2(0.f, 0.f) : *acc;
                        v.x += g0;
                        v.y += g1;
                        *acc = v;
                    }
                }
            }
        };
        dispatch_flag_pair(cosine, has_bm, elementwise);

        if (has_bm && kPrefetchBm && item + 1 < n_items) load_bm_regs(j + 1 == n_key_tiles ? 0 : j + 1);

        // dq' += (dS diag(1/||k||)) k, the key factors already applied to dp above
        if constexpr (kWgmma) {
            wg_mma_pb<Element>(dq, dp, wgmma_desc_add(dKt0, st_bytes));
            wg_products_done(dq);
        } else {
            warp_mma_pb<kHeadDim>(dq, dp, nullptr, tK, lane);
        }

        if (j == n_key_tiles - 1) {
            if (cosine) {
#pragma unroll
                for (int r = 0; r < 2; ++r) {
                    const float contrib = q_inv[r] * quad_sum(da[r][0] + da[r][1]);
                    if (t4 == 0) dalpha_acc += contrib;
                }
            }
            // V1: dq = scale dq'; V2: dq = alpha/||q|| (dq' - q̂ <q̂, dq'>).
            warp_store_grad_rows<kHeadDim, kWgmma>(
                dq, cosine, tQ, warp * 16, q_inv, alpha,
                static_cast<Element*>(p.dq.ptr) + b * p.dq.batch_stride + h * p.dq.head_stride,
                p.dq.row_stride, row0 + warp * 16, N, d, lane);
        }
        if (++j == n_key_tiles) { j = 0; ++ti; }
    }

    if constexpr (kStrip) {
        __syncthreads();
        for (int c = tid; c < kTileM * (p.Npad / 4); c += kNumThreads) {
            const int r = c / (p.Npad / 4), cc = (c - r * (p.Npad / 4)) * 4;
            *reinterpret_cast<float4*>(gAcc + int64_t(r) * p.Npad + cc) =
                *reinterpret_cast<const float4*>(sAcc + r * acc_pitch + cc);
        }
    }
    if (cosine) {
        __shared__ float red[kNumThreads / 32];
        const float v = warp_sum(dalpha_acc);
        if (lane == 0) red[warp] = v;
        __syncthreads();
        if (tid == 0) {
            float tot = 0.f;
            for (int i = 0; i < kNumThreads / 32; ++i) tot += red[i];
            p.dalpha_partial[(int64_t(h) * p.nW * p.n_chunks + partial) * p.num_m_blocks + m_block] = tot;
        }
    }
}

// Largest padded N for which the query-side kernel keeps its dbias strip in shared memory (when it
// fits the device): unlimited by default. At N > 256 the strip costs the kernel its second CTA per
// SM (H100, d = 32: 1 CTA of 4 warps), which still beats the global slice's read-modify-write
// per element and item (N = 576: see benchmarks/NOTES.md, session 7). FWA_BWD_Q_STRIP_MAX_NPAD
// (testing, A/B timing) lowers the limit, e.g. to 256 for the global slice above N = 256.
inline int bwd_q_strip_max_npad() {
    static const int limit = [] {
        const char* e = std::getenv("FWA_BWD_Q_STRIP_MAX_NPAD");
        return e != nullptr && e[0] != '\0' ? std::atoi(e) : 1 << 30;
    }();
    return limit;
}

// dq of windows b0 + (0 .. n_windows - 1) = the sum of the key ranges' fp32 parts
// (BwdParams::dq_partial), in range order: one thread per two columns of a row.
template <typename Element>
__global__ void __launch_bounds__(256) window_attn_bwd_dq_reduce_kernel(const BwdParams p, int64_t b0, int64_t n_windows) {
    using Tr = ElementTraits<Element>;
    const int half_d = p.d / 2;
    const int64_t rows = n_windows * p.H * p.N;
    const int64_t idx = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
    if (idx >= rows * half_d) return;
    const int64_t row_id = idx / half_d;
    const int col = static_cast<int>(idx - row_id * half_d) * 2;
    const float* src = p.dq_partial + row_id * p.d + col;
    float2 acc = *reinterpret_cast<const float2*>(src);
    for (int r = 1; r < p.n_key_ranges; ++r) {
        const float2 v = *reinterpret_cast<const float2*>(src + r * p.dq_partial_range_stride);
        acc.x += v.x;
        acc.y += v.y;
    }
    const int i = static_cast<int>(row_id % p.N);
    const int64_t bh = row_id / p.N;
    const int h = static_cast<int>(bh % p.H);
    const int64_t b = b0 + bh / p.H;
    *reinterpret_cast<uint32_t*>(static_cast<Element*>(p.dq.ptr) + b * p.dq.batch_stride + h * p.dq.head_stride +
                                 int64_t(i) * p.dq.row_stride + col) = Tr::pack(acc.x, acc.y);
}

// The query-side kernel: with kWgmma where window_bwd_q_wg_enabled(Npad) the warpgroup kernel of
// bwd_q_wg_kernel.cuh (Npad 192 on its 256-key form; above 256 in key ranges, then with the sum of
// their dq parts), otherwise window_attn_bwd_q_kernel. Prepares it and sets *ctas (CTAs per SM);
// launches it when `launch`; `pdl`: the warpgroup kernel without key ranges as the previous
// launch's programmatic dependent (launch_bwd_tiled_impl: the dsum kernel's).
template <typename Element, int kHeadDim, bool kDropout, bool kWgmma>
cudaError_t bwd_q_side(const BwdParams& p, cudaStream_t stream, bool launch, int* ctas, bool assume_strip,
                       bool pdl = false) {
    const int64_t grid = int64_t(p.num_m_blocks) * p.H * p.nW * p.n_chunks;
    if constexpr (kWgmma) {
        // Npad > 256: where the plan gave the problem key ranges (window_bwd_q_key_ranges)
        const bool wg = p.Npad > 256 ? p.n_key_ranges > 1 : window_bwd_q_wg_enabled(p.Npad) && bwd_q_wg_shape_ok(p);
        if (wg) {
            auto run = [&](auto keys_tag, auto tail_tag, auto fold_tag) {
                constexpr int kKeys = decltype(keys_tag)::value;
                constexpr int kTail = decltype(tail_tag)::value;
                constexpr bool kFold = decltype(fold_tag)::value;
                using L = BwdQWgLayout<kKeys>;
                // (the late epilogue's second buffer; the folded tail rows' buffers)
                constexpr size_t kSmem = L::bytes(kTail < 64, kFold);
                constexpr auto kKernel = window_attn_bwd_q_wg_kernel<Element, kKeys, kDropout, kTail, kFold>;
                cudaError_t err = prepare_kernel<kKernel>(kSmem, L::kThreads, ctas);
                if (err != cudaSuccess || !launch) return err;
                if (p.n_key_ranges == 1) {
                    cudaLaunchAttribute attr;
                    const cudaLaunchConfig_t cfg =
                        launch_config(dim3(static_cast<unsigned>(grid)), dim3(L::kThreads), kSmem, stream, pdl, attr);
                    return cudaLaunchKernelEx(&cfg, kKernel, p);
                }
                if constexpr (kFold) {
                    return cudaErrorInvalidValue;   // (window_bwd_q_fold_tail_on: no key ranges)
                } else {
                    // Key ranges: launches over batches of chunks whose dq parts fit the budget, each
                    // followed by the sum of its windows' parts.
                    for (int c0 = 0; c0 < p.n_chunks;) {
                        const DqLaunchBatch batch = window_bwd_dq_batch(p, c0);
                        const int64_t b0 = batch.b0, b1 = batch.b1;
                        BwdParams pb = p;
                        pb.chunk_offset = c0;
                        pb.dq_partial_range_stride = (b1 - b0) * p.H * p.N * p.d;
                        const int64_t g = int64_t(p.num_m_blocks) * p.H * p.nW * batch.chunks * p.n_key_ranges;
                        c0 += batch.chunks;
                        kKernel<<<static_cast<unsigned>(g), L::kThreads, kSmem, stream>>>(pb);
                        if ((err = cudaGetLastError()) != cudaSuccess) return err;
                        constexpr int kThreads = 256;
                        const int64_t work = (b1 - b0) * p.H * p.N * (p.d / 2);
                        window_attn_bwd_dq_reduce_kernel<Element>
                            <<<static_cast<unsigned>((work + kThreads - 1) / kThreads), kThreads, 0, stream>>>(pb, b0, b1 - b0);
                        if ((err = cudaGetLastError()) != cudaSuccess) return err;
                    }
                    return cudaSuccess;
                }
            };
            using K128 = std::integral_constant<int, 128>;
            using K256 = std::integral_constant<int, 256>;
            using Full = std::integral_constant<int, 64>;
            using NoFold = std::false_type;
            if (p.Npad == 128) return run(K128{}, Full{}, NoFold{});
            if constexpr (!kDropout) {
                // Npad 192: the last key block as wide as the keys N leaves in it (rounded up to 16;
                // fwd_wgmma_tail_keys, 64 where FWA_WINDOW_WGMMA_TAIL=0); at 16 (N = 129..144) the
                // rows past 128 folded into the first two query blocks (BwdParams::q_tail_fold)
                if (p.Npad == 192 && p.q_tail_fold > 0)
                    return run(K256{}, std::integral_constant<int, 16>{}, std::true_type{});
                if (p.Npad == 192)
                    return dispatch_block_width(fwd_wgmma_tail_keys(p.N, 192), [&](auto tail) { return run(K256{}, tail, NoFold{}); });
            }
            return run(K256{}, Full{}, NoFold{});   // Npad 192, 256, or key ranges of 256
        }
    }
    using QSmem = BwdQSmem<kHeadDim, kWgmma>;
    // The dbias strip where it fits the device's shared memory (H100: up to N = 576 at d <= 64; at
    // d > 64 with N > 128 it does not fit sm_80's 163 KB): the CTA-private global slice otherwise.
    const bool strip = (assume_strip || p.dbias_partial != nullptr) && p.Npad <= bwd_q_strip_max_npad() &&
                       QSmem::bytes(p.Npad, true) <= max_smem_per_block();
    const size_t q_smem = QSmem::bytes(p.Npad, strip);
    cudaError_t err = strip ? prepare_kernel<window_attn_bwd_q_kernel<Element, kHeadDim, kDropout, true, kWgmma>>(q_smem, kNumThreads, ctas)
                            : prepare_kernel<window_attn_bwd_q_kernel<Element, kHeadDim, kDropout, false, kWgmma>>(q_smem, kNumThreads, ctas);
    if (err != cudaSuccess || !launch) return err;
    if (strip)
        window_attn_bwd_q_kernel<Element, kHeadDim, kDropout, true, kWgmma><<<static_cast<unsigned>(grid), kNumThreads, q_smem, stream>>>(p);
    else
        window_attn_bwd_q_kernel<Element, kHeadDim, kDropout, false, kWgmma><<<static_cast<unsigned>(grid), kNumThreads, q_smem, stream>>>(p);
    return cudaGetLastError();
}

// preprocess -> key side -> dsum -> query side. On sm_90a (window_pdl_enabled) each is the previous
// one's programmatic dependent (the query side on its warpgroup kernel without key ranges): each
// loads what predates the backward (q, k, v, dout, lse, and bm and the norms where the previous
// kernel lets it launch only after its own pdl_wait) before its pdl_wait, the previous kernel's
// outputs after it. H100, bf16, fwd+bwd step in a CUDA graph (session 34 run D): (512, 4, 144)
// 362-365 -> 350-353 us with FWA_WINDOW_PDL=0 / default; N = 256 and 576 within noise.
template <typename Element, int kHeadDim, bool kDropout, bool kWgmma>
cudaError_t launch_bwd_tiled_impl(const BwdParams& p, cudaStream_t stream, int* ctas_per_sm,
                                  bool assume_strip) {
    cudaError_t err;
    if (ctas_per_sm != nullptr)   // planning only
        return bwd_q_side<Element, kHeadDim, kDropout, kWgmma>(p, stream, false, ctas_per_sm, assume_strip);
    // (the kernels' griddepcontrol instructions are in their sm_90 code: FWA_SM90A_BUILT on a 9.0 device)
#ifdef FWA_SM90A_BUILT
    const bool pdl_chain = window_pdl_enabled() && current_device_is_sm90();
#else
    const bool pdl_chain = false;
#endif
    {
        constexpr int kRowsPerBlock = kNumThreads / (kHeadDim / 8);
        const int64_t rows = int64_t(p.B) * p.H * p.N;
        // (BwdParams::bm_build: the build's CTAs first) A plain launch: the stream's earlier work
        // (which wrote dout) is complete when it starts.
        const int64_t grid = (window_bm_build_quads(p) + kNumThreads - 1) / kNumThreads + (rows + kRowsPerBlock - 1) / kRowsPerBlock;
        if (grid == 0) return cudaSuccess;
        cudaLaunchAttribute attr;
        const cudaLaunchConfig_t cfg = launch_config(dim3(static_cast<unsigned>(grid)), dim3(kNumThreads), 0, stream, false, attr);
        if ((err = cudaLaunchKernelEx(&cfg, window_attn_bwd_preprocess_kernel<Element, kHeadDim>, p)) != cudaSuccess)
            return err;
    }
    {
        const size_t smem = BwdKvSmem<kHeadDim, kWgmma>::bytes(p.bm != nullptr);
        const int n_kb = (p.N + kTileN - 1) / kTileN;
        auto run_kv = [&](auto tail_tag) -> cudaError_t {
            constexpr int kTailQ = decltype(tail_tag)::value;
            constexpr auto kKernel = window_attn_bwd_kv_kernel<Element, kHeadDim, kDropout, kWgmma, kTailQ>;
            // the last key block on its own kernel where it holds at most 16 keys (N <= 192)
            BwdParams pk = p;
            const bool tail = kTailQ == 16 && bwd_kv_tail_kernel_on(p.N);
            if (tail) pk.kv_grid_key_blocks = n_kb - 1;
            const int64_t grid = int64_t(p.B) * p.H * (tail ? n_kb - 1 : n_kb);
            int ctas = 0;
            cudaError_t e = prepare_kernel<kKernel>(smem, kNumThreads, &ctas);
            if (e != cudaSuccess) return e;
            cudaLaunchAttribute attr;
            const cudaLaunchConfig_t cfg =
                launch_config(dim3(static_cast<unsigned>(grid)), dim3(kNumThreads), smem, stream, pdl_chain, attr);
            if ((e = cudaLaunchKernelEx(&cfg, kKernel, pk)) != cudaSuccess || !tail) return e;
            if constexpr (kTailQ == 16) {
                // one warp per (window, head) item at a time: about one item per warp of the device
                constexpr auto kTail = window_attn_bwd_kv_tail_kernel<Element>;
                int tail_ctas = 0;
                if ((e = prepare_kernel<kTail>(BwdKvTailLayout::kBytes, kNumThreads, &tail_ctas)) != cudaSuccess) return e;
                const int64_t items = int64_t(p.B) * p.H;
                const int64_t tail_grid = std::min<int64_t>((items + 3) / 4, int64_t(num_sms()) * std::max(tail_ctas, 1));
                cudaLaunchAttribute tattr;
                const cudaLaunchConfig_t tcfg = launch_config(dim3(static_cast<unsigned>(tail_grid)), dim3(kNumThreads),
                                                              BwdKvTailLayout::kBytes, stream, pdl_chain, tattr);
                return cudaLaunchKernelEx(&tcfg, kTail, p);
            }
            return e;
        };
        // the last query block as wide as the queries N leaves in it (rounded up to 16;
        // fwd_wgmma_tail_keys: 64 where FWA_WINDOW_WGMMA_TAIL=0), wgmma products without dropout
        if constexpr (kWgmma && !kDropout) err = dispatch_block_width(fwd_wgmma_tail_keys(p.N, p.Npad), run_kv);
        else err = run_kv(std::integral_constant<int, kTileM>{});
        if (err != cudaSuccess) return err;
    }
    {
        constexpr int kThreads = 256;
        const int64_t rows = int64_t(p.B) * p.H * p.N;
        cudaLaunchAttribute attr;
        const cudaLaunchConfig_t cfg = launch_config(dim3(static_cast<unsigned>((rows + kThreads - 1) / kThreads)),
                                                     dim3(kThreads), 0, stream, pdl_chain, attr);
        if ((err = cudaLaunchKernelEx(&cfg, window_attn_bwd_dsum_kernel<kThreads>, p)) != cudaSuccess) return err;
    }
    int q_ctas = 0;
    return bwd_q_side<Element, kHeadDim, kDropout, kWgmma>(p, stream, true, &q_ctas, assume_strip, pdl_chain);
}

template <typename Element, int kHeadDim, bool kWgmma>
cudaError_t launch_bwd_tiled_form(const BwdParams& p, cudaStream_t stream, int* ctas_per_sm, bool assume_strip) {
    return p.dropout.rng_state != nullptr
               ? launch_bwd_tiled_impl<Element, kHeadDim, true, kWgmma>(p, stream, ctas_per_sm, assume_strip)
               : launch_bwd_tiled_impl<Element, kHeadDim, false, kWgmma>(p, stream, ctas_per_sm, assume_strip);
}

// The wgmma form at head dim bucket 32 (d = 16, 24, 32: the tiles zero-fill columns >= d) where
// window_bwd_wgmma_enabled(), the mma.sync form otherwise.
template <typename Element, int kHeadDim>
cudaError_t launch_bwd_tiled(const BwdParams& p, cudaStream_t stream, int* ctas_per_sm = nullptr,
                             bool assume_strip = false) {
    if constexpr (kHeadDim == 32) {
        if (window_bwd_wgmma_enabled())
            return launch_bwd_tiled_form<Element, kHeadDim, true>(p, stream, ctas_per_sm, assume_strip);
    }
    return launch_bwd_tiled_form<Element, kHeadDim, false>(p, stream, ctas_per_sm, assume_strip);
}

}  // namespace fwa
