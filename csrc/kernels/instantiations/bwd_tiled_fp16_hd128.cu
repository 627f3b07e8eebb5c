// One instantiation per file: the kernels compile in parallel (see setup.py).
#include "../bwd_tiled_kernels.cuh"

namespace fwa {
template <>
cudaError_t run_bwd_tiled<__half, 128>(const BwdParams& p, cudaStream_t s) {
    return launch_bwd_tiled<__half, 128>(p, s);
}
template <>
int bwd_q_ctas_per_sm<__half, 128>(const FwdParams& p) {
    BwdParams plan;
    static_cast<FwdParams&>(plan) = p;
    int ctas = 1;
    launch_bwd_tiled<__half, 128>(plan, nullptr, &ctas, /*assume_strip=*/true);
    return ctas;
}
}  // namespace fwa
