// One instantiation per file: the kernels compile in parallel (see setup.py).
#include "../bwd_small_kernel.cuh"

namespace fwa {
template <>
cudaError_t run_bwd_small<__half, 32>(const BwdParams& p, cudaStream_t s) {
    return launch_bwd_small<__half, 32>(p, s);
}
template <>
int bwd_small_ctas_per_sm<__half, 32>() {
    int ctas = 1;
    launch_bwd_small<__half, 32>(BwdParams{}, nullptr, &ctas);
    return ctas;
}
}  // namespace fwa
