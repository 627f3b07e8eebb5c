// One instantiation per file: the kernels compile in parallel (see setup.py).
#include "../fwd_kernel.cuh"

namespace fwa {
template <>
cudaError_t run_fwd<__half, 128>(const FwdParams& p, cudaStream_t s) {
    return launch_fwd<__half, 128>(p, s);
}
}  // namespace fwa
