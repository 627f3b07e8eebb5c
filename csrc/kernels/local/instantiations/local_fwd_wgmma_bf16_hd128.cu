// One instantiation per file: the kernels compile in parallel (see setup.py).
#include "../local_fwd_wgmma_kernel.cuh"

namespace fwa {
template <>
cudaError_t run_local_fwd_wgmma<__nv_bfloat16, 128>(const LocalFwdParams& p, cudaStream_t s) {
    return launch_local_fwd_wgmma<__nv_bfloat16, 128>(p, s);
}
}  // namespace fwa
