// One instantiation per file: the kernels compile in parallel (see setup.py).
#include "../bwd_small_kernel.cuh"

namespace fwa {
template <>
cudaError_t run_bwd_small<__half, 128>(const BwdParams& p, cudaStream_t s) {
    return launch_bwd_small<__half, 128>(p, s);
}
}  // namespace fwa
