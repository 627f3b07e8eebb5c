// Hopper bulk tensor copies (TMA, sm_90) and shared-memory mbarriers: the host-side tensor map of a
// 4-D (B, H, L, d) tensor of 16-bit elements with the 128-byte swizzle, and the device-side copy,
// mbarrier and register-reallocation instructions of the warp-specialised kernels. Torch-free.
#pragma once
#include <cstdint>
#include <cuda.h>
#include <cuda_runtime.h>

#include "wgmma.cuh"   // FWA_HAS_WGMMA

namespace fwa {

// A tensor map over (B, H, L, d) 16-bit elements (strides in elements, unit last stride), boxes
// of box_rows rows x 64 columns (128 bytes: the 128-byte swizzle of the wgmma tiles, written by the
// copy engine as local_wgmma.cuh's load_tile_sw128_async writes it), elements outside the tensor
// (rows >= L, columns >= d) zero-filled. Returns false where the driver entry point is missing or
// the driver rejects the map (a stride that is not a multiple of 16 bytes, a misaligned base): the
// caller then runs a kernel without TMA.
bool make_tma_map_bhld(CUtensorMap* map, const void* ptr, bool bf16, int B, int H, int L, int d, int64_t batch_stride,
                       int64_t head_stride, int64_t row_stride, int box_rows);

#if FWA_HAS_WGMMA
#define FWA_TMA_ASM(...) asm volatile(__VA_ARGS__)
#else
#define FWA_TMA_ASM(...) __trap()
#endif

FWA_DEVICE void mbar_init(uint32_t bar, uint32_t count) {
    FWA_TMA_ASM("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count) : "memory");
}
// Makes the mbarrier initialisations visible to the async proxy (the copy engine) and the CTA.
FWA_DEVICE void mbar_init_fence() { FWA_TMA_ASM("fence.mbarrier_init.release.cluster;\n" ::: "memory"); }
FWA_DEVICE void mbar_arrive(uint32_t bar) {
    FWA_TMA_ASM("{\n.reg .b64 st;\nmbarrier.arrive.shared::cta.b64 st, [%0];\n}\n" ::"r"(bar) : "memory");
}
// Arrive and announce `bytes` of copies that will complete on the barrier.
FWA_DEVICE void mbar_arrive_expect_tx(uint32_t bar, uint32_t bytes) {
    FWA_TMA_ASM("{\n.reg .b64 st;\nmbarrier.arrive.expect_tx.shared::cta.b64 st, [%0], %1;\n}\n" ::"r"(bar), "r"(bytes)
                : "memory");
}
// Wait until the phase of parity `parity` has completed.
FWA_DEVICE void mbar_wait(uint32_t bar, uint32_t parity) {
    FWA_TMA_ASM(
        "{\n.reg .pred p;\nWAIT_%=:\n"
        "mbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1;\n"
        "@!p bra WAIT_%=;\n}\n" ::"r"(bar),
        "r"(parity)
        : "memory");
}
// Copy the box at (col, row, h, b) of the tensor map into shared memory at dst (1024-byte aligned),
// completing `box bytes` of transactions on bar.
FWA_DEVICE void tma_load_4d(uint32_t dst, const CUtensorMap* map, int col, int row, int h, int b, uint32_t bar) {
    FWA_TMA_ASM(
        "cp.async.bulk.tensor.4d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4, %5}], [%6];\n" ::"r"(dst),
        "l"(reinterpret_cast<uint64_t>(map)), "r"(col), "r"(row), "r"(h), "r"(b), "r"(bar)
        : "memory");
}
template <int kRegs> FWA_DEVICE void regs_dealloc() { FWA_TMA_ASM("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(kRegs)); }
template <int kRegs> FWA_DEVICE void regs_alloc() { FWA_TMA_ASM("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(kRegs)); }
#undef FWA_TMA_ASM

}  // namespace fwa
