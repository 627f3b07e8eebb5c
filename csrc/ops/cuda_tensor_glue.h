// Tensor -> kernel-parameter glue shared by the CUDA ops (window_attention_cuda.cpp,
// local_attention_cuda.cpp): the 16-byte alignment the tensor-core kernels' async row copies need,
// and the strides of a (B, H, rows, d) tensor as a fwa::TensorRef.
#pragma once

#include <ATen/ATen.h>

#include <cstdint>

#include "kernels/window_attn.h"

namespace flash_window_attn {

// The kernels read rows with 16-byte async copies: base and every used stride must be 16-byte
// aligned, and the last dimension contiguous.
inline bool kernel_ready(const at::Tensor& t) {
    const int64_t elems = 16 / t.element_size();
    if (reinterpret_cast<uintptr_t>(t.data_ptr()) % 16 != 0) return false;
    if (t.stride(3) != 1) return false;
    for (int i = 0; i < 3; ++i)
        if (t.size(i) > 1 && t.stride(i) % elems != 0) return false;
    return true;
}

// A fresh contiguous copy otherwise: .contiguous() would return an already contiguous tensor whose
// data pointer is misaligned (a view starting 2 bytes into its storage) unchanged.
inline at::Tensor as_kernel_ready(const at::Tensor& t) {
    return kernel_ready(t) ? t : t.clone(at::MemoryFormat::Contiguous);
}

inline fwa::TensorRef ref(const at::Tensor& t) {
    fwa::TensorRef r;
    r.ptr = t.data_ptr();
    r.batch_stride = t.stride(0);
    r.head_stride = t.stride(1);
    r.row_stride = t.stride(2);
    return r;
}

inline fwa::Dtype kernel_dtype(const at::Tensor& q) {
    return q.scalar_type() == at::kHalf ? fwa::Dtype::kFloat16 : fwa::Dtype::kBFloat16;
}

}  // namespace flash_window_attn
