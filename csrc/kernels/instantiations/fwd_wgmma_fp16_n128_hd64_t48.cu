// One instantiation per file: the kernels compile in parallel (see setup.py).
#include "../fwd_wgmma_kernel.cuh"

namespace fwa {
template <>
cudaError_t run_fwd_wgmma_hd64<__half, 128, 48>(const FwdParams& p, cudaStream_t s) {
    return launch_fwd_wgmma<__half, 128, 48, 64>(p, s);
}
}  // namespace fwa
