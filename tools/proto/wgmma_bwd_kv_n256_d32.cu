// Prototype (not part of the package; written and run in session 22, H100): the key side of
// the window backward at N = 256, d = 32 (dk, dv) on Hopper warpgroup MMA, to measure what a wgmma
// port of bwd_tiled_kernels.cuh's key-side kernel would reach before writing it into csrc/
// (benchmarks/NOTES.md, session 22 checklist item 1). Standalone: no torch, its own reference and
// CUDA-event timing (proto_harness.h's problem: V1, one bias+mask strip for every window).
//
//   P = exp(S - lse), S = q kᵀ · scale + bm;  dP = dout vᵀ;  dS = P (dP - D), D = rowsum(dout ∘ out)
//   dv = Pᵀ dout,  dk = scale · dSᵀ q
//
// One CTA = kGroups warpgroups on one 64-key block j of a chunk of windows (the bias+mask columns of
// the block, 256 queries x 64 keys fp32, loaded into shared memory once per CTA); warpgroup g takes
// the chunk's windows g, g + kGroups, ... Per window it copies k_j, v_j (64 rows), q and dout (256
// rows, 64-byte-swizzled tiles), lse and D, then per 64-query block i:
//   Sᵀ  (64 keys x 64 queries) = k_j q_iᵀ       2 wgmma m64n64k16, both operands K-major in smem
//   dPᵀ (64 x 64)              = v_j dout_iᵀ    2 wgmma m64n64k16
//   Pᵀ, dSᵀ elementwise in registers (each thread's keys are rows, its queries columns: lse, D per
//   column from shared memory, bm read transposed from the strip, conflict-free at pitch 68)
//   dv_j += Pᵀ dout_i, dk_j += dSᵀ q_i          4 + 4 wgmma m64n32k16, A = Pᵀ / dSᵀ packed to bf16 in
//                                               registers, B = dout_i / q_i read MN-major (transposed)
// so the products take 8 k16 steps of m64n64 and 8 of m64n32 per (key block, query block): no
// recomputation beyond the key side's own (the product's key side also runs on mma.sync). dk and dv
// are written in fp32 here (to check them tightly); the product would write its dtype.
//
// Build and run on the GPU machine (sm_90a):
//   nvcc -O3 -std=c++17 -arch=sm_90a --expt-relaxed-constexpr -Icsrc -Itools/proto \
//        tools/proto/wgmma_bwd_kv_n256_d32.cu -o /tmp/bkv && /tmp/bkv [windows]
// (-DPROTO_GROUPS=2: 2 groups; -DPROTO_KV2: variant 2 below, 2 warpgroups per window, double-buffered)
// It prints the max error of dk and dv against a float64 CPU reference on 4 windows (and the largest
// reference value), the count of unwritten (NaN-poisoned) outputs, and the median time per call, to
// compare with the product's key-side kernel at (1024, 6, 256) (6144 windows x heads;
// tools/kernel_breakdown.py --configs 2: window_attn_bwd_kv_kernel).
//
// Session 22 (H100, first run): right against float64 (dk max |err| 1.24e-3 at max |ref| 0.59, dv
// 2.45e-3 at 1.01: P and dS rounded to bf16), no unwritten outputs; W = 6144: 0.498 ms with 3
// groups, 0.539 with 2, against 0.732 ms for the product's mma.sync key-side kernel at
// (1024, 6, 256) in the same call (which also sums D's fixed-point partials and reads a strip per
// (head, window) slice). After that run the per-query-block work moved into kv_query_block (ptxas:
// 163 -> 146 registers, so the SASS differs from the timed one) and variant 2 was added (written
// offline): the next window's copies in flight during this one's products. Session 23 (run A, the
// refactored kernel): variant 1 0.502 ms (3 groups), variant 2 0.607 (slower). Not tried: issuing
// query block i + 1's S and dP before block i's dv / dk products. The product's key side took the
// wgmma products in its own CTA scheme (bwd_tiled_kernels.cuh, kWgmma: 0.643 ms for V2 at
// (1024, 6, 256)); this prototype's chunked scheme in the product was slower
// (tools/patches/window-bwd-kv-wg-SLOWER.patch).
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "kernels/wgmma.cuh"
#include "proto_bwd_block.cuh"
#include "proto_bwd_harness.h"
#include "proto_sw64.cuh"
#include "wgmma_proto_ops.inc"

using namespace fwa;
using proto::kmaj_desc;
using proto::mn_desc;

namespace {

#ifndef PROTO_GROUPS
#define PROTO_GROUPS 3
#endif
constexpr int kN = proto::kN, kD = proto::kD, kBK = 64, kThreads = 128, kGroups = PROTO_GROUPS;
constexpr int kKeyBlocks = kN / kBK;
constexpr int kBmPitch = kBK + 4;   // fp32 pitch of the transposed strip: banks 8 t4 + g, no conflicts
// 64-byte-swizzled tiles (proto_sw64.cuh).
constexpr uint32_t kKBytes = kBK * 64, kVBytes = kBK * 64, kQBytes = kN * 64, kOBytes = kN * 64;
constexpr uint32_t kVecBytes = kN * 4;   // lse (log2 units) or D of one window
constexpr uint32_t kGroupBytes = kKBytes + kVBytes + kQBytes + kOBytes + 2 * kVecBytes;   // 42 KB
static_assert(kGroupBytes % 1024 == 0, "per-group tiles stay 1024-aligned");

__device__ __forceinline__ void copy_vec(uint32_t dst, const float* src, int tid) {
    for (int c = tid; c < kN / 4; c += kThreads) cp_async_16(dst + c * 16, src + c * 4, 16);
}

struct BwdParams {
    const __nv_bfloat16 *q, *k, *v, *dout;   // (W, N, D) contiguous
    const float* bm;                          // (N, N), log2 units
    float *lse2, *dsum;                       // (W, N): log2-sum-exp2 of the log2 logits; rowsum(dout ∘ out)
    float *dk, *dv;                           // (W, N, D) fp32
    int W;
    float scale_log2, scale;
};

__device__ __forceinline__ void group_bar(int group) { asm volatile("bar.sync %0, %1;" ::"r"(group + 1), "n"(kThreads) : "memory"); }

// One 64-query block qb of a window for the warpgroup's 64 keys: Sᵀ, dPᵀ, Pᵀ, dSᵀ, then dv += Pᵀ dout_qb and
// dk += dSᵀ q_qb (unscaled). sK, sV: the key block's tiles; sQ, sO: the window's 256-row q / dout tiles.
__device__ __forceinline__ void kv_query_block(const BwdParams& p, uint32_t sK, uint32_t sV, uint32_t sQ, uint32_t sO,
                                               const float* lse_s, const float* dsum_s, const float* sBm, int qb,
                                               int warp, int g, int t4, float (&dk)[kD / 8][4], float (&dv)[kD / 8][4]) {
    float unused[8][4];   // (no dbias here)
    uint32_t pa[4][4], da[4][4];
    proto::kv_block_p_ds<false>(sK, sV, sQ, sO, lse_s, dsum_s, sBm, kBmPitch, qb, warp, g, t4, p.scale_log2, unused, pa, da);
    wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < 4; ++kk) wgmma_m64n32k16_rs_tb_bf16(dv, pa[kk], mn_desc(sO, qb * 64 + kk * 16), 1);
#pragma unroll
    for (int kk = 0; kk < 4; ++kk) wgmma_m64n32k16_rs_tb_bf16(dk, da[kk], mn_desc(sQ, qb * 64 + kk * 16), 1);
    wgmma_commit();
    wgmma_wait<0>();
    wgmma_fence_operand(dk);
    wgmma_fence_operand(dv);
}

// A warp's 16 key rows of dk (times scale) and dv from row `row0` (counted over all windows) on.
__device__ __forceinline__ void store_dk_dv(const BwdParams& p, const float (&dk)[kD / 8][4], const float (&dv)[kD / 8][4],
                                            int64_t row0, int g, int t4) {
    float* dkp = p.dk + row0 * kD;
    float* dvp = p.dv + row0 * kD;
#pragma unroll
    for (int r = 0; r < 2; ++r)
#pragma unroll
        for (int i = 0; i < kD / 8; ++i) {
            const int off = (g + 8 * r) * kD + i * 8 + 2 * t4;
            *reinterpret_cast<float2*>(dkp + off) = make_float2(dk[i][2 * r] * p.scale, dk[i][2 * r + 1] * p.scale);
            *reinterpret_cast<float2*>(dvp + off) = make_float2(dv[i][2 * r], dv[i][2 * r + 1]);
        }
}

__global__ void __launch_bounds__(kThreads * kGroups, 1) proto_bwd_kv_kernel(const BwdParams p) {
#if FWA_HAS_WGMMA
    extern __shared__ __align__(1024) unsigned char smem_raw[];
    const int group = threadIdx.x / kThreads;
    const uint32_t base = (smem_u32(smem_raw) + 1023u) & ~1023u;
    const uint32_t sK = base + group * kGroupBytes, sV = sK + kKBytes, sQ = sV + kVBytes, sO = sQ + kQBytes;
    const uint32_t sL = sO + kOBytes, sDs = sL + kVecBytes;
    unsigned char* const gbase = smem_raw + (base - smem_u32(smem_raw));
    const float* lse_s = reinterpret_cast<const float*>(gbase + (sL - base));
    const float* dsum_s = reinterpret_cast<const float*>(gbase + (sDs - base));
    float* sBm = reinterpret_cast<float*>(gbase + kGroups * kGroupBytes);   // [query][key of block j]

    const int tid = threadIdx.x % kThreads, warp = tid >> 5, lane = tid & 31, g = lane >> 2, t4 = lane & 3;
    const int j = blockIdx.x % kKeyBlocks;
    const int stride = gridDim.x / kKeyBlocks * kGroups;
    int w = blockIdx.x / kKeyBlocks * kGroups + group;

    // the strip's columns of key block j, transposed access later: sBm[q * pitch + key]
    for (int c = threadIdx.x; c < kN * (kBK / 4); c += kThreads * kGroups) {
        const int r = c / (kBK / 4), cc = (c % (kBK / 4)) * 4;
        cp_async_16(smem_u32(sBm + r * kBmPitch + cc), p.bm + r * kN + j * kBK + cc, 16);
    }
    cp_async_commit();
    cp_async_wait<0>();
    __syncthreads();

    for (; w < p.W; w += stride) {
        const int64_t wrow = int64_t(w) * kN;
        proto::copy_rows_sw64<kThreads>(sK, p.k + (wrow + j * kBK) * kD, kBK, tid);
        proto::copy_rows_sw64<kThreads>(sV, p.v + (wrow + j * kBK) * kD, kBK, tid);
        proto::copy_rows_sw64<kThreads>(sQ, p.q + wrow * kD, kN, tid);
        proto::copy_rows_sw64<kThreads>(sO, p.dout + wrow * kD, kN, tid);
        copy_vec(sL, p.lse2 + wrow, tid);
        copy_vec(sDs, p.dsum + wrow, tid);
        cp_async_commit();
        cp_async_wait<0>();
        fence_proxy_async_smem();
        group_bar(group);

        float dk[kD / 8][4], dv[kD / 8][4];
#pragma unroll
        for (int i = 0; i < kD / 8; ++i) dk[i][0] = dk[i][1] = dk[i][2] = dk[i][3] = dv[i][0] = dv[i][1] = dv[i][2] = dv[i][3] = 0.f;

#pragma unroll 1
        for (int qb = 0; qb < kN / 64; ++qb) kv_query_block(p, sK, sV, sQ, sO, lse_s, dsum_s, sBm, qb, warp, g, t4, dk, dv);
        group_bar(group);   // every warp's products are done: the tiles may be overwritten

        store_dk_dv(p, dk, dv, wrow + j * kBK + warp * 16, g, t4);
    }
#else
    __trap();
#endif
}


// Variant 2 (PROTO_KV2 in main): one CTA = 2 warpgroups on the same key block j and window, warpgroup g
// on query blocks 2 g and 2 g + 1, their dk / dv partials added in a fixed order through shared memory;
// the window's tiles double-buffered per CTA (the next window's copies in flight during this one's
// products), which variant 1 (each group waiting for its own copies) does not do.
constexpr int kThreads2 = 2 * kThreads;
constexpr uint32_t kXBytes2 = kThreads * 16 * 4;   // one warpgroup's dk or dv partial

__global__ void __launch_bounds__(kThreads2, 1) proto_bwd_kv2_kernel(const BwdParams p, int chunks) {
#if FWA_HAS_WGMMA
    extern __shared__ __align__(1024) unsigned char smem_raw[];
    const uint32_t base = (smem_u32(smem_raw) + 1023u) & ~1023u;
    unsigned char* const gbase = smem_raw + (base - smem_u32(smem_raw));
    // stage st at base + st * kGroupBytes: k_j, v_j, q, dout, lse, D (variant 1's per-group layout)
    constexpr uint32_t oK = 0, oV = kKBytes, oQ = oV + kVBytes, oO = oQ + kQBytes, oL = oO + kOBytes, oD = oL + kVecBytes;
    float* sXk = reinterpret_cast<float*>(gbase + 2 * kGroupBytes);
    float* sXv = sXk + kXBytes2 / 4;
    float* sBm = reinterpret_cast<float*>(gbase + 2 * kGroupBytes + 2 * kXBytes2);   // [query][key of block j]

    const int tid = threadIdx.x, wg = tid / kThreads, wtid = tid % kThreads;
    const int warp = wtid >> 5, lane = tid & 31, g = lane >> 2, t4 = lane & 3;
    const int j = blockIdx.x % kKeyBlocks, chunk = blockIdx.x / kKeyBlocks;

    for (int c = tid; c < kN * (kBK / 4); c += kThreads2) {
        const int r = c / (kBK / 4), cc = (c % (kBK / 4)) * 4;
        cp_async_16(smem_u32(sBm + r * kBmPitch + cc), p.bm + r * kN + j * kBK + cc, 16);
    }
    auto issue = [&](int w, int st) {
        const int64_t wrow = int64_t(w) * kN;
        const uint32_t s0 = base + st * kGroupBytes;
        proto::copy_rows_sw64<kThreads2>(s0 + oK, p.k + (wrow + j * kBK) * kD, kBK, tid);
        proto::copy_rows_sw64<kThreads2>(s0 + oV, p.v + (wrow + j * kBK) * kD, kBK, tid);
        proto::copy_rows_sw64<kThreads2>(s0 + oQ, p.q + wrow * kD, kN, tid);
        proto::copy_rows_sw64<kThreads2>(s0 + oO, p.dout + wrow * kD, kN, tid);
        if (tid < kN / 4) cp_async_16(s0 + oL + tid * 16, p.lse2 + wrow + tid * 4, 16);
        else if (tid < kN / 2) cp_async_16(s0 + oD + (tid - kN / 4) * 16, p.dsum + wrow + (tid - kN / 4) * 4, 16);
    };
    if (chunk < p.W) issue(chunk, 0);
    cp_async_commit();   // the strip and the first window

    int it = 0;
    for (int w = chunk; w < p.W; w += chunks, ++it) {
        const int st = it & 1;
        if (w + chunks < p.W) issue(w + chunks, st ^ 1);
        cp_async_commit();
        cp_async_wait<1>();   // this window's tiles (and the strip) landed; the next may be in flight
        fence_proxy_async_smem();
        __syncthreads();

        const uint32_t s0 = base + st * kGroupBytes;
        const float* lse_s = reinterpret_cast<const float*>(gbase + (s0 - base) + oL);
        const float* dsum_s = reinterpret_cast<const float*>(gbase + (s0 - base) + oD);
        float dk[kD / 8][4], dv[kD / 8][4];
#pragma unroll
        for (int i = 0; i < kD / 8; ++i) dk[i][0] = dk[i][1] = dk[i][2] = dk[i][3] = dv[i][0] = dv[i][1] = dv[i][2] = dv[i][3] = 0.f;
#pragma unroll 1
        for (int qb = 2 * wg; qb < 2 * wg + 2; ++qb)
            kv_query_block(p, s0 + oK, s0 + oV, s0 + oQ, s0 + oO, lse_s, dsum_s, sBm, qb, warp, g, t4, dk, dv);

        if (wg == 1) {
            proto::stash_partial<kThreads>(dk, sXk, wtid);
            proto::stash_partial<kThreads>(dv, sXv, wtid);
        }
        __syncthreads();   // also: every warp is done with this stage, which the next trip refills
        if (wg == 0) {
            proto::add_partial<kThreads>(dk, sXk, wtid);
            proto::add_partial<kThreads>(dv, sXv, wtid);
            store_dk_dv(p, dk, dv, int64_t(w) * kN + j * kBK + warp * 16, g, t4);
        }
        // sXk / sXv are rewritten only after the next trip's first __syncthreads, which warpgroup 0
        // reaches after these reads
    }
    cp_async_wait<0>();   // a CTA with no window still drains its strip copy
#else
    __trap();
#endif
}

}  // namespace

int main(int argc, char** argv) {
    using proto::check;
    const proto::Problem pr = proto::make_problem(argc > 1 ? std::atoi(argv[1]) : 6144);
    const int W = pr.W;
    const size_t elems = size_t(W) * kN * kD;

    const proto::BwdData bd = proto::make_bwd_data(pr);
    float *d_dk = proto::alloc_poisoned_f32(elems), *d_dv = proto::alloc_poisoned_f32(elems);
    BwdParams p{pr.dq, pr.dk, pr.dv, bd.d_do, pr.dbm, bd.d_lse2, bd.d_dsum, d_dk, d_dv, W, pr.scale * 1.4426950408889634f, pr.scale};

    const int sms = proto::sm_count();
#ifdef PROTO_KV2
    const size_t smem = 1024 + 2 * size_t(kGroupBytes) + 2 * kXBytes2 + size_t(kN) * kBmPitch * sizeof(float);
    const int ctas = proto::fit_kernel(proto_bwd_kv2_kernel, kThreads2, smem);
    const int chunks = std::max(1, std::min(sms * ctas / kKeyBlocks, W));
    const int grid = chunks * kKeyBlocks;
    std::printf("variant 2 (2 warpgroups per window, double-buffered): smem %zu B, %d CTAs/SM, grid %d\n", smem, ctas, grid);
    auto launch = [&] { proto_bwd_kv2_kernel<<<grid, kThreads2, smem>>>(p, chunks); };
#else
    const size_t smem = 1024 + size_t(kGroups) * kGroupBytes + size_t(kN) * kBmPitch * sizeof(float);
    const int ctas = proto::fit_kernel(proto_bwd_kv_kernel, kThreads * kGroups, smem);
    const int grid = std::max(kKeyBlocks, std::min(sms * ctas / kKeyBlocks * kKeyBlocks, (W + kGroups - 1) / kGroups * kKeyBlocks));
    std::printf("groups %d: smem %zu B, %d CTAs/SM, grid %d\n", kGroups, smem, ctas, grid);
    auto launch = [&] { proto_bwd_kv_kernel<<<grid, kThreads * kGroups, smem>>>(p); };
#endif

    launch();
    check(cudaGetLastError(), "launch");
    check(cudaDeviceSynchronize(), "run");

    std::vector<float> hdk(elems), hdv(elems);
    check(cudaMemcpy(hdk.data(), d_dk, elems * 4, cudaMemcpyDeviceToHost), "copy dk");
    check(cudaMemcpy(hdv.data(), d_dv, elems * 4, cudaMemcpyDeviceToHost), "copy dv");
    std::printf("NaN (unwritten) outputs: %zu of %zu\n", proto::count_nan(hdk) + proto::count_nan(hdv), 2 * elems);

    proto::check_bwd(pr, bd, nullptr, &hdk, &hdv, nullptr, 0);
    proto::time_and_print(W, launch);
    return 0;
}
