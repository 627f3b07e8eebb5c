// Host-side dispatch of the local-attention kernels over their (dtype, head-dim bucket)
// instantiations (csrc/kernels/local/instantiations/). Torch-free.
#include "local_attn.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

namespace fwa {

int local_attn_head_dim_bucket(int d) {
    if (d <= 0) return 0;
    return d <= 32 ? 32 : (d <= 64 ? 64 : (d <= 128 ? 128 : 0));
}

#define FWA_LOCAL_HEADDIM_SWITCH(D, ...)                                       \
    [&]() -> cudaError_t {                                                     \
        switch (local_attn_head_dim_bucket(D)) {                               \
            case 32: { constexpr int kHeadDim = 32; return __VA_ARGS__(); }    \
            case 64: { constexpr int kHeadDim = 64; return __VA_ARGS__(); }    \
            case 128: { constexpr int kHeadDim = 128; return __VA_ARGS__(); }  \
            default: return cudaErrorInvalidValue;                             \
        }                                                                      \
    }()

cudaError_t local_attn_fwd(Dtype dt, const LocalFwdParams& p, cudaStream_t s) {
    return FWA_LOCAL_HEADDIM_SWITCH(p.d, [&] {
        return dt == Dtype::kFloat16 ? run_local_fwd<__half, kHeadDim>(p, s)
                                     : run_local_fwd<__nv_bfloat16, kHeadDim>(p, s);
    });
}

cudaError_t local_attn_bwd(Dtype dt, const LocalBwdParams& p, cudaStream_t s) {
    return FWA_LOCAL_HEADDIM_SWITCH(p.d, [&] {
        return dt == Dtype::kFloat16 ? run_local_bwd<__half, kHeadDim>(p, s)
                                     : run_local_bwd<__nv_bfloat16, kHeadDim>(p, s);
    });
}

#undef FWA_LOCAL_HEADDIM_SWITCH

}  // namespace fwa
