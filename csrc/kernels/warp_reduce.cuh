// Warp-level reductions over mma.sync C fragments shared by the backward kernels of both families.
#pragma once
#include "kernel_utils.cuh"

namespace fwa {

// Column sums of a warp's 16 x 64 C-fragment tile (kNT = 8 n8 tiles) over its 16 rows, once each
// lane has summed its two rows: v[2 nt + e] is the lane's value for column nt * 8 + 2 * t4 + e
// (t4 = lane & 3). A reduce-scatter over the 8 lanes g = lane >> 2 sharing t4 (14 shuffles instead
// of 48): lane (g, t4) returns the sums of columns g * 8 + 2 * t4 + {0, 1} in `out`. The order of
// the additions is fixed, so the result is bitwise reproducible. v is clobbered.
template <int kHalf, int kMask>
FWA_DEVICE void column_sums_step(float (&v)[16], int lane) {
    // Lanes with this bit of g set keep the upper half of the live values, the others the lower
    // half; each sends the half it gives away to its partner.
    const bool upper = (lane & kMask) != 0;
#pragma unroll
    for (int i = 0; i < kHalf; ++i) {
        const float give = upper ? v[i] : v[i + kHalf];
        const float keep = upper ? v[i + kHalf] : v[i];
        v[i] = keep + __shfl_xor_sync(0xffffffffu, give, kMask);
    }
}
FWA_DEVICE void column_sums_over_g(float (&v)[16], float (&out)[2]) {
    const int lane = threadIdx.x & 31;
    column_sums_step<8, 16>(v, lane);
    column_sums_step<4, 8>(v, lane);
    column_sums_step<2, 4>(v, lane);
    out[0] = v[0];
    out[1] = v[1];
}

}  // namespace fwa
