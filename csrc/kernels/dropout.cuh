// Device side of attention dropout (the mask itself is defined in dropout.h): keep bits for the
// 16 x 64 slab of probabilities a warp holds in mma accumulators, and their application.
// Bit (nt * 4 + k) of the mask belongs to accumulator element acc[nt][k].
#pragma once
#include "dropout.h"
#include "kernel_utils.cuh"

namespace fwa {

struct DropoutState {
    uint64_t seed, offset;
    uint32_t threshold;
    float scale;
};

FWA_DEVICE DropoutState load_dropout_state(const DropoutArgs& a) {
    return DropoutState{static_cast<uint64_t>(a.rng_state[0]), static_cast<uint64_t>(a.rng_state[1]),
                        a.threshold, a.scale};
}

// Rows = query rows 16 ib .. 16 ib + 15 (lane row g and g + 8), columns = keys 16 jb0 + 8 nt + 2 t4 + e.
template <int kNT>
FWA_DEVICE uint32_t dropout_keep_bits(const DropoutState& st, int64_t bh, int ib, int jb0, int lane) {
    uint32_t bits = 0;
#pragma unroll
    for (int m = 0; m < kNT / 2; ++m) {
        const Philox4 r = dropout_block_bits(st.seed, st.offset, bh, ib, jb0 + m, lane);
#pragma unroll
        for (int h2 = 0; h2 < 2; ++h2)
#pragma unroll
            for (int rr = 0; rr < 2; ++rr)
#pragma unroll
                for (int e = 0; e < 2; ++e) {
                    const int slot = rr | (e << 1) | (h2 << 2);
                    if (dropout_value16(r, slot) >= st.threshold) bits |= 1u << ((2 * m + h2) * 4 + 2 * rr + e);
                }
    }
    return bits;
}

// Transposed slab (key side of the backward): rows = keys 16 jb + (g, g + 8), columns = queries
// 16 ib0 + 8 nt + 2 t4 + e. Same mask, two Philox calls per 16 x 16 block.
template <int kNT>
FWA_DEVICE uint32_t dropout_keep_bits_transposed(const DropoutState& st, int64_t bh, int ib0, int jb, int lane) {
    const int g = lane >> 2, t4 = lane & 3;
    uint32_t bits = 0;
#pragma unroll
    for (int m = 0; m < kNT / 2; ++m) {
#pragma unroll
        for (int e = 0; e < 2; ++e) {
            // element (query i = 16 (ib0 + m) + 8 h2 + 2 t4 + e, key j = 16 jb + 8 rr + g)
            const Philox4 r = dropout_block_bits(st.seed, st.offset, bh, ib0 + m, jb, (2 * t4 + e) * 4 + (g >> 1));
#pragma unroll
            for (int h2 = 0; h2 < 2; ++h2)
#pragma unroll
                for (int rr = 0; rr < 2; ++rr) {
                    const int slot = h2 | ((g & 1) << 1) | (rr << 2);
                    if (dropout_value16(r, slot) >= st.threshold) bits |= 1u << ((2 * m + h2) * 4 + 2 * rr + e);
                }
        }
    }
    return bits;
}

// acc <- acc * scale where kept, 0 where dropped.
template <int kNT>
FWA_DEVICE void dropout_apply(float (&acc)[kNT][4], uint32_t bits, float scale) {
#pragma unroll
    for (int nt = 0; nt < kNT; ++nt)
#pragma unroll
        for (int k = 0; k < 4; ++k) acc[nt][k] = ((bits >> (nt * 4 + k)) & 1u) ? acc[nt][k] * scale : 0.f;
}

}  // namespace fwa
