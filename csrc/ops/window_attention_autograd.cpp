// Autograd of the packed-qkv op in C++ (TORCH_LIBRARY_IMPL(..., Autograd, ...)): the forward op is
// called below autograd and a torch::autograd::Function node records its backward op.
//
// The timm drop-in modules call this op once per layer in every training step; a Python autograd
// registration (torch.library.register_autograd, as ops.py does for the unpacked ops) costs
// ~100 us of host time per call and as much again in the backward, which shows in the step time of
// a whole model whose GPU waits on the host (benchmarks/NOTES.md). torch.compile traces through
// this kernel like through a Python one (AOTAutograd runs the Autograd key with fake tensors).
#include <ATen/core/dispatch/Dispatcher.h>
#include <torch/autograd.h>
#include <torch/library.h>

#include "ops/window_attention_common.h"

namespace flash_window_attn {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

using PackedFwdSig = std::tuple<at::Tensor, at::Tensor, at::Tensor>(
    const at::Tensor&, int64_t, const std::optional<at::Tensor>&, const std::optional<at::Tensor>&,
    const std::optional<at::Tensor>&, double, double);
using PackedBwdSig = std::tuple<at::Tensor, at::Tensor, at::Tensor>(
    const at::Tensor&, const at::Tensor&, const at::Tensor&, const at::Tensor&,
    const std::optional<at::Tensor>&, const std::optional<at::Tensor>&, const std::optional<at::Tensor>&,
    double, int64_t, double, const at::Tensor&);

const c10::TypedOperatorHandle<PackedFwdSig>& packed_fwd_op() {
  static const auto op = c10::Dispatcher::singleton()
                             .findSchemaOrThrow("flash_window_attn::window_attention_qkvpacked_fwd", "")
                             .typed<PackedFwdSig>();
  return op;
}

const c10::TypedOperatorHandle<PackedBwdSig>& packed_bwd_op() {
  static const auto op = c10::Dispatcher::singleton()
                             .findSchemaOrThrow("flash_window_attn::window_attention_qkvpacked_bwd", "")
                             .typed<PackedBwdSig>();
  return op;
}

std::optional<at::Tensor> opt(const at::Tensor& t) {
  return t.defined() ? std::optional<at::Tensor>(t) : std::nullopt;
}

class QkvPackedFunction : public torch::autograd::Function<QkvPackedFunction> {
 public:
  static variable_list forward(AutogradContext* ctx, const at::Tensor& qkv, int64_t num_heads,
                               const std::optional<at::Tensor>& bias, const std::optional<at::Tensor>& mask,
                               const std::optional<at::Tensor>& logit_scale, double scale, double dropout_p) {
    at::AutoDispatchBelowADInplaceOrView below;
    auto [out, lse, rng_state] = packed_fwd_op().call(qkv, num_heads, bias, mask, logit_scale, scale, dropout_p);
    ctx->save_for_backward({qkv, out, lse, bias.value_or(at::Tensor()), mask.value_or(at::Tensor()),
                            logit_scale.value_or(at::Tensor()), rng_state});
    ctx->saved_data["num_heads"] = num_heads;
    ctx->saved_data["scale"] = scale;
    ctx->saved_data["dropout_p"] = dropout_p;
    ctx->mark_non_differentiable({lse, rng_state});
    return {out, lse, rng_state};
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const variable_list saved = ctx->get_saved_variables();
    const at::Tensor &qkv = saved[0], &out = saved[1], &lse = saved[2], &bias = saved[3], &mask = saved[4],
                     &logit_scale = saved[5], &rng_state = saved[6];
    // one gradient per forward argument: qkv, num_heads, bias, mask, logit_scale, scale, dropout_p
    variable_list result(7);
    at::Tensor dout = grads[0];
    if (!dout.defined()) return result;   // out did not reach the loss
    if (dout.stride(-1) != 1) dout = dout.contiguous();   // the op wants a unit last stride
    auto [dqkv, dbias, dlogit_scale] = packed_bwd_op().call(
        dout, qkv, out, lse, opt(bias), opt(mask), opt(logit_scale), ctx->saved_data["scale"].toDouble(),
        ctx->saved_data["num_heads"].toInt(), ctx->saved_data["dropout_p"].toDouble(), rng_state);
    // (the kernels compute every gradient anyway; autograd drops those of inputs that need none)
    result[0] = dqkv;
    if (bias.defined()) result[2] = dbias;
    if (logit_scale.defined()) result[4] = dlogit_scale;
    return result;
  }
};

std::tuple<at::Tensor, at::Tensor, at::Tensor> qkvpacked_fwd_autograd(
    const at::Tensor& qkv, int64_t num_heads, const std::optional<at::Tensor>& bias,
    const std::optional<at::Tensor>& mask, const std::optional<at::Tensor>& logit_scale, double scale,
    double dropout_p) {
  TORCH_CHECK_VALUE(!(mask.has_value() && mask->requires_grad()), "window_attention_qkvpacked: mask receives no "
                    "gradient; pass mask.detach() (got a mask with requires_grad=True)");
  variable_list r = QkvPackedFunction::apply(qkv, num_heads, bias, mask, logit_scale, scale, dropout_p);
  return {r[0], r[1], r[2]};
}

}  // namespace

TORCH_LIBRARY_IMPL(flash_window_attn, Autograd, m) {
  m.impl("window_attention_qkvpacked_fwd", &qkvpacked_fwd_autograd);
}

}  // namespace flash_window_attn
