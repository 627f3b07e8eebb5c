// One instantiation per file: the kernels compile in parallel (see setup.py).
#include "../fwd_wgmma_kernel.cuh"

namespace fwa {
template <>
cudaError_t run_fwd_wgmma_hd64<__nv_bfloat16, 64, 32>(const FwdParams& p, cudaStream_t s) {
    return launch_fwd_wgmma<__nv_bfloat16, 64, 32, 64>(p, s);
}
}  // namespace fwa
