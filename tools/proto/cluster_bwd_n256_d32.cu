// Prototype (not part of the package; written in session 29): the whole window backward at N = 256,
// d = 32 (dq, dk, dv and the bias gradient) in ONE kernel on Hopper warpgroup MMA, with thread block
// clusters, to measure what fusing the product's key side and query side would reach
// (benchmarks/NOTES.md, session 29). Standalone: no torch, its own reference and CUDA-event timing
// (proto_bwd_harness.h: V1, one bias+mask strip for every window, lse and D from a plain GPU kernel).
//
//   P = exp(S - lse), S = q kᵀ · scale + bm;  dS = P (dout vᵀ - D)
//   dv = Pᵀ dout,  dk = scale · dSᵀ q,  dq = scale · dS k,  dbias = Σ_windows dS
//
// Why a cluster: the product runs two kernels (key side: dk, dv; query side: dq, dbias) that both
// recompute S, P and dP (7 products of 64 x 64 x 32 per block pair, the exponentials twice). One CTA
// cannot own a whole window and also accumulate its bias gradient over many windows on chip (the
// 256 x 256 fp32 dbias alone is 256 KB: every register of an SM), and dq summed across CTAs would
// need atomics (not deterministic) or a global round trip. A cluster of 4 CTAs owns a window:
// CTA j (cluster rank) takes key block j (64 keys) against all 256 queries, so
//   - dk_j, dv_j are its own (its 2 warpgroups' partials added in a fixed order through smem),
//   - the dbias columns of key block j stay in its registers over all of the cluster's windows,
//   - dq of query block i is the sum of 4 partials, one per CTA: CTA j writes its partial into
//     CTA i's shared memory (slot j, distributed shared memory), and after a cluster barrier CTA i
//     adds slots 0..3 in that order and stores dq: deterministic, no atomics.
// Per (key block j, query block i), warpgroup i / 2 of CTA j:
//   Sᵀ, dPᵀ (64 keys x 64 queries)   2 + 2 wgmma m64n64k16 (k_j / v_j against q_i / dout_i, K-major)
//   Pᵀ, dSᵀ in registers; dbias[i][j] += dSᵀ (fp32, in registers over all windows)
//   dv_j += Pᵀ dout_i, dk_j += dSᵀ q_i   4 + 4 wgmma m64n32k16, A from registers, B MN-major
//   dS (bf16) to shared memory through stmatrix .trans (queries as rows, 64-byte swizzle), then
//   dq_i,j = dS k_j                    4 wgmma m64n32k16, A K-major from smem, B = k_j MN-major
// so 5 products per block pair instead of 7, and one exponential per element instead of two.
// The window's tiles (k_j, v_j: 4 KB each; q, dout: 16 KB each; lse, D) are double-buffered.
// Cluster barriers per window: (A) after every dq partial was written (release / acquire), then each
// CTA sums its slots; (B) after the slots were read, waited for just before the next window's first
// remote write, so that the wait overlaps that window's first block.
//
// Build and run on the GPU machine (sm_90a):
//   nvcc -O3 -std=c++17 -arch=sm_90a --expt-relaxed-constexpr -Icsrc -Itools/proto \
//        tools/proto/cluster_bwd_n256_d32.cu -o /tmp/bf && /tmp/bf [windows]
// It prints the max error of dq, dk, dv against a float64 reference on 4 windows, for W <= 128 of the
// summed dbias partials against the float64 sum over all windows, the unwritten (NaN-poisoned)
// outputs, and the median time per call, to compare with the key-side and query-side prototypes
// (wgmma_bwd_kv_n256_d32.cu: 0.50 ms, wgmma_bwd_q_n256_d32.cu: 0.385 ms at W = 6144, session 23)
// and the product's two kernels at (1024, 6, 256) (0.63 + 0.49 ms for V2, session 28).
//
// Session 29 (H100, runs A and B; benchmarks/results/session29/): right against float64 on its first
// run (dq 1.5e-3 at max |ref| 0.51, dk 1.3e-3, dv 2.6e-3, summed dbias 1.9e-6 at 5.1, as the two
// prototypes; dq bitwise equal on a rerun), 248 registers, no spill, 30 clusters of 4 active
// (120 SMs). But SLOWER than the two kernels it replaces: W = 6144 1.27-1.28 ms against 0.50 (key
// side) + 0.39 (query side) in the same call. Run B, the same kernel with parts removed (times only):
// without the remote stores 0.94 ms (the st.shared::cluster of the dq partials: 0.34 ms), without
// dq at all 0.93 (the dS staging and the dq product cost ~nothing), without dq and the cluster
// barriers 0.69-0.70 (the barriers and the lockstep they force: 0.23 ms), without the dbias sums
// too 0.68. So even with free cross-CTA traffic the base, 2 warpgroups per window at 248 registers
// (8 warps per SM), runs 0.69 ms where the key-side prototype's 3 independent warpgroups run 0.50:
// fusing saves products but the registers it needs (dbias 64, dk / dv / dq 48) cost the SM the
// parallelism that hides the latency. Not pursued; the product keeps its two kernels.
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

using namespace fwa;
using proto::kmaj_desc;
using proto::mn_desc;

namespace {

constexpr int kN = proto::kN, kD = proto::kD, kBK = 64, kWgThreads = 128, kThreads = 2 * kWgThreads;
constexpr int kCluster = kN / kBK;   // 4 CTAs: key blocks
constexpr int kBmPitch = kBK + 4;    // fp32 pitch of the transposed strip (as the key-side prototype)
constexpr uint32_t kKBytes = kBK * 64, kVBytes = kBK * 64, kQBytes = kN * 64, kOBytes = kN * 64, kVecBytes = kN * 4;
// one stage (window): k_j, v_j, q, dout, lse, D
constexpr uint32_t oK = 0, oV = kKBytes, oQ = oV + kVBytes, oO = oQ + kQBytes, oL = oO + kOBytes, oD = oL + kVecBytes;
constexpr uint32_t kStageBytes = oD + kVecBytes;
static_assert(kStageBytes % 1024 == 0, "stages stay 1024-aligned");
constexpr uint32_t kPanelBytes = 64 * 64;          // 64 query rows x 32 keys (bf16), 64-byte swizzle
constexpr uint32_t kDsBytes = 2 * kPanelBytes;     // one warpgroup's dS block (64 queries x 64 keys)
constexpr uint32_t kXBytes = kWgThreads * 16 * 4;  // one warpgroup's dv partial (dk: in its dS block)
constexpr uint32_t kSlotBytes = 64 * kD * 4;       // one key block's dq partial of this CTA's query block
constexpr uint32_t oDs = 2 * kStageBytes, oX = oDs + 2 * kDsBytes, oSlot = oX + 2 * kXBytes;
static_assert(kDsBytes == kXBytes, "a dS block holds one warpgroup's dk partial");
constexpr uint32_t oBm = oSlot + kCluster * kSlotBytes;
constexpr size_t kSmemBytes = 1024 + oBm + size_t(kN) * kBmPitch * sizeof(float);

struct FusedParams {
    const __nv_bfloat16 *q, *k, *v, *dout;   // (W, N, D) contiguous
    const float* bm;                          // (N, N), log2 units
    const float *lse2, *dsum;                 // (W, N)
    float *dq, *dk, *dv;                      // (W, N, D) fp32
    float* dbias_part;                        // (clusters, N, N) fp32: cluster c's sum over its windows
    int W, clusters;
    float scale_log2, scale;
};

__device__ __forceinline__ uint32_t cluster_rank() {
    uint32_t r;
    asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
    return r;
}
// Timing experiments (wrong results): -DPROTO_NO_SYNC drops the cluster barriers, -DPROTO_NO_DQ the dS
// staging, the dq product and the remote stores, -DPROTO_NO_REMOTE the remote stores only, -DPROTO_NO_DBIAS the bias-gradient sums.
#ifndef PROTO_NO_SYNC
__device__ __forceinline__ void cluster_arrive() { asm volatile("barrier.cluster.arrive.release.aligned;" ::: "memory"); }
__device__ __forceinline__ void cluster_wait() { asm volatile("barrier.cluster.wait.acquire.aligned;" ::: "memory"); }
#else
__device__ __forceinline__ void cluster_arrive() {}
__device__ __forceinline__ void cluster_wait() {}
#endif
// The address of the same shared-memory location in cluster CTA `rank` (shared::cluster window).
__device__ __forceinline__ uint32_t map_to_rank(uint32_t addr, uint32_t rank) {
    uint32_t r;
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(r) : "r"(addr), "r"(rank));
    return r;
}
__device__ __forceinline__ void st_cluster_f2(uint32_t addr, float a, float b) {
    asm volatile("st.shared::cluster.v2.f32 [%0], {%1, %2};" ::"r"(addr), "f"(a), "f"(b) : "memory");
}
// Four 8 x 8 b16 matrices (each register: the mma fragment of one), stored transposed: lanes
// 8 i .. 8 i + 7 give the addresses of matrix i's rows in memory (= its source columns).
__device__ __forceinline__ void stmatrix_x4_trans(uint32_t addr, uint32_t r0, uint32_t r1, uint32_t r2, uint32_t r3) {
    asm volatile("stmatrix.sync.aligned.m8n8.x4.trans.shared.b16 [%0], {%1, %2, %3, %4};" ::"r"(addr), "r"(r0), "r"(r1),
                 "r"(r2), "r"(r3)
                 : "memory");
}
__device__ __forceinline__ void wg_bar(int wg) { asm volatile("bar.sync %0, %1;" ::"r"(wg + 1), "n"(kWgThreads) : "memory"); }

// D(64 x 32) (+)= A(64 x 16, smem, K-major) * B(16 x 32, smem, MN-major: transposed on read)
__device__ __forceinline__ void wgmma_m64n32k16_ss_tb_bf16(float (&d)[4][4], uint64_t desc_a, uint64_t desc_b, int accumulate) {
#if FWA_HAS_WGMMA
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %18, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n32k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, "
        "%13, %14, %15}, %16, %17, p, 1, 1, 0, 1;\n}\n"
        : "+f"(d[0][0]), "+f"(d[0][1]), "+f"(d[0][2]), "+f"(d[0][3]), "+f"(d[1][0]), "+f"(d[1][1]), "+f"(d[1][2]),
          "+f"(d[1][3]), "+f"(d[2][0]), "+f"(d[2][1]), "+f"(d[2][2]), "+f"(d[2][3]), "+f"(d[3][0]), "+f"(d[3][1]),
          "+f"(d[3][2]), "+f"(d[3][3])
        : "l"(desc_a), "l"(desc_b), "r"(accumulate));
#else
    __trap();
#endif
}

// One (key block j, query block qb) pair of a window for the warpgroup: dbias (this pair's 64 x 64
// fp32 columns) += dSᵀ, dk += dSᵀ q_qb, dv += Pᵀ dout_qb (unscaled), and dq = dS k_j (unscaled: the
// partial of query block qb from key block j). sK, sV: the key block's tiles; sQ, sO: the window's
// 256-row q / dout tiles; sDs: the warpgroup's dS staging block.
__device__ __forceinline__ void fused_block(const FusedParams& p, uint32_t sK, uint32_t sV, uint32_t sQ, uint32_t sO,
                                            uint32_t sDs, const float* lse_s, const float* dsum_s, const float* sBm, int qb,
                                            int wg, int warp, int lane, int g, int t4, bool first, float (&db)[8][4],
                                            float (&dk)[kD / 8][4], float (&dv)[kD / 8][4], float (&dq)[kD / 8][4]) {
#ifdef PROTO_NO_DBIAS
    constexpr bool kDbias = false;
#else
    constexpr bool kDbias = true;
#endif
    uint32_t pa[4][4], da[4][4];
    proto::kv_block_p_ds<kDbias>(sK, sV, sQ, sO, lse_s, dsum_s, sBm, kBmPitch, qb, warp, g, t4, p.scale_log2, db, pa, da);
#ifndef PROTO_NO_DQ
    // dS (queries as rows) into the staging block: matrix mi = lane / 8 of stmatrix kk is query tile
    // nt = 2 kk + mi / 2, keys 16 warp + 8 (mi & 1) .. + 7 (16-byte chunk c8 = 2 warp + (mi & 1) of the
    // 64 keys: panel c8 / 4, chunk c8 % 4 there); lane % 8 is its stored row (query nt * 8 + lane % 8)
    {
        const int mi = lane >> 3, c8 = 2 * warp + (mi & 1);
        const uint32_t panel = sDs + (c8 >> 2) * kPanelBytes;
#pragma unroll
        for (int kk = 0; kk < 4; ++kk) {
            const int query = (2 * kk + (mi >> 1)) * 8 + (lane & 7);
            stmatrix_x4_trans(panel + proto::sw64_off(query, c8 & 3), da[kk][0], da[kk][1], da[kk][2], da[kk][3]);
        }
    }
    fence_proxy_async_smem();
    wg_bar(wg);   // every warp's dS rows are in place before the warpgroup's product reads them
#endif
    wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < 4; ++kk) wgmma_m64n32k16_rs_tb_bf16(dv, pa[kk], mn_desc(sO, qb * 64 + kk * 16), kk > 0 || !first);
#pragma unroll
    for (int kk = 0; kk < 4; ++kk) wgmma_m64n32k16_rs_tb_bf16(dk, da[kk], mn_desc(sQ, qb * 64 + kk * 16), kk > 0 || !first);
#ifndef PROTO_NO_DQ
#pragma unroll
    for (int ks = 0; ks < 4; ++ks)
        wgmma_m64n32k16_ss_tb_bf16(dq, kmaj_desc(sDs + (ks >> 1) * kPanelBytes, ks & 1), mn_desc(sK, ks * 16), ks > 0);
#endif
    wgmma_commit();
    wgmma_wait<0>();
    wgmma_fence_operand(dk);
    wgmma_fence_operand(dv);
    wgmma_fence_operand(dq);
}

__global__ void __cluster_dims__(kCluster, 1, 1) __launch_bounds__(kThreads, 1) proto_bwd_fused_kernel(const FusedParams p) {
#if FWA_HAS_WGMMA
    extern __shared__ __align__(1024) unsigned char smem_raw[];
    const uint32_t base = (smem_u32(smem_raw) + 1023u) & ~1023u;
    unsigned char* const gbase = smem_raw + (base - smem_u32(smem_raw));
    float* const sX = reinterpret_cast<float*>(gbase + oX);   // the warpgroups' dv partials
    float* const sBm = reinterpret_cast<float*>(gbase + oBm);  // [query][key of block j]
    const float* const sSlot = reinterpret_cast<const float*>(gbase + oSlot);

    const int tid = threadIdx.x, wtid = tid % kWgThreads;
    // warp-uniform for the compiler (a plain tid / 128 makes it treat the warpgroup branches below
    // as divergent and serialise the wgmmas)
    const int wg = __shfl_sync(0xffffffffu, tid / kWgThreads, 0);
    const int warp = __shfl_sync(0xffffffffu, wtid >> 5, 0), lane = tid & 31, g = lane >> 2, t4 = lane & 3;
    const int j = static_cast<int>(cluster_rank());
    const int cl = blockIdx.x / kCluster;
    const uint32_t sDs = base + oDs + wg * kDsBytes;

    for (int c = tid; c < kN * (kBK / 4); c += kThreads) {
        const int r = c / (kBK / 4), cc = (c % (kBK / 4)) * 4;
        cp_async_16(smem_u32(sBm + r * kBmPitch + cc), p.bm + r * kN + j * kBK + cc, 16);
    }
    auto issue = [&](int w, int st) {
        const int64_t wrow = int64_t(w) * kN;
        const uint32_t s0 = base + st * kStageBytes;
        proto::copy_rows_sw64<kThreads>(s0 + oK, p.k + (wrow + j * kBK) * kD, kBK, tid);
        proto::copy_rows_sw64<kThreads>(s0 + oV, p.v + (wrow + j * kBK) * kD, kBK, tid);
        proto::copy_rows_sw64<kThreads>(s0 + oQ, p.q + wrow * kD, kN, tid);
        proto::copy_rows_sw64<kThreads>(s0 + oO, p.dout + wrow * kD, kN, tid);
        {   // threads 0..63: lse, 64..127: D (no tid branch here: with one, ptxas serialised every wgmma)
            const bool is_lse = tid < kN / 4;
            const int c = tid & (kN / 4 - 1);
            if (tid < kN / 2) cp_async_16(s0 + (is_lse ? oL : oD) + c * 16, (is_lse ? p.lse2 : p.dsum) + wrow + c * 4, 16);
        }
    };
    if (cl < p.W) issue(cl, 0);
    cp_async_commit();   // the strip and the first window

    float db[2][8][4];
#pragma unroll
    for (int qi = 0; qi < 2; ++qi)
#pragma unroll
        for (int nt = 0; nt < 8; ++nt) db[qi][nt][0] = db[qi][nt][1] = db[qi][nt][2] = db[qi][nt][3] = 0.f;

    // (B) of a window before the first: every CTA of the cluster runs before any remote write
    cluster_arrive();
    int it = 0;
    for (int w = cl; w < p.W; w += p.clusters, ++it) {
        const int st = it & 1;
        if (w + p.clusters < p.W) issue(w + p.clusters, st ^ 1);
        cp_async_commit();
        cp_async_wait<1>();   // this window's tiles (and the strip) landed; the next may be in flight
        fence_proxy_async_smem();
        __syncthreads();

        const uint32_t s0 = base + st * kStageBytes;
        const float* lse_s = reinterpret_cast<const float*>(gbase + (s0 - base) + oL);
        const float* dsum_s = reinterpret_cast<const float*>(gbase + (s0 - base) + oD);
        float dk[kD / 8][4], dv[kD / 8][4];   // set by the first block's products (accumulate off)
#pragma unroll
        for (int qi = 0; qi < 2; ++qi) {
            const int qb = 2 * wg + qi;
            float dq[kD / 8][4];
            fused_block(p, s0 + oK, s0 + oV, s0 + oQ, s0 + oO, sDs, lse_s, dsum_s, sBm, qb, wg, warp, lane, g, t4, qi == 0, db[qi],
                        dk, dv, dq);
            if (qi == 0) cluster_wait();   // (B) of the previous window: the slots were read
            // this partial into slot j of CTA qb (rows of query block qb, row-major 64 x 32 fp32)
#if !defined(PROTO_NO_DQ) && !defined(PROTO_NO_REMOTE)
            const uint32_t slot = map_to_rank(base + oSlot + j * kSlotBytes, qb);
#pragma unroll
            for (int i = 0; i < kD / 8; ++i)
#pragma unroll
                for (int r = 0; r < 2; ++r)
                    st_cluster_f2(slot + ((warp * 16 + g + 8 * r) * kD + i * 8 + 2 * t4) * 4, dq[i][2 * r], dq[i][2 * r + 1]);
#endif
        }
        cluster_arrive();   // (A): this CTA's dq partials are written

        // dk, dv = warpgroup 0's + warpgroup 1's partials (fixed order): each warpgroup stashes its
        // partials row-major (dk in its own dS block, dv in its half of sX), then every thread adds
        // and stores (no warpgroup-dependent branch: with one, ptxas serialised every wgmma)
        {
            float* const xk = reinterpret_cast<float*>(gbase + oDs + wg * kDsBytes);
            float* const xv = sX + wg * (kXBytes / 4);
#pragma unroll
            for (int i = 0; i < kD / 8; ++i)
#pragma unroll
                for (int r = 0; r < 2; ++r) {
                    const int off = (warp * 16 + g + 8 * r) * kD + i * 8 + 2 * t4;
                    *reinterpret_cast<float2*>(xk + off) = make_float2(dk[i][2 * r], dk[i][2 * r + 1]);
                    *reinterpret_cast<float2*>(xv + off) = make_float2(dv[i][2 * r], dv[i][2 * r + 1]);
                }
        }
        __syncthreads();   // also: every warp is done with this stage, which the next trip refills
        {
            const float4* const xk0 = reinterpret_cast<const float4*>(gbase + oDs);
            const float4* const xk1 = reinterpret_cast<const float4*>(gbase + oDs + kDsBytes);
            const float4* const xv0 = reinterpret_cast<const float4*>(sX);
            const float4* const xv1 = reinterpret_cast<const float4*>(sX + kXBytes / 4);
            const int64_t row0 = int64_t(w) * kN + j * kBK;
            float4* const dkp = reinterpret_cast<float4*>(p.dk + row0 * kD);
            float4* const dvp = reinterpret_cast<float4*>(p.dv + row0 * kD);
#pragma unroll
            for (int x0 = 0; x0 < 64 * kD / 4; x0 += kThreads) {
                const int x = x0 + tid;
                const float4 a = xk0[x], b = xk1[x], c = xv0[x], e = xv1[x];
                dkp[x] = make_float4((a.x + b.x) * p.scale, (a.y + b.y) * p.scale, (a.z + b.z) * p.scale, (a.w + b.w) * p.scale);
                dvp[x] = make_float4(c.x + e.x, c.y + e.y, c.z + e.z, c.w + e.w);
            }
        }
        __syncthreads();   // the dS blocks are staging space again

        cluster_wait();   // (A): every CTA's partial of query block j is in this CTA's slots
        float* dqp = p.dq + (int64_t(w) * kN + j * 64) * kD;
#pragma unroll
        for (int x0 = 0; x0 < 64 * kD / 4; x0 += kThreads) {
            const int x = x0 + tid;
            float4 a = reinterpret_cast<const float4*>(sSlot)[x];
#pragma unroll
            for (int sj = 1; sj < kCluster; ++sj) {
                const float4 b = reinterpret_cast<const float4*>(sSlot + sj * (kSlotBytes / 4))[x];
                a.x += b.x;
                a.y += b.y;
                a.z += b.z;
                a.w += b.w;
            }
            reinterpret_cast<float4*>(dqp)[x] = make_float4(a.x * p.scale, a.y * p.scale, a.z * p.scale, a.w * p.scale);
        }
        cluster_arrive();   // (B): the slots were read
    }
    cp_async_wait<0>();   // a CTA with no window still drains its strip copy
    cluster_wait();       // the last (B): no CTA leaves while another may still read or write its slots

    // the cluster's dbias partial: key block j's columns, warpgroup wg's query blocks 2 wg, 2 wg + 1
    float* part = p.dbias_part + int64_t(cl) * kN * kN;
#pragma unroll
    for (int qi = 0; qi < 2; ++qi)
#pragma unroll
        for (int nt = 0; nt < 8; ++nt)
#pragma unroll
            for (int e = 0; e < 4; ++e) {
                const int query = (2 * wg + qi) * 64 + nt * 8 + 2 * t4 + (e & 1);
                const int key = j * kBK + warp * 16 + g + 8 * (e >> 1);
                part[int64_t(query) * kN + key] = db[qi][nt][e];
            }
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

    check(cudaFuncSetAttribute(proto_bwd_fused_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(kSmemBytes)),
          "attr");
    cudaLaunchConfig_t cfg = {};
    cfg.blockDim = dim3(kThreads);
    cfg.gridDim = dim3(kCluster);
    cfg.dynamicSmemBytes = kSmemBytes;
    int max_clusters = 0;
    check(cudaOccupancyMaxActiveClusters(&max_clusters, proto_bwd_fused_kernel, &cfg), "max clusters");
    const int clusters = std::max(1, std::min(max_clusters, W));
    const int grid = clusters * kCluster;

    float *d_dq = proto::alloc_poisoned_f32(elems), *d_dk = proto::alloc_poisoned_f32(elems),
          *d_dv = proto::alloc_poisoned_f32(elems), *d_part = proto::alloc_poisoned_f32(size_t(clusters) * kN * kN);
    FusedParams p{pr.dq, pr.dk, pr.dv, bd.d_do, pr.dbm, bd.d_lse2, bd.d_dsum, d_dq, d_dk, d_dv, d_part, W, clusters,
                  pr.scale * float(proto::kLog2e), pr.scale};
    std::printf("smem %zu B, %d active clusters of %d CTAs, grid %d\n", kSmemBytes, max_clusters, kCluster, grid);

    auto launch = [&] { proto_bwd_fused_kernel<<<grid, kThreads, kSmemBytes>>>(p); };
    launch();
    check(cudaGetLastError(), "launch");
    check(cudaDeviceSynchronize(), "run");

    std::vector<float> hdq(elems), hdk(elems), hdv(elems), hpart(size_t(clusters) * kN * kN);
    check(cudaMemcpy(hdq.data(), d_dq, elems * 4, cudaMemcpyDeviceToHost), "copy dq");
    check(cudaMemcpy(hdk.data(), d_dk, elems * 4, cudaMemcpyDeviceToHost), "copy dk");
    check(cudaMemcpy(hdv.data(), d_dv, elems * 4, cudaMemcpyDeviceToHost), "copy dv");
    check(cudaMemcpy(hpart.data(), d_part, hpart.size() * 4, cudaMemcpyDeviceToHost), "copy dbias");
    std::printf("NaN (unwritten) outputs: %zu of %zu\n",
                proto::count_nan(hdq) + proto::count_nan(hdk) + proto::count_nan(hdv) + proto::count_nan(hpart),
                3 * elems + hpart.size());

    proto::check_bwd(pr, bd, &hdq, &hdk, &hdv, &hpart, clusters);
    // determinism: a second run gives the same bits
    std::vector<float> hdq2(elems);
    launch();
    check(cudaDeviceSynchronize(), "rerun");
    check(cudaMemcpy(hdq2.data(), d_dq, elems * 4, cudaMemcpyDeviceToHost), "copy dq");
    std::printf("dq bitwise equal on a second run: %s\n",
                std::equal(hdq.begin(), hdq.end(), hdq2.begin(),
                           [](float a, float b) { return __builtin_memcmp(&a, &b, 4) == 0; })
                    ? "yes"
                    : "NO");
    proto::time_and_print(W, launch);
    return 0;
}
