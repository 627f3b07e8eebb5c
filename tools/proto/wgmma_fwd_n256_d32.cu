// Prototype (not part of the package; NOT YET RUN ON A GPU): the window forward at N = 256, d = 32
// with Hopper warpgroup MMA and an exact (not online) softmax, to measure what such a kernel would
// reach before writing it into csrc/ (benchmarks/NOTES.md, session 14 checklist item 1 and
// session 17 checklist item 1). Standalone: no torch, its own CPU reference and CUDA-event timing.
//
//   out = softmax(S) v,  S = q kᵀ · scale + bm  (V1 with an additive bias+mask, bf16 in / out)
//
// One CTA = one warpgroup (128 threads) = one 64-row query block m of a chunk of windows that share
// the bias+mask strip (64 x 256 fp32, loaded into shared memory once per CTA, like the product's
// strip placement). Per window: S (64 x 256) = 2 x wgmma m64n256k16 (q, k from 64-byte-swizzled
// shared tiles: d = 32 bf16 is one 64-byte row), the row max / sum over the whole row in registers
// (128 fp32 per thread: the mma.sync C-fragment layout per warp), P packed to bf16 as the register
// A operand of 16 x wgmma m64n32k16 with v read transposed (MN-major) from its swizzled tile. The
// next window's q and k are copied while the softmax and P v run, its v while the next S runs.
//
// Build and run on the GPU machine (sm_90a):
//   nvcc -O3 -std=c++17 -arch=sm_90a --expt-relaxed-constexpr -Icsrc -Itools/proto \
//        tools/proto/wgmma_fwd_n256_d32.cu -o /tmp/proto && /tmp/proto [windows]
// It prints the max error against a float64 CPU reference on a few windows and the median time per
// call, to compare with the product's (1024, 6, 256) forward (6144 windows x heads: 0.436 ms bf16,
// session 17; the bias+mask there differs per (head, window) slice, here one slice for all).
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "kernels/wgmma.cuh"
#include "proto_harness.h"
#include "wgmma_proto_ops.inc"

using namespace fwa;

namespace {

#ifndef PROTO_GROUPS
#define PROTO_GROUPS 1
#endif
constexpr int kN = proto::kN, kD = proto::kD, kM = 64, kThreads = 128, kGroups = PROTO_GROUPS;
constexpr int kBmPitch = kN + 8;   // fp32 pitch of the strip (conflict-free float2 reads)
// 64-byte swizzle: row r of a tile is 64 bytes (4 chunks of 16 bytes); chunk j sits at chunk
// position j ^ ((r >> 1) & 3); the pattern repeats every 8 rows (512 bytes, tiles 512-aligned).
constexpr uint32_t kQBytes = kM * 64, kKBytes = kN * 64, kVBytes = kN * 64;

__device__ __forceinline__ uint32_t sw64_off(int r, int j) { return uint32_t(r * 64 + ((j ^ ((r >> 1) & 3)) << 4)); }
// Shared-memory matrix descriptor, 64-byte swizzle (layout type 2 in bits 62-63).
__device__ __forceinline__ uint64_t sw64_desc(uint32_t addr, uint32_t lbo, uint32_t sbo) {
    return uint64_t((addr & 0x3FFFFu) >> 4) | (uint64_t((lbo & 0x3FFFFu) >> 4) << 16) |
           (uint64_t((sbo & 0x3FFFFu) >> 4) << 32) | (uint64_t(2) << 62);
}
// K-major q / k: 8-row groups 512 bytes apart, a k16 step is 32 bytes into the 64-byte row.
__device__ __forceinline__ uint64_t qk_desc64(uint32_t tile, int ks) { return sw64_desc(tile + ks * 32, 16, 512); }
// MN-major v (keys along K, d along N): 8-key groups 512 bytes apart; one 32-column panel; a k16
// step is 16 keys = 1024 bytes.
#ifdef PROTO_V_SWAP   // fallback hypothesis: the 8-key group stride in the leading offset
__device__ __forceinline__ uint64_t v_desc64(uint32_t tile, int kk) { return sw64_desc(tile + kk * 1024, 512, kVBytes); }
#else
__device__ __forceinline__ uint64_t v_desc64(uint32_t tile, int kk) { return sw64_desc(tile + kk * 1024, kVBytes, 512); }
#endif

__device__ __forceinline__ void copy_rows_sw64(uint32_t tile, const __nv_bfloat16* src, int rows, int tid) {
    for (int c = tid; c < rows * 4; c += kThreads) {
        const int r = c >> 2, j = c & 3;
        cp_async_16(tile + sw64_off(r, j), src + r * kD + j * 8, 16);
    }
}

struct ProtoParams {
    const __nv_bfloat16 *q, *k, *v;   // (W, N, D) contiguous
    __nv_bfloat16* out;                // (W, N, D)
    const float* bm;                   // (N, N), already multiplied by log2(e)
    int W;
    float scale_log2;                  // scale * log2(e)
    float* sdump;                      // if set: raw q k^T of window 0 (N x N fp32), a diagnostic
};

__device__ __forceinline__ void group_bar(int group) { asm volatile("bar.sync %0, %1;" ::"r"(group + 1), "n"(kThreads) : "memory"); }

__global__ void __launch_bounds__(kThreads * kGroups, 1) proto_fwd_kernel(const ProtoParams p) {
#if FWA_HAS_WGMMA
    extern __shared__ __align__(1024) unsigned char smem_raw[];
    const int group = threadIdx.x / kThreads;
    const uint32_t base = (smem_u32(smem_raw) + 1023u) & ~1023u;
    const uint32_t sQ = base + group * (kQBytes + kKBytes + kVBytes), sK = sQ + kQBytes, sV = sK + kKBytes;
    float* sBm = reinterpret_cast<float*>(smem_raw + (base + kGroups * (kQBytes + kKBytes + kVBytes) - smem_u32(smem_raw)));

    const int tid = threadIdx.x % kThreads, warp = tid >> 5, lane = tid & 31, g = lane >> 2, t4 = lane & 3;
    const int m = blockIdx.x % (kN / kM);
    const int stride = gridDim.x / (kN / kM) * kGroups;
    int w = blockIdx.x / (kN / kM) * kGroups + group;

    for (int c = threadIdx.x; c < kM * (kN / 4); c += kThreads * kGroups) {
        const int r = c / (kN / 4), cc = (c % (kN / 4)) * 4;
        cp_async_16(smem_u32(sBm + r * kBmPitch + cc), p.bm + (m * kM + r) * kN + cc, 16);
    }
    cp_async_commit();
    cp_async_wait<0>();
    __syncthreads();
    if (w >= p.W) return;
    auto issue_qk = [&](int win) {
        copy_rows_sw64(sQ, p.q + (int64_t(win) * kN + m * kM) * kD, kM, tid);
        copy_rows_sw64(sK, p.k + int64_t(win) * kN * kD, kN, tid);
    };
    auto issue_v = [&](int win) { copy_rows_sw64(sV, p.v + int64_t(win) * kN * kD, kN, tid); };
    issue_qk(w);
    cp_async_commit();
    issue_v(w);
    cp_async_commit();

    for (; w < p.W; w += stride) {
        const int next = w + stride;
        cp_async_wait<1>();   // q, k (and the strip) landed; v may still be in flight
        fence_proxy_async_smem();
        group_bar(group);

        float s[kN / 8][4];
        wgmma_fence();
#pragma unroll
        for (int ks = 0; ks < kD / 16; ++ks) wgmma_m64n256k16_ss_bf16(s, qk_desc64(sQ, ks), qk_desc64(sK, ks), ks > 0);
        wgmma_commit();
        wgmma_wait<0>();
        wgmma_fence_operand(s);
        if (p.sdump != nullptr && w == 0) {
#pragma unroll
            for (int nt = 0; nt < kN / 8; ++nt)
#pragma unroll
                for (int e = 0; e < 4; ++e)
                    p.sdump[(m * kM + warp * 16 + g + 8 * (e >> 1)) * kN + nt * 8 + 2 * t4 + (e & 1)] = s[nt][e];
        }
        group_bar(group);   // every warp's S is done: q and k may be overwritten
        if (next < p.W) issue_qk(next);
        cp_async_commit();

        // exact softmax over the 256 keys of this thread's two rows
        float inv_l[2];
#pragma unroll
        for (int r = 0; r < 2; ++r) {
            const float* bm_row = sBm + (warp * 16 + g + 8 * r) * kBmPitch + 2 * t4;
            float mx0 = -INFINITY, mx1 = -INFINITY;
#pragma unroll
            for (int nt = 0; nt < kN / 8; ++nt) {
                const float2 b = *reinterpret_cast<const float2*>(bm_row + nt * 8);
                const float x0 = fmaf(s[nt][2 * r], p.scale_log2, b.x), x1 = fmaf(s[nt][2 * r + 1], p.scale_log2, b.y);
                s[nt][2 * r] = x0;
                s[nt][2 * r + 1] = x1;
                if (nt & 1) mx1 = fmaxf(mx1, fmaxf(x0, x1));
                else mx0 = fmaxf(mx0, fmaxf(x0, x1));
            }
            float mx = quad_max(fmaxf(mx0, mx1));
            mx = mx == -INFINITY ? 0.f : mx;
            float l0 = 0.f, l1 = 0.f;
#pragma unroll
            for (int nt = 0; nt < kN / 8; ++nt) {
                const float e0 = fast_exp2(s[nt][2 * r] - mx), e1 = fast_exp2(s[nt][2 * r + 1] - mx);
                s[nt][2 * r] = e0;
                s[nt][2 * r + 1] = e1;
                if (nt & 1) l1 += e0 + e1;
                else l0 += e0 + e1;
            }
            const float l = quad_sum(l0 + l1);
            inv_l[r] = l > 0.f ? 1.f / l : 0.f;
        }
        uint32_t a[kN / 16][4];
#pragma unroll
        for (int kk = 0; kk < kN / 16; ++kk) {
            a[kk][0] = ElementTraits<__nv_bfloat16>::pack(s[2 * kk][0], s[2 * kk][1]);
            a[kk][1] = ElementTraits<__nv_bfloat16>::pack(s[2 * kk][2], s[2 * kk][3]);
            a[kk][2] = ElementTraits<__nv_bfloat16>::pack(s[2 * kk + 1][0], s[2 * kk + 1][1]);
            a[kk][3] = ElementTraits<__nv_bfloat16>::pack(s[2 * kk + 1][2], s[2 * kk + 1][3]);
        }

        cp_async_wait<1>();   // v landed (the q, k copies just issued may be in flight)
        fence_proxy_async_smem();
        group_bar(group);
        float o[kD / 8][4];
#pragma unroll
        for (int i = 0; i < kD / 8; ++i) o[i][0] = o[i][1] = o[i][2] = o[i][3] = 0.f;
        wgmma_fence();
#pragma unroll
        for (int kk = 0; kk < kN / 16; ++kk) wgmma_m64n32k16_rs_tb_bf16(o, a[kk], v_desc64(sV, kk), 1);
        wgmma_commit();
        wgmma_wait<0>();
        wgmma_fence_operand(o);
        group_bar(group);   // every warp's P v is done: v may be overwritten
        if (next < p.W) issue_v(next);
        cp_async_commit();

        __nv_bfloat16* out = p.out + (int64_t(w) * kN + m * kM + warp * 16) * kD;
#pragma unroll
        for (int r = 0; r < 2; ++r)
#pragma unroll
            for (int i = 0; i < kD / 8; ++i)
                *reinterpret_cast<uint32_t*>(out + (g + 8 * r) * kD + i * 8 + 2 * t4) =
                    ElementTraits<__nv_bfloat16>::pack(o[i][2 * r] * inv_l[r], o[i][2 * r + 1] * inv_l[r]);
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

    const size_t smem = 1024 + kGroups * (kQBytes + kKBytes + kVBytes) + size_t(kM) * kBmPitch * sizeof(float);
    const int ctas = proto::fit_kernel(proto_fwd_kernel, kThreads, smem), sms = proto::sm_count();
    const int grid = std::min(sms * ctas / 4 * 4, (W + kGroups - 1) / kGroups * 4);
    float* dsd;
    check(cudaMalloc(&dsd, size_t(kN) * kN * sizeof(float)), "malloc");
    ProtoParams p{pr.dq, pr.dk, pr.dv, pr.dout, pr.dbm, W, pr.scale * 1.4426950408889634f, dsd};
    std::printf("groups %d: smem %zu B, %d CTAs/SM, grid %d\n", kGroups, smem, ctas, grid);

    proto_fwd_kernel<<<grid, kThreads * kGroups, smem>>>(p);
    check(cudaGetLastError(), "launch");
    check(cudaDeviceSynchronize(), "run");
    {
        std::vector<float> hs(size_t(kN) * kN);
        check(cudaMemcpy(hs.data(), dsd, hs.size() * sizeof(float), cudaMemcpyDeviceToHost), "copy S");
        double es = 0.0;
        for (int i = 0; i < kN; ++i)
            for (int j = 0; j < kN; ++j) {
                double acc = 0.0;
                for (int c = 0; c < kD; ++c)
                    acc += double(__bfloat162float(pr.hq[size_t(i) * kD + c])) * double(__bfloat162float(pr.hk[size_t(j) * kD + c]));
                es = std::max(es, std::fabs(acc - double(hs[size_t(i) * kN + j])));
            }
        std::printf("diagnostic: max |S - q k^T| on window 0: %.3e (fp32 accumulation ~1e-5)\n", es);
    }
    p.sdump = nullptr;
    std::printf("max |out - ref64| over 4 windows: %.3e (bf16 output rounding ~4e-3 at |out| <= 1)\n",
                proto::max_error_vs_ref64(pr, proto::copy_out(pr)));
    proto::time_and_print(W, [&] { proto_fwd_kernel<<<grid, kThreads * kGroups, smem>>>(p); });
    return 0;
}
