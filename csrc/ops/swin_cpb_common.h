// Shared by the swin_cpb_bias op's CPU / ATen implementation (swin_cpb.cpp) and its CUDA glue
// (swin_cpb_cuda.cpp).
#pragma once

#include <ATen/ATen.h>

#include <initializer_list>
#include <optional>
#include <tuple>
#include <utility>
#include <vector>

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

// The batched ops (several layers' biases in one call; swin_cpb.cpp's header comment):
// per-layer lists, each of the same length (ValueError naming the list otherwise).
using CpbBatchOut = std::tuple<std::vector<at::Tensor>, std::vector<at::Tensor>, std::vector<at::Tensor>>;
size_t check_cpb_batch_lists(std::initializer_list<std::pair<at::TensorList, const char*>> lists);
// The batch of layer(0), ..., layer(n - 1), each returning one layer's three results.
template <class LayerFn>
CpbBatchOut cpb_per_layer(size_t n, LayerFn&& layer) {
  CpbBatchOut out;
  for (size_t i = 0; i < n; ++i) {
    auto [a, b, c] = layer(i);
    std::get<0>(out).push_back(std::move(a));
    std::get<1>(out).push_back(std::move(b));
    std::get<2>(out).push_back(std::move(c));
  }
  return out;
}
// Their ATen implementations: the one-layer ops' ATen implementations, layer by layer.
CpbBatchOut cpb_batch_forward_impl(at::TensorList coords, at::TensorList w1, at::TensorList b1, at::TensorList w2,
                                   at::TensorList index);
CpbBatchOut cpb_batch_backward_impl(at::TensorList grad, at::TensorList coords, at::TensorList w1,
                                    at::TensorList b1, at::TensorList w2, at::TensorList index, at::TensorList h,
                                    at::TensorList sig);

}  // namespace flash_window_attn
