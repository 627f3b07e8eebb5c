// Device helpers shared by the N = 256, d = 32 backward prototypes: 64-byte-swizzled tiles of d = 32
// bf16 rows (one 64-byte row each) and their wgmma shared-memory descriptors (the layout the forward
// prototype wgmma_fwd_n256_d32.cu validated), and the sum of two warpgroups' partial accumulators.
#pragma once
#include <cuda_bf16.h>

#include "kernels/kernel_utils.cuh"

namespace proto {

// Chunk j (16 bytes) of row r at chunk position j ^ ((r >> 1) & 3); the pattern repeats every 8 rows
// (512 bytes: tiles start 512-aligned, here 1024).
__device__ __forceinline__ uint32_t sw64_off(int r, int j) { return uint32_t(r * 64 + ((j ^ ((r >> 1) & 3)) << 4)); }
// Shared-memory matrix descriptor, 64-byte swizzle (layout type 2 in bits 62-63).
__device__ __forceinline__ uint64_t sw64_desc(uint32_t addr, uint32_t lbo, uint32_t sbo) {
    return uint64_t((addr & 0x3FFFFu) >> 4) | (uint64_t((lbo & 0x3FFFFu) >> 4) << 16) |
           (uint64_t((sbo & 0x3FFFFu) >> 4) << 32) | (uint64_t(2) << 62);
}
// K-major operand (rows along M or N, d along K): 8-row groups 512 bytes apart, k16 step = 32 bytes.
__device__ __forceinline__ uint64_t kmaj_desc(uint32_t tile, int ks) { return sw64_desc(tile + ks * 32, 16, 512); }
// MN-major B operand (rows along K, d along N: one 32-column panel) from row `row0` (a multiple of
// 16): 8-row groups 512 bytes apart; the leading offset as the forward prototype's v (unused with
// one panel).
__device__ __forceinline__ uint64_t mn_desc(uint32_t tile, int row0) { return sw64_desc(tile + row0 * 64, 16384, 512); }

// `rows` rows of 32 bf16 (contiguous, 64 bytes each) into a swizzled tile, by kThreads threads.
template <int kThreads>
__device__ __forceinline__ void copy_rows_sw64(uint32_t tile, const __nv_bfloat16* src, int rows, int tid) {
    for (int c = tid; c < rows * 4; c += kThreads) {
        const int r = c >> 2, j = c & 3;
        fwa::cp_async_16(tile + sw64_off(r, j), src + r * 32 + j * 8, 16);
    }
}

// Two warpgroups' partial sums of one accumulator (kDT n8 tiles x 4 fp32 per thread, the same
// fragment layout in both): warpgroup 1 stashes its partial in sX (kWgThreads x kDT x 4 floats),
// and after a barrier warpgroup 0 adds it to its own, in this fixed order (deterministic).
template <int kWgThreads, int kDT>
__device__ __forceinline__ void stash_partial(const float (&acc)[kDT][4], float* sX, int wtid) {
#pragma unroll
    for (int i = 0; i < kDT; ++i)
        *reinterpret_cast<float4*>(sX + (i * kWgThreads + wtid) * 4) = make_float4(acc[i][0], acc[i][1], acc[i][2], acc[i][3]);
}
template <int kWgThreads, int kDT>
__device__ __forceinline__ void add_partial(float (&acc)[kDT][4], const float* sX, int wtid) {
#pragma unroll
    for (int i = 0; i < kDT; ++i) {
        const float4 x = *reinterpret_cast<const float4*>(sX + (i * kWgThreads + wtid) * 4);
        acc[i][0] += x.x;
        acc[i][1] += x.y;
        acc[i][2] += x.z;
        acc[i][3] += x.w;
    }
}

}  // namespace proto
