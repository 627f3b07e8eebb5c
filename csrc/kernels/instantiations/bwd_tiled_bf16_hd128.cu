// One instantiation per file: the kernels compile in parallel (see setup.py).
#include "../bwd_tiled_kernels.cuh"

namespace fwa {
template <>
cudaError_t run_bwd_tiled<__nv_bfloat16, 128>(const BwdParams& p, cudaStream_t s) {
    return launch_bwd_tiled<__nv_bfloat16, 128>(p, s);
}
}  // namespace fwa
