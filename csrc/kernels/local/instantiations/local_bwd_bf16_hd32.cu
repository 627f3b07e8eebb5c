// One instantiation per file: the kernels compile in parallel (see setup.py).
#include "../local_bwd_kernels.cuh"

namespace fwa {
template <>
cudaError_t run_local_bwd<__nv_bfloat16, 32>(const LocalBwdParams& p, cudaStream_t s) {
    return launch_local_bwd<__nv_bfloat16, 32>(p, s);
}
}  // namespace fwa
