// Shared by the swin_cpb_bias op's CPU / ATen implementation (swin_cpb.cpp) and its CUDA glue
// (swin_cpb_cuda.cpp).
#pragma once

#include <ATen/ATen.h>

#include <optional>
#include <tuple>

namespace flash_window_attn {

constexpr const char* kCpbOp = "swin_cpb_bias: ";

// T table rows (coords.numel() / 2), the MLP's hidden width, H heads, N tokens per window.
struct CpbSizes { int64_t T, hidden, H, N; };

// Shapes, dtypes and devices of the op's arguments (ValueError / TypeError naming the argument).
CpbSizes check_cpb_args(const at::Tensor& coords, const at::Tensor& w1, const std::optional<at::Tensor>& b1,
                        const at::Tensor& w2, const at::Tensor& index);
// The backward's grad (H, N, N) and the forward's activations h (T, hidden), sig (T, H).
void check_cpb_saved(const at::Tensor& grad, const at::Tensor& h, const at::Tensor& sig, const CpbSizes& s);

// The ATen implementations (any dtype, CPU or CUDA).
at::Tensor cpb_bias_impl(const at::Tensor& coords, const at::Tensor& w1, const std::optional<at::Tensor>& b1,
                         const at::Tensor& w2, const at::Tensor& index);
std::tuple<at::Tensor, at::Tensor, at::Tensor> cpb_bias_forward_impl(
    const at::Tensor& coords, const at::Tensor& w1, const std::optional<at::Tensor>& b1, const at::Tensor& w2,
    const at::Tensor& index);
std::tuple<at::Tensor, at::Tensor, at::Tensor> cpb_bias_backward_impl(
    const at::Tensor& grad, const at::Tensor& coords, const at::Tensor& w1, const std::optional<at::Tensor>& b1,
    const at::Tensor& w2, const at::Tensor& index, const at::Tensor& h, const at::Tensor& sig);

}  // namespace flash_window_attn
