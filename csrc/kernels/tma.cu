// Host side of tma.h: tensor maps through the driver's cuTensorMapEncodeTiled, reached through the
// runtime's entry-point query (no link against libcuda). Torch-free.
#include "tma.h"

#include <cudaTypedefs.h>

namespace fwa {

namespace {
PFN_cuTensorMapEncodeTiled_v12000 tensor_map_encoder() {
    static const PFN_cuTensorMapEncodeTiled_v12000 fn = [] {
        void* f = nullptr;
        cudaDriverEntryPointQueryResult q{};
        if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &f, 12000, cudaEnableDefault, &q) != cudaSuccess ||
            q != cudaDriverEntryPointSuccess) {
            (void)cudaGetLastError();   // not sticky; clear it for the caller's launch checks
            f = nullptr;
        }
        return reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(f);
    }();
    return fn;
}
}  // namespace

bool make_tma_map_bhld(CUtensorMap* map, const void* ptr, bool bf16, int B, int H, int L, int d, int64_t batch_stride,
                       int64_t head_stride, int64_t row_stride, int box_rows) {
    const PFN_cuTensorMapEncodeTiled_v12000 encode = tensor_map_encoder();
    if (encode == nullptr || B < 1 || H < 1 || L < 1 || d < 1 || box_rows < 1 || box_rows > 256) return false;
    // A dimension of size 1 is never stepped: give it a valid stride whatever the tensor's is.
    auto stride_bytes = [](int64_t s, int n) { return n == 1 ? int64_t(16) : s * 2; };
    const cuuint64_t dims[4] = {cuuint64_t(d), cuuint64_t(L), cuuint64_t(H), cuuint64_t(B)};
    const int64_t sb[3] = {stride_bytes(row_stride, L), stride_bytes(head_stride, H), stride_bytes(batch_stride, B)};
    cuuint64_t strides[3];
    for (int i = 0; i < 3; ++i) {
        if (sb[i] <= 0 || sb[i] % 16 != 0 || sb[i] >= (int64_t(1) << 40)) return false;
        strides[i] = cuuint64_t(sb[i]);
    }
    const cuuint32_t box[4] = {64, cuuint32_t(box_rows), 1, 1};
    const cuuint32_t elem_strides[4] = {1, 1, 1, 1};
    const CUresult r = encode(map, bf16 ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 : CU_TENSOR_MAP_DATA_TYPE_FLOAT16, 4,
                              const_cast<void*>(ptr), dims, strides, box, elem_strides, CU_TENSOR_MAP_INTERLEAVE_NONE,
                              CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                              CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    return r == CUDA_SUCCESS;
}

}  // namespace fwa
