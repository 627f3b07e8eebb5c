// One instantiation per file: the kernels compile in parallel (see setup.py).
#include "../bwd_tiled_kernels.cuh"

namespace fwa {
template <>
cudaError_t run_bwd_tiled<__nv_bfloat16, 64>(const BwdParams& p, cudaStream_t s) {
    return launch_bwd_tiled<__nv_bfloat16, 64>(p, s);
}
template <>
int bwd_q_ctas_per_sm<__nv_bfloat16, 64>(const FwdParams& p) {
    BwdParams plan;
    static_cast<FwdParams&>(plan) = p;
    int ctas = 1;
    launch_bwd_tiled<__nv_bfloat16, 64>(plan, nullptr, &ctas, /*assume_strip=*/true);
    return ctas;
}
}  // namespace fwa
