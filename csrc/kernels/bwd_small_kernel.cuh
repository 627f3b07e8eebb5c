// Window-attention backward for N <= 64 (one 64x64 tile per window), fp16/bf16, mma.sync.
//
// For each window the whole backward is done on chip from q, k, v and dout:
//   P = softmax(S) (recomputed), dP = dout vᵀ, D_i = Σ_j P_ij dP_ij (= dout_i · out_i),
//   dS = P ∘ (dP - D)
//   dv = Pᵀ dout, dq = f'(dS k), dk = f'(dSᵀ q), dbias += dS, dalpha += Σ dS ∘ cos
// (f' includes the scale and, for V2, the backward of the normalisation). Nothing of size N² per
// window leaves the chip.
//
// Work split: a CTA owns (head h, bm window w) and a chunk of the windows that share that bias +
// mask slice; dbias for head h is accumulated in registers across the chunk and written once as a
// per-CTA partial (summed in a fixed order later: deterministic). Warps own 16 query rows for
// S/dP/dq and 16 key rows for dk/dv; P and dS go through shared memory between the two phases.
#pragma once
#include <type_traits>
#include "dropout.cuh"
#include "launch_utils.h"
#include "warp_mma.cuh"

namespace fwa {

constexpr int kPPitch = kTileN + 8;   // smem pitch (elements) of the P and dS tiles
// fp32 pitch of the bm tile: 68 keeps its float2 reads at the minimum 2 wavefronts (the rows of a
// warp's read start 4 banks apart) and 16-byte rows for cp.async. Its rows' 4 padding floats hold
// the key inverse norms: key j's at float (j / 4) * 68 + 64 + j % 4 of the tile (rows 0-15), so
// keys 2i and 2i + 1 stay one float2.
constexpr int kBwdSmallBmPitch = kTileN + 4;

template <int kHeadDim> struct BwdSmallSmem {
    static constexpr int kTile = TileShape<kHeadDim>::kElems;
    // q, k, v, dout: 2 stages; P and dS; bm tile (64 x 68 fp32). The key inverse norms live in the
    // bm tile's padding and the dalpha reduction in the bm tile after the last window (see the
    // kernel): no other shared memory, static or dynamic. At d <= 32 that is 76800 bytes, so
    // 3 CTAs per SM on an H100 (3 x (76800 + 1 KB reserved) = 228 KB, the SM's whole shared
    // memory; with 78336 bytes and a 16-byte static array it held 2, ncu session 15 run 11).
    static constexpr size_t kBytes = size_t(8) * kTile * 2 + size_t(2) * kTileM * kPPitch * 2 +
                                     size_t(kTileM) * kBwdSmallBmPitch * sizeof(float);
};

// Minimum CTAs per SM for __launch_bounds__. At d >= 64 an explicit 1: given the thread count only,
// ptxas capped the kernel at 168 registers and spilled 20 bytes at d = 64 (shared memory allows 2
// CTAs there anyway); with 1 it takes 204 (197 with dropout) and spills nothing (session 15 run 13:
// fwd+bwd (1024, 4, 64, 64) 0.346 -> 0.332 ms). At d <= 32, 3: at most 168 registers, so that the
// registers allow the 3 CTAs per SM that the shared memory allows (ptxas: 168 registers with 12
// bytes of spill, 20 with dropout; uncapped it takes 175-176, 2 CTAs). Measured (H100, bf16,
// session 22; ncu: shared-memory and register limits both 3 CTAs): the kernel 0.223-0.225 ->
// 0.195-0.196 ms at (4096, 3, 64), 0.164 -> 0.140 at V1 (4096, 3, 49), 0.062-0.063 -> 0.054 at
// (256, 12, 64); d = 64 (its SASS changed with the kinv layout) 0.138-0.139 -> 0.139.
template <int kHeadDim> constexpr int bwd_small_min_blocks() { return kHeadDim <= 32 ? 3 : 1; }

template <typename Element, int kHeadDim, bool kDropout>
__global__ void __launch_bounds__(kNumThreads, bwd_small_min_blocks<kHeadDim>())
window_attn_bwd_small_kernel(const BwdParams p) {
    // Hoisted tile-load addressing at d <= 32 (same 167 registers); at d = 64 it took 168 -> 232.
    constexpr bool kHoistLoads = kHeadDim <= 32;
    using Tr = ElementTraits<Element>;
    constexpr int kTile = TileShape<kHeadDim>::kElems;
    constexpr int kNT = kTileN / 8;
    constexpr int kDT = kHeadDim / 8;
    constexpr int kBmPitch = kBwdSmallBmPitch;

    extern __shared__ __align__(16) unsigned char smem_raw[];
    Element* sQ = reinterpret_cast<Element*>(smem_raw);
    Element* sK = sQ + 2 * kTile;
    Element* sV = sK + 2 * kTile;
    Element* sO = sV + 2 * kTile;   // dout
    Element* sP = sO + 2 * kTile;
    Element* sG = sP + kTileM * kPPitch;
    float* sBm = reinterpret_cast<float*>(sG + kTileM * kPPitch);
    // Key inverse norms (V2), one buffer: kinv[grouped4_index<kBwdSmallBmPitch>(j)], in the bm
    // tile's padding (never written by its copy nor read as bias+mask). Written after each
    // window's first barrier, last read before the next window's.
    float* kinv = sBm + kTileN;

    const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
    const int g = lane >> 2, t4 = lane & 3;

    const WindowCtaWork cta = window_chunk_work(p, blockIdx.x, 0);
    const int h = cta.h, w = cta.w, chunk_id = cta.chunk_id, t_begin = cta.t_begin, t_end = cta.t_end;
    const int n_items = max(t_end - t_begin, 0);

    const int N = p.N, d = p.d;
    const bool cosine = p.logit_scale != nullptr;
    const bool has_bm = p.bm != nullptr;
    const float alpha = cosine ? logit_scale_alpha(p.logit_scale, h) : p.scale;
    DropoutState drop{};
    if constexpr (kDropout) drop = load_dropout_state(p.dropout);

    const Element* q_base = static_cast<const Element*>(p.q.ptr) + h * p.q.head_stride;
    const Element* k_base = static_cast<const Element*>(p.k.ptr) + h * p.k.head_stride;
    const Element* v_base = static_cast<const Element*>(p.v.ptr) + h * p.v.head_stride;
    const Element* o_base = static_cast<const Element*>(p.dout.ptr) + h * p.dout.head_stride;

    auto window_of = [&](int ti) -> int64_t { return w + int64_t(p.nW) * (t_begin + ti); };
    auto issue_loads = [&](int item) {
        const int64_t b = window_of(item);
        const int st = (item & 1) * kTile;
        load_tile_async_form<kHoistLoads, Element, kHeadDim>(sQ + st, q_base + b * p.q.batch_stride, p.q.row_stride, 0, N, d, tid);
        load_tile_async_form<kHoistLoads, Element, kHeadDim>(sK + st, k_base + b * p.k.batch_stride, p.k.row_stride, 0, N, d, tid);
        load_tile_async_form<kHoistLoads, Element, kHeadDim>(sV + st, v_base + b * p.v.batch_stride, p.v.row_stride, 0, N, d, tid);
        load_tile_async_form<kHoistLoads, Element, kHeadDim>(sO + st, o_base + b * p.dout.batch_stride, p.dout.row_stride, 0, N, d, tid);
    };

    if (has_bm) {
        const float* bm_slice = p.bm + w * p.bm_win_stride + h * p.bm_head_stride;
        for (int c = tid; c < kTileM * (kTileN / 4); c += kNumThreads) {
            const int r = c / (kTileN / 4), cc = c - r * (kTileN / 4);
            cp_async_16(smem_u32(sBm + r * kBmPitch + cc * 4), bm_slice + r * p.Npad + cc * 4, 16);
        }
    }
    if (n_items > 0) issue_loads(0);
    cp_async_commit();

    float dbias_acc[kNT][4];
#pragma unroll
    for (int i = 0; i < kNT; ++i) dbias_acc[i][0] = dbias_acc[i][1] = dbias_acc[i][2] = dbias_acc[i][3] = 0.f;
    float dalpha_acc = 0.f;

    for (int item = 0; item < n_items; ++item) {
        cp_async_wait<0>();
        __syncthreads();
        if (item + 1 < n_items) issue_loads(item + 1);
        cp_async_commit();

        const int64_t b = window_of(item);
        const int st = (item & 1) * kTile;
        const Element* tQ = sQ + st;
        const Element* tK = sK + st;
        const Element* tV = sV + st;
        const Element* tO = sO + st;
        if (cosine) tile_row_inv_norms<Element, kHeadDim, false, kBwdSmallBmPitch>(tK, kinv, tid);

        // S = q kᵀ and dP = dout vᵀ for this warp's 16 query rows.
        float s[kNT][4], dp[kNT][4];
        zero_acc(s);
        zero_acc(dp);
        float ss0 = 0.f, ss1 = 0.f;
        warp_mma_abt<kHeadDim>(s, tQ, warp * 16, tK, lane, [&](const uint32_t (&a)[4]) {
            if (cosine) accumulate_sumsq<Element>(a, ss0, ss1);
        });
        warp_mma_abt<kHeadDim>(dp, tO, warp * 16, tV, lane);
        // Attention dropout: out = (P o Z) v, so the gradient reaching P is dP o Z (used for D,
        // dS and dalpha below) and dv takes (P o Z)ᵀ dout.
        uint32_t keep_bits = 0;
        if constexpr (kDropout) {
            keep_bits = dropout_keep_bits<kNT>(drop, b * p.H + h, warp, 0, lane);
            dropout_apply(dp, keep_bits, drop.scale);
        }
        float q_inv[2] = {1.f, 1.f};
        if (cosine) {
            q_inv[0] = inv_norm_from_sumsq(quad_sum(ss0));
            q_inv[1] = inv_norm_from_sumsq(quad_sum(ss1));
            __syncthreads();   // key norms
        }

        // P, D, dS (kept in s), dbias. The whole row is on chip, so P is renormalised here from
        // the logits (max, sum) instead of exp(S - lse): exact where softmax is degenerate (N = 1,
        // single surviving key: P = 1 and dS = 0 exactly) and free of the rounding of a large lse.
        // Instantiated per (cosine, bias+mask) pair and picked once per window (a branch per
        // element on the runtime flags otherwise; see the tiled kernels).
        auto row_softmax_grad = [&](auto cosine_tag, auto bm_tag) {
            constexpr bool kCos = decltype(cosine_tag)::value;
            constexpr bool kBm = decltype(bm_tag)::value;
#pragma unroll
            for (int r = 0; r < 2; ++r) {
                const int row = warp * 16 + g + 8 * r;
                const float al = alpha * kLog2e;
                const float* bm_row = sBm + row * kBmPitch;
                auto logit = [&](float c, int col, float bmv) {
                    if constexpr (kBm) return fmaf(c, al, bmv);
                    else return col < N ? c * al : -INFINITY;
                };
                // Pass 1: s <- cos (V2) or q·k (V1), row max of the logits.
                float mx = -INFINITY;
#pragma unroll
                for (int nt = 0; nt < kNT; ++nt) {
                    const int c = nt * 8 + 2 * t4;
                    float c0 = s[nt][2 * r], c1 = s[nt][2 * r + 1];
                    if constexpr (kCos) {
                        const float2 kf = *reinterpret_cast<const float2*>(kinv + grouped4_index<kBwdSmallBmPitch>(c));
                        c0 *= q_inv[r] * kf.x;
                        c1 *= q_inv[r] * kf.y;
                    }
                    s[nt][2 * r] = c0;
                    s[nt][2 * r + 1] = c1;
                    const float2 bb = kBm ? *reinterpret_cast<const float2*>(bm_row + c) : make_float2(0.f, 0.f);
                    mx = fmaxf(mx, fmaxf(logit(c0, c, bb.x), logit(c1, c + 1, bb.y)));
                }
                mx = quad_max(mx);
                const float m_use = mx == -INFINITY ? 0.f : mx;
                // Pass 2: unnormalised p, its sum, Σ p dP, and for dalpha Σ p dP cos, Σ p cos
                // (dalpha = Σ_j dS_ij cos_ij = Σ_j P dP cos - D Σ_j P cos, kept in fp32: rounding dS
                // to 16 bits first would cost this heavily cancelling sum its accuracy).
                float psum = 0.f, dsum = 0.f, pdc = 0.f, pc = 0.f;
#pragma unroll
                for (int nt = 0; nt < kNT; ++nt) {
                    const int c = nt * 8 + 2 * t4;
                    const float c0 = s[nt][2 * r], c1 = s[nt][2 * r + 1];
                    const float2 bb = kBm ? *reinterpret_cast<const float2*>(bm_row + c) : make_float2(0.f, 0.f);
                    const float p0 = fast_exp2(logit(c0, c, bb.x) - m_use);
                    const float p1 = fast_exp2(logit(c1, c + 1, bb.y) - m_use);
                    s[nt][2 * r] = p0;
                    s[nt][2 * r + 1] = p1;
                    psum += p0 + p1;
                    const float pd0 = p0 * dp[nt][2 * r], pd1 = p1 * dp[nt][2 * r + 1];
                    dsum += pd0 + pd1;
                    if constexpr (kCos) {
                        pdc = fmaf(pd0, c0, fmaf(pd1, c1, pdc));
                        pc = fmaf(p0, c0, fmaf(p1, c1, pc));
                    }
                }
                const float l = quad_sum(psum);
                // Rows past N (zero q and dout) and rows whose logits are all -inf get P = 0.
                const float inv = (row < N && l != 0.f) ? 1.f / l : 0.f;   // NaN l propagates
                const float D = quad_sum(dsum) * inv;
                if constexpr (kCos) {
                    // __fmul_rn: no FMA contraction, so that the two terms cancel exactly when they
                    // are equal (N = 1, one surviving key: dS = 0, dalpha must be 0).
                    const float contrib = __fsub_rn(quad_sum(pdc), __fmul_rn(D, quad_sum(pc))) * inv;
                    if (t4 == 0) dalpha_acc += contrib;
                }
                // Pass 3: P = p / l, dS = P (dP - D).
#pragma unroll
                for (int nt = 0; nt < kNT; ++nt) {
#pragma unroll
                    for (int e = 0; e < 2; ++e) {
                        const float pn = s[nt][2 * r + e] * inv;
                        s[nt][2 * r + e] = pn;
                        const float gs = pn * (dp[nt][2 * r + e] - D);
                        dp[nt][2 * r + e] = gs;
                        dbias_acc[nt][2 * r + e] += gs;
                    }
                }
            }
        };
        dispatch_flag_pair(cosine, has_bm, row_softmax_grad);
        // dS (in dp) is final; P becomes P o Z for dv.
        if constexpr (kDropout) dropout_apply(s, keep_bits, drop.scale);
        const float grad_f = alpha;   // applied to dq', dk' in fp32 by the epilogues
        // P and dS·(1/||q_i||) to shared memory for the key-side products.
#pragma unroll
        for (int nt = 0; nt < kNT; ++nt) {
#pragma unroll
            for (int r = 0; r < 2; ++r) {
                const int row = warp * 16 + g + 8 * r, c = nt * 8 + 2 * t4;
                *reinterpret_cast<uint32_t*>(sP + row * kPPitch + c) =
                    Tr::pack(s[nt][2 * r], s[nt][2 * r + 1]);
                *reinterpret_cast<uint32_t*>(sG + row * kPPitch + c) =
                    Tr::pack(dp[nt][2 * r] * q_inv[r], dp[nt][2 * r + 1] * q_inv[r]);
            }
        }

        // dq' = (dS · diag(1/||k||)) k for this warp's rows; V1 dq = scale dq',
        // V2 dq = alpha/||q|| (dq' - q̂ <q̂, dq'>).
        {
            float dq[kDT][4];
            zero_acc(dq);
            warp_mma_pb<kHeadDim, Element, kBwdSmallBmPitch>(dq, dp, cosine ? kinv : nullptr, tK, lane);
            warp_store_grad_rows<kHeadDim>(
                dq, cosine, tQ, warp * 16, q_inv, grad_f,
                static_cast<Element*>(p.dq.ptr) + b * p.dq.batch_stride + h * p.dq.head_stride,
                p.dq.row_stride, warp * 16, N, d, lane);
        }
        __syncthreads();   // P and dS tiles complete

        // Key side: this warp's 16 keys. dv = Pᵀ dout, dk' = (diag(1/||q||) dS)ᵀ q.
        const int key = warp * 16;
#pragma unroll
        for (int which = 0; which < 2; ++which) {
            const Element* sA = which == 0 ? sP : sG;
            const Element* sB = which == 0 ? tO : tQ;
            float acc[kDT][4];
            zero_acc(acc);
#pragma unroll
            for (int kq = 0; kq < kTileM / 16; ++kq) {
                uint32_t a[4];
                load_a_frag_trans<kPPitch>(sA, key, kq * 16, lane, a);
#pragma unroll
                for (int dd = 0; dd < kHeadDim / 16; ++dd) {
                    uint32_t bf[4];
                    load_b_frag_kn<kHeadDim>(sB, kq * 16, dd * 16, lane, bf);
                    mma_16816<Element>(acc[2 * dd], a, bf[0], bf[1]);
                    mma_16816<Element>(acc[2 * dd + 1], a, bf[2], bf[3]);
                }
            }
            // dv = acc; dk: V1 scale dk', V2 alpha/||k|| (dk' - k̂ <k̂, dk'>).
            const TensorRef& dst = which == 0 ? p.dv : p.dk;
            const float k_inv[2] = {cosine ? kinv[grouped4_index<kBwdSmallBmPitch>(key + (lane >> 2))] : 1.f,
                                    cosine ? kinv[grouped4_index<kBwdSmallBmPitch>(key + (lane >> 2) + 8)] : 1.f};
            warp_store_grad_rows<kHeadDim>(
                acc, which == 1 && cosine, tK, key, k_inv, which == 1 ? grad_f : 1.f,
                static_cast<Element*>(dst.ptr) + b * dst.batch_stride + h * dst.head_stride,
                dst.row_stride, key, N, d, lane);
        }
    }

    // Per-CTA partials: dbias rows/cols of this CTA's tile, dalpha.
    const int partial = w * p.n_chunks + chunk_id;
    if (p.dbias_partial != nullptr) {
        float* dst = p.dbias_partial + ((int64_t(h) * p.nW * p.n_chunks + partial) * p.Npad) * p.Npad;
#pragma unroll
        for (int nt = 0; nt < kNT; ++nt)
#pragma unroll
            for (int r = 0; r < 2; ++r) {
                const int row = warp * 16 + g + 8 * r, c = nt * 8 + 2 * t4;
                *reinterpret_cast<float2*>(dst + row * p.Npad + c) =
                    make_float2(dbias_acc[nt][2 * r], dbias_acc[nt][2 * r + 1]);
            }
    }
    if (cosine) {
        // The bm tile is free: its last reads (the last window's softmax) precede that window's
        // "P and dS tiles complete" barrier, which every warp has passed; and its copy has landed
        // (waited for at the first window's top; a CTA with no window waits here).
        float* red = sBm;
        cp_async_wait<0>();
        __syncthreads();
        const float v = warp_sum(dalpha_acc);
        if (lane == 0) red[warp] = v;
        __syncthreads();
        if (tid == 0) {
            float tot = 0.f;
            for (int i = 0; i < kNumThreads / 32; ++i) tot += red[i];
            p.dalpha_partial[int64_t(h) * p.nW * p.n_chunks + partial] = tot;
        }
    }
}

template <typename Element, int kHeadDim, bool kDropout>
cudaError_t launch_bwd_small_impl(const BwdParams& p, cudaStream_t stream, int* ctas_per_sm) {
    const size_t smem = BwdSmallSmem<kHeadDim>::kBytes;
    int ctas = 0;
    cudaError_t err = prepare_kernel<window_attn_bwd_small_kernel<Element, kHeadDim, kDropout>>(smem, kNumThreads, &ctas);
    if (err != cudaSuccess || ctas_per_sm != nullptr) {
        if (ctas_per_sm) *ctas_per_sm = ctas;
        return err;
    }
    const int64_t grid = int64_t(p.H) * p.nW * p.n_chunks;
    if (grid == 0) return cudaSuccess;
    window_attn_bwd_small_kernel<Element, kHeadDim, kDropout><<<static_cast<unsigned>(grid), kNumThreads, smem, stream>>>(p);
    return cudaGetLastError();
}

template <typename Element, int kHeadDim>
cudaError_t launch_bwd_small(const BwdParams& p, cudaStream_t stream, int* ctas_per_sm = nullptr) {
    return p.dropout.rng_state != nullptr ? launch_bwd_small_impl<Element, kHeadDim, true>(p, stream, ctas_per_sm)
                                          : launch_bwd_small_impl<Element, kHeadDim, false>(p, stream, ctas_per_sm);
}

}  // namespace fwa
