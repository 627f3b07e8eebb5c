// Attention dropout: the keep/drop decision of every probability P[b, h, i, j], as a pure function
// of (seed, offset, b * H + h, i, j). Torch-free, host and device: the CPU op, the CUDA kernels and
// the `dropout_keep_mask` debug op all evaluate this same function, so a run on either device can be
// checked element by element against a reference given the op's rng_state.
//
// Random bits: Philox4x32-10 (Salmon et al., SC'11; the generator torch and curand use) gives 128
// bits per call = eight 16-bit values. One call covers a 16 x 16 block of (query row, key) as the
// mma.sync accumulator layout holds it: lane (g, t4) of a warp owns rows {g, g + 8} and columns
// {2 t4, 2 t4 + 1, 8 + 2 t4, 9 + 2 t4} of the block, exactly one call's eight values:
//
//   block (ib, jb) = (i >> 4, j >> 4); in the block r = i & 15, c = j & 15
//   lane  = (r & 7) * 4 + ((c & 7) >> 1)                       (0..31)
//   slot  = ((r >> 3) & 1) | ((c & 1) << 1) | (((c >> 3) & 1) << 2)   (0..7): 16-bit half `slot & 1`
//           of word `slot >> 1`
//   counter = {lane | jb << 5 | ib << 11 | (bh >> 32) << 17, uint32(bh), uint32(offset), offset >> 32}
//   key     = {uint32(seed), seed >> 32}
//
// P[i, j] is kept iff its 16-bit value >= threshold = round(p * 65536), so the keep probability
// is 1 - threshold / 65536 (within 2^-17 of 1 - p), and kept values are scaled by 1 / (1 - p).
#pragma once
#include <cstdint>

#if defined(__CUDACC__)
#define FWA_RNG_HD __host__ __device__ __forceinline__
#else
#define FWA_RNG_HD inline
#endif

namespace fwa {

struct Philox4 { uint32_t x, y, z, w; };

FWA_RNG_HD void mulhilo32(uint32_t a, uint32_t b, uint32_t& hi, uint32_t& lo) {
#if defined(__CUDA_ARCH__)
    hi = __umulhi(a, b);
    lo = a * b;
#else
    const uint64_t prod = uint64_t(a) * uint64_t(b);
    hi = static_cast<uint32_t>(prod >> 32);
    lo = static_cast<uint32_t>(prod);
#endif
}

FWA_RNG_HD Philox4 philox4x32_10(Philox4 ctr, uint32_t k0, uint32_t k1) {
    constexpr uint32_t kM0 = 0xD2511F53u, kM1 = 0xCD9E8D57u;
    constexpr uint32_t kW0 = 0x9E3779B9u, kW1 = 0xBB67AE85u;
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
    for (int round = 0; round < 10; ++round) {
        uint32_t hi0, lo0, hi1, lo1;
        mulhilo32(kM0, ctr.x, hi0, lo0);
        mulhilo32(kM1, ctr.z, hi1, lo1);
        ctr = Philox4{hi1 ^ ctr.y ^ k0, lo1, hi0 ^ ctr.w ^ k1, lo0};
        k0 += kW0;
        k1 += kW1;
    }
    return ctr;
}

// The eight 16-bit values of block (ib, jb), lane `lane`, of (window, head) bh.
FWA_RNG_HD Philox4 dropout_block_bits(uint64_t seed, uint64_t offset, int64_t bh, int ib, int jb, int lane) {
    const uint64_t ubh = static_cast<uint64_t>(bh);
    const Philox4 ctr{static_cast<uint32_t>(lane) | (static_cast<uint32_t>(jb) << 5) |
                          (static_cast<uint32_t>(ib) << 11) | (static_cast<uint32_t>(ubh >> 32) << 17),
                      static_cast<uint32_t>(ubh), static_cast<uint32_t>(offset),
                      static_cast<uint32_t>(offset >> 32)};
    return philox4x32_10(ctr, static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32));
}

FWA_RNG_HD uint32_t dropout_value16(const Philox4& r, int slot) {
    const uint32_t w = (slot >> 1) == 0 ? r.x : (slot >> 1) == 1 ? r.y : (slot >> 1) == 2 ? r.z : r.w;
    return (slot & 1) ? (w >> 16) : (w & 0xFFFFu);
}

FWA_RNG_HD int dropout_lane(int i, int j) { return (i & 7) * 4 + ((j & 7) >> 1); }
FWA_RNG_HD int dropout_slot(int i, int j) { return ((i >> 3) & 1) | ((j & 1) << 1) | (((j >> 3) & 1) << 2); }

// Scalar form (CPU, SIMT kernels, tests): is P[bh, i, j] kept?
FWA_RNG_HD bool dropout_keep(uint64_t seed, uint64_t offset, int64_t bh, int i, int j, uint32_t threshold) {
    const Philox4 r = dropout_block_bits(seed, offset, bh, i >> 4, j >> 4, dropout_lane(i, j));
    return dropout_value16(r, dropout_slot(i, j)) >= threshold;
}

// threshold for probability p in [0, 1]: round(p * 65536), 65536 (nothing kept) for p = 1.
FWA_RNG_HD uint32_t dropout_threshold(float p) {
    const float t = p * 65536.f + 0.5f;
    return t <= 0.f ? 0u : (t >= 65536.f ? 65536u : static_cast<uint32_t>(t));
}

// What the kernels receive: threshold and 1 / (1 - p) (0 when p = 1), and the rng state
// (seed, offset as int64) in device memory, written before the forward and read by the backward.
struct DropoutArgs {
    uint32_t threshold = 0;           // 0: no dropout
    float scale = 1.f;
    const int64_t* rng_state = nullptr;
};

// Torch's CUDA generator state for one call (a copy of at::PhiloxCudaState's fields): plain values,
// or, inside a CUDA-graph capture, pointers to the seed and offset that each replay updates.
struct PhiloxSeedArgs {
    uint64_t seed = 0, offset = 0;
    const int64_t* seed_ptr = nullptr;
    const int64_t* offset_ptr = nullptr;
    uint64_t offset_intragraph = 0;
    bool captured = false;
};

}  // namespace fwa
