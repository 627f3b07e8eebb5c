// Prototype (not part of the package; written in session 22, first run in session 23): the query side of
// the window backward at N = 256, d = 32 (dq and the bias gradient) on Hopper warpgroup MMA, the
// companion of wgmma_bwd_kv_n256_d32.cu (benchmarks/NOTES.md, session 22 checklist item 1).
// Standalone: no torch, its own reference and CUDA-event timing (proto_bwd_harness.h: V1, one
// bias+mask strip for every window, lse and D from a plain GPU kernel).
//
//   P = exp(S - lse), S = q kᵀ · scale + bm;  dS = P (dout vᵀ - D);  dq = scale · dS k;  dbias = Σ_w dS
//
// One CTA = 2 warpgroups on one 64-query block m of a chunk of windows (the bias+mask strip of the
// block's rows, 64 x 256 fp32, in shared memory once per CTA). Both warpgroups work on the same
// window, warpgroup g on keys 128 g .. 128 g + 127 in two 64-key sub-blocks:
//   S  (64 x 64) = q_m k_sbᵀ       2 wgmma m64n64k16 (K-major operands, 64-byte-swizzled tiles)
//   dP (64 x 64) = dout_m v_sbᵀ    2 wgmma m64n64k16
//   P, dS in registers; dbias (64 rows x 128 keys of the warpgroup) accumulated in registers over the
//   whole chunk (64 fp32 per thread: never in shared or global memory until the chunk ends)
//   dq += dS k_sb                  4 wgmma m64n32k16, A = dS packed to bf16 in registers, B = k MN-major
// and the two warpgroups' dq partials are added in a fixed order through shared memory (deterministic).
// The window's tiles (q_m, dout_m: 4 KB each; k, v: 16 KB each; lse and D of the 64 rows) are
// double-buffered per CTA: the next window's copies are issued before this window's products.
// The chunk's dbias partial (64 x 256 fp32) goes to a per-chunk slice of a workspace, summed over
// the chunks afterwards (here on the host; the product has reduce_partials_kernel).
//
// Build and run on the GPU machine (sm_90a):
//   nvcc -O3 -std=c++17 -arch=sm_90a --expt-relaxed-constexpr -Icsrc -Itools/proto \
//        tools/proto/wgmma_bwd_q_n256_d32.cu -o /tmp/bq && /tmp/bq [windows]
// It prints the max error of dq against a float64 reference on 4 windows and, for W <= 128, of the
// chunk-summed dbias against the float64 sum over all windows; unwritten (NaN-poisoned) outputs;
// and the median time per call, to compare with the product's query-side kernel at (1024, 6, 256)
// (tools/kernel_breakdown.py --configs 2: window_attn_bwd_q_kernel, 0.798 ms in session 22).
//
// Session 23 (H100, run A): right against float64 on its first run (dq max |err| 1.4e-3 at max |ref|
// 0.51, chunk-summed dbias 1.9e-6 at 5.1), W = 6144: 0.385 ms against 0.723 for the product's
// query side at (1024, 6, 256) in the same call. Ported as csrc/kernels/bwd_q_wg_kernel.cuh (V2,
// strips per (head, bm window), strides, partial blocks, dropout): 0.502 ms there for V2.
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "kernels/wgmma.cuh"
#include "proto_bwd_harness.h"
#include "proto_sw64.cuh"
#include "wgmma_proto_ops.inc"

using namespace fwa;
using proto::kmaj_desc;
using proto::mn_desc;

namespace {

constexpr int kN = proto::kN, kD = proto::kD, kM = 64, kWgThreads = 128, kThreads = 2 * kWgThreads;
constexpr int kQBlocks = kN / kM;
constexpr int kBmPitch = kN + 8;   // fp32 pitch of the strip (float2 reads, as the forward prototype)
// 64-byte-swizzled tiles (proto_sw64.cuh).
constexpr uint32_t kQBytes = kM * 64, kOBytes = kM * 64, kKBytes = kN * 64, kVBytes = kN * 64;
constexpr uint32_t kVecBytes = kM * 4;   // lse (log2 units) or D of the block's rows
constexpr uint32_t kStageBytes = (kQBytes + kOBytes + kKBytes + kVBytes + 2 * kVecBytes + 1023u) / 1024u * 1024u;
constexpr uint32_t kXBytes = kWgThreads * 16 * 4;   // one warpgroup's dq partial, 16 fp32 per thread


struct QParams {
    const __nv_bfloat16 *q, *k, *v, *dout;   // (W, N, D) contiguous
    const float* bm;                          // (N, N), log2 units
    const float *lse2, *dsum;                 // (W, N)
    float* dq;                                // (W, N, D) fp32
    float* dbias_part;                        // (chunks, N, N) fp32: chunk c's sum over its windows
    int W, chunks;
    float scale_log2, scale;
};

__global__ void __launch_bounds__(kThreads, 1) proto_bwd_q_kernel(const QParams p) {
#if FWA_HAS_WGMMA
    extern __shared__ __align__(1024) unsigned char smem_raw[];
    const uint32_t base = (smem_u32(smem_raw) + 1023u) & ~1023u;
    unsigned char* const gbase = smem_raw + (base - smem_u32(smem_raw));
    auto stage = [&](int st) { return base + st * kStageBytes; };
    // per stage: q_m, dout_m, k, v, lse, D
    constexpr uint32_t oQ = 0, oO = kQBytes, oK = oO + kOBytes, oV = oK + kKBytes, oL = oV + kVBytes, oD = oL + kVecBytes;
    float* sX = reinterpret_cast<float*>(gbase + 2 * kStageBytes);                    // warpgroup 1's dq partial
    float* sBm = reinterpret_cast<float*>(gbase + 2 * kStageBytes + kXBytes);         // [row of block m][key]

    const int tid = threadIdx.x, wg = tid / kWgThreads, wtid = tid % kWgThreads;
    const int warp = wtid >> 5, lane = tid & 31, g = lane >> 2, t4 = lane & 3;
    const int m = blockIdx.x % kQBlocks, chunk = blockIdx.x / kQBlocks;

    for (int c = tid; c < kM * (kN / 4); c += kThreads) {
        const int r = c / (kN / 4), cc = (c % (kN / 4)) * 4;
        cp_async_16(smem_u32(sBm + r * kBmPitch + cc), p.bm + (m * kM + r) * kN + cc, 16);
    }
    auto issue = [&](int w, int st) {
        const int64_t wrow = int64_t(w) * kN;
        const uint32_t s0 = stage(st);
        proto::copy_rows_sw64<kThreads>(s0 + oQ, p.q + (wrow + m * kM) * kD, kM, tid);
        proto::copy_rows_sw64<kThreads>(s0 + oO, p.dout + (wrow + m * kM) * kD, kM, tid);
        proto::copy_rows_sw64<kThreads>(s0 + oK, p.k + wrow * kD, kN, tid);
        proto::copy_rows_sw64<kThreads>(s0 + oV, p.v + wrow * kD, kN, tid);
        if (tid < kM / 4) cp_async_16(s0 + oL + tid * 16, p.lse2 + wrow + m * kM + tid * 4, 16);
        else if (tid < kM / 2) cp_async_16(s0 + oD + (tid - kM / 4) * 16, p.dsum + wrow + m * kM + (tid - kM / 4) * 4, 16);
    };
    if (chunk < p.W) issue(chunk, 0);
    cp_async_commit();   // the strip and the first window

    float dbias[2][8][4];
#pragma unroll
    for (int sb = 0; sb < 2; ++sb)
#pragma unroll
        for (int nt = 0; nt < 8; ++nt) dbias[sb][nt][0] = dbias[sb][nt][1] = dbias[sb][nt][2] = dbias[sb][nt][3] = 0.f;

    int it = 0;
    for (int w = chunk; w < p.W; w += p.chunks, ++it) {
        const int st = it & 1;
        if (w + p.chunks < p.W) issue(w + p.chunks, st ^ 1);
        cp_async_commit();
        cp_async_wait<1>();   // this window's tiles (and the strip) landed; the next may be in flight
        fence_proxy_async_smem();
        __syncthreads();

        const uint32_t s0 = stage(st);
        const float* lse_s = reinterpret_cast<const float*>(gbase + (s0 - base) + oL);
        const float* dsum_s = reinterpret_cast<const float*>(gbase + (s0 - base) + oD);
        float lse2[2], dd[2];
#pragma unroll
        for (int r = 0; r < 2; ++r) {
            lse2[r] = lse_s[warp * 16 + g + 8 * r];
            dd[r] = dsum_s[warp * 16 + g + 8 * r];
        }
        float dq[kD / 8][4];
#pragma unroll
        for (int i = 0; i < kD / 8; ++i) dq[i][0] = dq[i][1] = dq[i][2] = dq[i][3] = 0.f;

#pragma unroll
        for (int sb = 0; sb < 2; ++sb) {
            const int kb = wg * 128 + sb * 64;
            float s[8][4], dp[8][4];
            wgmma_fence();
#pragma unroll
            for (int ks = 0; ks < kD / 16; ++ks) wgmma_m64n64k16_ss_bf16(s, kmaj_desc(s0 + oQ, ks), kmaj_desc(s0 + oK + kb * 64, ks), ks > 0);
#pragma unroll
            for (int ks = 0; ks < kD / 16; ++ks) wgmma_m64n64k16_ss_bf16(dp, kmaj_desc(s0 + oO, ks), kmaj_desc(s0 + oV + kb * 64, ks), ks > 0);
            wgmma_commit();
            wgmma_wait<0>();
            wgmma_fence_operand(s);
            wgmma_fence_operand(dp);

            // thread's element (nt, e): row warp * 16 + g + 8 (e >> 1) of block m, key kb + nt * 8 + 2 t4 + (e & 1)
#pragma unroll
            for (int r = 0; r < 2; ++r) {
                const float* bm_row = sBm + (warp * 16 + g + 8 * r) * kBmPitch + kb + 2 * t4;
#pragma unroll
                for (int nt = 0; nt < 8; ++nt) {
                    const float2 b = *reinterpret_cast<const float2*>(bm_row + nt * 8);
                    const float p0 = fast_exp2(fmaf(s[nt][2 * r], p.scale_log2, b.x) - lse2[r]);
                    const float p1 = fast_exp2(fmaf(s[nt][2 * r + 1], p.scale_log2, b.y) - lse2[r]);
                    const float ds0 = p0 * (dp[nt][2 * r] - dd[r]), ds1 = p1 * (dp[nt][2 * r + 1] - dd[r]);
                    dbias[sb][nt][2 * r] += ds0;
                    dbias[sb][nt][2 * r + 1] += ds1;
                    dp[nt][2 * r] = ds0;
                    dp[nt][2 * r + 1] = ds1;
                }
            }
            uint32_t da[4][4];
#pragma unroll
            for (int kk = 0; kk < 4; ++kk) {
                da[kk][0] = ElementTraits<__nv_bfloat16>::pack(dp[2 * kk][0], dp[2 * kk][1]);
                da[kk][1] = ElementTraits<__nv_bfloat16>::pack(dp[2 * kk][2], dp[2 * kk][3]);
                da[kk][2] = ElementTraits<__nv_bfloat16>::pack(dp[2 * kk + 1][0], dp[2 * kk + 1][1]);
                da[kk][3] = ElementTraits<__nv_bfloat16>::pack(dp[2 * kk + 1][2], dp[2 * kk + 1][3]);
            }
            wgmma_fence();
#pragma unroll
            for (int kk = 0; kk < 4; ++kk) wgmma_m64n32k16_rs_tb_bf16(dq, da[kk], mn_desc(s0 + oK, kb + kk * 16), 1);
            wgmma_commit();
            wgmma_wait<0>();
            wgmma_fence_operand(dq);
        }

        // dq = warpgroup 0's + warpgroup 1's (fixed order), both in the same fragment layout
        if (wg == 1) proto::stash_partial<kWgThreads>(dq, sX, wtid);
        __syncthreads();   // also: every warp is done with this stage, which the next trip refills
        if (wg == 0) {
            proto::add_partial<kWgThreads>(dq, sX, wtid);
            float* dqp = p.dq + (int64_t(w) * kN + m * kM + warp * 16) * kD;
#pragma unroll
            for (int i = 0; i < kD / 8; ++i)
#pragma unroll
                for (int r = 0; r < 2; ++r)
                    *reinterpret_cast<float2*>(dqp + (g + 8 * r) * kD + i * 8 + 2 * t4) =
                        make_float2(dq[i][2 * r] * p.scale, dq[i][2 * r + 1] * p.scale);
        }
        // sX is rewritten only after the next trip's first __syncthreads, which warpgroup 0 reaches
        // after these reads
    }
    cp_async_wait<0>();   // a CTA with no window still drains its strip copy

    // the chunk's dbias partial: rows of block m, the warpgroup's 128 keys
    float* part = p.dbias_part + (int64_t(chunk) * kN + m * kM + warp * 16) * kN;
#pragma unroll
    for (int sb = 0; sb < 2; ++sb)
#pragma unroll
        for (int nt = 0; nt < 8; ++nt)
#pragma unroll
            for (int r = 0; r < 2; ++r)
                *reinterpret_cast<float2*>(part + (g + 8 * r) * kN + wg * 128 + sb * 64 + nt * 8 + 2 * t4) =
                    make_float2(dbias[sb][nt][2 * r], dbias[sb][nt][2 * r + 1]);
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

    const size_t smem = 1024 + 2 * size_t(kStageBytes) + kXBytes + size_t(kM) * kBmPitch * sizeof(float);
    const int ctas = proto::fit_kernel(proto_bwd_q_kernel, kThreads, smem), sms = proto::sm_count();
    const int chunks = std::max(1, std::min(sms * ctas / kQBlocks, W));
    const int grid = chunks * kQBlocks;

    float *d_dq = proto::alloc_poisoned_f32(elems), *d_part = proto::alloc_poisoned_f32(size_t(chunks) * kN * kN);
    QParams p{pr.dq, pr.dk, pr.dv, bd.d_do, pr.dbm, bd.d_lse2, bd.d_dsum, d_dq, d_part, W, chunks,
              pr.scale * float(proto::kLog2e), pr.scale};
    std::printf("smem %zu B, %d CTAs/SM, %d chunks, grid %d\n", smem, ctas, chunks, grid);

    proto_bwd_q_kernel<<<grid, kThreads, smem>>>(p);
    check(cudaGetLastError(), "launch");
    check(cudaDeviceSynchronize(), "run");

    std::vector<float> hdq(elems), hpart(size_t(chunks) * kN * kN);
    check(cudaMemcpy(hdq.data(), d_dq, elems * 4, cudaMemcpyDeviceToHost), "copy dq");
    check(cudaMemcpy(hpart.data(), d_part, hpart.size() * 4, cudaMemcpyDeviceToHost), "copy dbias");
    std::printf("NaN (unwritten) outputs: %zu of %zu\n", proto::count_nan(hdq) + proto::count_nan(hpart), elems + hpart.size());

    proto::check_bwd(pr, bd, &hdq, nullptr, nullptr, &hpart, chunks);
    proto::time_and_print(W, [&] { proto_bwd_q_kernel<<<grid, kThreads, smem>>>(p); });
    return 0;
}
