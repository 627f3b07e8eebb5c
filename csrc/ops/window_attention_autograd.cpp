// Autograd of the window-attention forward ops in C++ (TORCH_LIBRARY_IMPL(..., Autograd, ...)):
// window_attention_fwd, window_attention_dropout_fwd and window_attention_qkvpacked_fwd. Each
// calls its forward op below autograd, and a torch::autograd::Function node records the matching
// backward op.
//
// A Python autograd registration (torch.library.register_autograd) costs ~100 us of host time per
// call and as much again in the backward: for small problems (and for the timm drop-ins, which
// call the packed op once per layer in every training step) the GPU then waits on the host
// (benchmarks/NOTES.md, sessions 4 and 16). torch.compile traces through these kernels like
// through a Python one (AOTAutograd runs the Autograd key with fake tensors).
#include <ATen/core/dispatch/Dispatcher.h>
#include <torch/autograd.h>
#include <torch/library.h>

#include "ops/autograd_common.h"
#include "ops/window_attention_common.h"

namespace flash_window_attn {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

using PackedFwdSig = std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor>(
    const at::Tensor&, int64_t, const std::optional<at::Tensor>&, const std::optional<at::Tensor>&,
    const std::optional<at::Tensor>&, double, double, bool);
using PackedBwdSig = std::tuple<at::Tensor, at::Tensor, at::Tensor>(
    const at::Tensor&, const at::Tensor&, const at::Tensor&, const at::Tensor&,
    const std::optional<at::Tensor>&, const std::optional<at::Tensor>&, const std::optional<at::Tensor>&,
    double, int64_t, double, const at::Tensor&, const std::optional<at::Tensor>&);

const c10::TypedOperatorHandle<PackedFwdSig>& packed_fwd_op() {
  static const auto op = find_op<PackedFwdSig>("flash_window_attn::window_attention_qkvpacked_fwd");
  return op;
}
const c10::TypedOperatorHandle<PackedBwdSig>& packed_bwd_op() {
  static const auto op = find_op<PackedBwdSig>("flash_window_attn::window_attention_qkvpacked_bwd");
  return op;
}

std::optional<at::Tensor> opt(const at::Tensor& t) {
  return t.defined() ? std::optional<at::Tensor>(t) : std::nullopt;
}

void check_mask_no_grad(const std::optional<at::Tensor>& mask, const char* what) {
  TORCH_CHECK_VALUE(!(mask.has_value() && mask->defined() && mask->requires_grad()), what,
                    ": mask receives no gradient; pass mask.detach() (got a mask with requires_grad=True)");
}

// Whether to ask the forward op for its inverse norms (qk_inv_norm), which the node then saves for
// the backward op: where a backward will follow (grad mode on and a differentiable input requiring
// grad; Function::forward runs with grad mode off, so this is decided before apply) and that
// backward reads them instead of q and k: V2 on the CUDA tiled path (16-bit inputs, N > 64). The
// N <= 64 kernel computes its own from the tiles it holds and the CPU and fp32 paths recompute
// theirs, so elsewhere the forward's writes would only cost (3 us at (4096, 3, 64)). N is x's size
// in dimension n_dim; a symbolic N (torch.compile with dynamic shapes) asks without a guard on it,
// so that one graph still serves every N.
bool ask_inv_norms(const at::Tensor& x, int64_t n_dim, const std::optional<at::Tensor>& logit_scale,
                   std::initializer_list<const at::Tensor*> inputs) {
  if (!logit_scale.has_value() || !x.is_cuda() ||
      (x.scalar_type() != at::kHalf && x.scalar_type() != at::kBFloat16) || !any_requires_grad(inputs))
    return false;
  if (x.dim() > n_dim) {
    const std::optional<int64_t> N = x.sym_size(n_dim).maybe_as_int();
    if (N.has_value() && *N <= 64) return false;
  }
  return true;
}

// The forward op's qk_inv_norm as its caller asked for it: the saved one, or the empty tensor
// where the caller did not ask (the result's shape follows the op's own arguments).
// Where the op was not asked for them either (want false), its own result is that empty tensor: one
// allocation less. (Decided from the flags, not from norms' size: under torch.compile with dynamic
// shapes the sizes are symbolic.)
at::Tensor caller_norms(const at::Tensor& norms, bool asked, bool want) {
  return asked || !want ? norms : at::empty({0}, norms.options());
}

// ---------------------------------------------------------------------------------------------
// window_attention_fwd / window_attention_dropout_fwd (q, k, v separate)

using FwdSig = std::tuple<at::Tensor, at::Tensor, at::Tensor>(const at::Tensor&, const at::Tensor&, const at::Tensor&,
                                                  const std::optional<at::Tensor>&, const std::optional<at::Tensor>&,
                                                  const std::optional<at::Tensor>&, double, bool);
using BwdSig = std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor, at::Tensor>(
    const at::Tensor&, const at::Tensor&, const at::Tensor&, const at::Tensor&, const at::Tensor&,
    const at::Tensor&, const std::optional<at::Tensor>&, const std::optional<at::Tensor>&,
    const std::optional<at::Tensor>&, double, const std::optional<at::Tensor>&);
using DropoutFwdSig = std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor>(
    const at::Tensor&, const at::Tensor&, const at::Tensor&, const std::optional<at::Tensor>&,
    const std::optional<at::Tensor>&, const std::optional<at::Tensor>&, double, double, bool);
using DropoutBwdSig = std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor, at::Tensor>(
    const at::Tensor&, const at::Tensor&, const at::Tensor&, const at::Tensor&, const at::Tensor&,
    const at::Tensor&, const std::optional<at::Tensor>&, const std::optional<at::Tensor>&,
    const std::optional<at::Tensor>&, double, double, const at::Tensor&, const std::optional<at::Tensor>&);

const c10::TypedOperatorHandle<FwdSig>& fwd_op() {
  static const auto op = find_op<FwdSig>("flash_window_attn::window_attention_fwd");
  return op;
}
const c10::TypedOperatorHandle<BwdSig>& bwd_op() {
  static const auto op = find_op<BwdSig>("flash_window_attn::window_attention_bwd");
  return op;
}
const c10::TypedOperatorHandle<DropoutFwdSig>& dropout_fwd_op() {
  static const auto op = find_op<DropoutFwdSig>("flash_window_attn::window_attention_dropout_fwd");
  return op;
}
const c10::TypedOperatorHandle<DropoutBwdSig>& dropout_bwd_op() {
  static const auto op = find_op<DropoutBwdSig>("flash_window_attn::window_attention_dropout_bwd");
  return op;
}

// Gradients of the forward op's inputs (q, k, v, bias, mask, logit_scale, then n_rest non-tensor
// arguments) from the backward op's (dq, dk, dv, dbias, dlogit_scale). Gradients of inputs that
// need none are dropped by autograd; bias / logit_scale ones only exist where the input does.
variable_list input_grads(const std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor, at::Tensor>& g,
                          const at::Tensor& bias, const at::Tensor& logit_scale, int n_rest) {
  variable_list result(6 + n_rest);
  result[0] = std::get<0>(g);
  result[1] = std::get<1>(g);
  result[2] = std::get<2>(g);
  if (bias.defined()) result[3] = std::get<3>(g);
  if (logit_scale.defined()) result[5] = std::get<4>(g);
  return result;
}

class WindowAttnFunction : public torch::autograd::Function<WindowAttnFunction> {
 public:
  static variable_list forward(AutogradContext* ctx, const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                               const std::optional<at::Tensor>& bias, const std::optional<at::Tensor>& mask,
                               const std::optional<at::Tensor>& logit_scale, double scale, bool return_inv_norms,
                               bool want_inv_norms) {
    at::AutoDispatchBelowADInplaceOrView below;
    auto [out, lse, qk_inv_norm] = fwd_op().call(q, k, v, bias, mask, logit_scale, scale, want_inv_norms);
    ctx->save_for_backward({q, k, v, out, lse, bias.value_or(at::Tensor()), mask.value_or(at::Tensor()),
                            logit_scale.value_or(at::Tensor()), qk_inv_norm});
    ctx->saved_data["scale"] = scale;
    at::Tensor norms_out = caller_norms(qk_inv_norm, return_inv_norms, want_inv_norms);
    ctx->mark_non_differentiable({lse, norms_out});
    ctx->set_materialize_grads(false);   // no zero-filled gradients for lse, qk_inv_norm; undefined dout: see backward
    return {out, lse, norms_out};
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const variable_list saved = ctx->get_saved_variables();
    const at::Tensor &bias = saved[5], &logit_scale = saved[7];
    if (!grads[0].defined()) return variable_list(9);   // out did not reach the loss
    auto g = bwd_op().call(unit_last_stride(grads[0]), saved[0], saved[1], saved[2], saved[3], saved[4], opt(bias),
                           opt(saved[6]), opt(logit_scale), ctx->saved_data["scale"].toDouble(), opt(saved[8]));
    return input_grads(g, bias, logit_scale, 3);   // scale, return_inv_norms, want_inv_norms
  }
};

class DropoutWindowAttnFunction : public torch::autograd::Function<DropoutWindowAttnFunction> {
 public:
  static variable_list forward(AutogradContext* ctx, const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                               const std::optional<at::Tensor>& bias, const std::optional<at::Tensor>& mask,
                               const std::optional<at::Tensor>& logit_scale, double scale, double dropout_p,
                               bool return_inv_norms, bool want_inv_norms) {
    at::AutoDispatchBelowADInplaceOrView below;
    auto [out, lse, rng_state, qk_inv_norm] =
        dropout_fwd_op().call(q, k, v, bias, mask, logit_scale, scale, dropout_p, want_inv_norms);
    ctx->save_for_backward({q, k, v, out, lse, bias.value_or(at::Tensor()), mask.value_or(at::Tensor()),
                            logit_scale.value_or(at::Tensor()), rng_state, qk_inv_norm});
    ctx->saved_data["scale"] = scale;
    ctx->saved_data["dropout_p"] = dropout_p;
    at::Tensor norms_out = caller_norms(qk_inv_norm, return_inv_norms, want_inv_norms);
    ctx->mark_non_differentiable({lse, rng_state, norms_out});
    ctx->set_materialize_grads(false);   // no zero-filled gradients for lse, rng_state, qk_inv_norm
    return {out, lse, rng_state, norms_out};
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const variable_list saved = ctx->get_saved_variables();
    const at::Tensor &bias = saved[5], &logit_scale = saved[7];
    if (!grads[0].defined()) return variable_list(10);
    auto g = dropout_bwd_op().call(unit_last_stride(grads[0]), saved[0], saved[1], saved[2], saved[3], saved[4],
                                   opt(bias), opt(saved[6]), opt(logit_scale), ctx->saved_data["scale"].toDouble(),
                                   ctx->saved_data["dropout_p"].toDouble(), saved[8], opt(saved[9]));
    return input_grads(g, bias, logit_scale, 4);   // scale, dropout_p, return_inv_norms, want_inv_norms
  }
};

std::tuple<at::Tensor, at::Tensor, at::Tensor> window_fwd_autograd(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                                                       const std::optional<at::Tensor>& bias,
                                                       const std::optional<at::Tensor>& mask,
                                                       const std::optional<at::Tensor>& logit_scale, double scale,
                                                       bool return_inv_norms) {
  // No node to record: call the op directly (the mask counts as apply counted it: where only the
  // mask requires grad, apply made a node as well, which gives it no gradient)
  if (!any_requires_grad({&q, &k, &v, opt_ptr(bias), opt_ptr(mask), opt_ptr(logit_scale)})) {
    at::AutoDispatchBelowADInplaceOrView below;
    return fwd_op().call(q, k, v, bias, mask, logit_scale, scale, return_inv_norms);
  }
  const bool want =
      return_inv_norms || ask_inv_norms(q, 2, logit_scale, {&q, &k, &v, opt_ptr(bias), opt_ptr(logit_scale)});
  variable_list r = WindowAttnFunction::apply(q, k, v, bias, mask, logit_scale, scale, return_inv_norms, want);
  return {r[0], r[1], r[2]};
}

std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor> window_dropout_fwd_autograd(
    const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, const std::optional<at::Tensor>& bias,
    const std::optional<at::Tensor>& mask, const std::optional<at::Tensor>& logit_scale, double scale,
    double dropout_p, bool return_inv_norms) {
  if (!any_requires_grad({&q, &k, &v, opt_ptr(bias), opt_ptr(mask), opt_ptr(logit_scale)})) {
    at::AutoDispatchBelowADInplaceOrView below;
    return dropout_fwd_op().call(q, k, v, bias, mask, logit_scale, scale, dropout_p, return_inv_norms);
  }
  const bool want =
      return_inv_norms || ask_inv_norms(q, 2, logit_scale, {&q, &k, &v, opt_ptr(bias), opt_ptr(logit_scale)});
  variable_list r =
      DropoutWindowAttnFunction::apply(q, k, v, bias, mask, logit_scale, scale, dropout_p, return_inv_norms, want);
  return {r[0], r[1], r[2], r[3]};
}

// ---------------------------------------------------------------------------------------------
// window_attention_qkvpacked_fwd

class QkvPackedFunction : public torch::autograd::Function<QkvPackedFunction> {
 public:
  static variable_list forward(AutogradContext* ctx, const at::Tensor& qkv, int64_t num_heads,
                               const std::optional<at::Tensor>& bias, const std::optional<at::Tensor>& mask,
                               const std::optional<at::Tensor>& logit_scale, double scale, double dropout_p,
                               bool return_inv_norms, bool want_inv_norms) {
    at::AutoDispatchBelowADInplaceOrView below;
    auto [out, lse, rng_state, qk_inv_norm] =
        packed_fwd_op().call(qkv, num_heads, bias, mask, logit_scale, scale, dropout_p, want_inv_norms);
    ctx->save_for_backward({qkv, out, lse, bias.value_or(at::Tensor()), mask.value_or(at::Tensor()),
                            logit_scale.value_or(at::Tensor()), rng_state, qk_inv_norm});
    ctx->saved_data["num_heads"] = num_heads;
    ctx->saved_data["scale"] = scale;
    ctx->saved_data["dropout_p"] = dropout_p;
    at::Tensor norms_out = caller_norms(qk_inv_norm, return_inv_norms, want_inv_norms);
    ctx->mark_non_differentiable({lse, rng_state, norms_out});
    ctx->set_materialize_grads(false);   // no zero-filled gradients for lse, rng_state, qk_inv_norm
    return {out, lse, rng_state, norms_out};
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const variable_list saved = ctx->get_saved_variables();
    const at::Tensor &qkv = saved[0], &out = saved[1], &lse = saved[2], &bias = saved[3], &mask = saved[4],
                     &logit_scale = saved[5], &rng_state = saved[6], &qk_inv_norm = saved[7];
    // one gradient per forward argument: qkv, num_heads, bias, mask, logit_scale, scale, dropout_p,
    // return_inv_norms, want_inv_norms
    variable_list result(9);
    if (!grads[0].defined()) return result;   // out did not reach the loss
    auto [dqkv, dbias, dlogit_scale] = packed_bwd_op().call(
        unit_last_stride(grads[0]), qkv, out, lse, opt(bias), opt(mask), opt(logit_scale), ctx->saved_data["scale"].toDouble(),
        ctx->saved_data["num_heads"].toInt(), ctx->saved_data["dropout_p"].toDouble(), rng_state, opt(qk_inv_norm));
    // (the kernels compute every gradient anyway; autograd drops those of inputs that need none)
    result[0] = dqkv;
    if (bias.defined()) result[2] = dbias;
    if (logit_scale.defined()) result[4] = dlogit_scale;
    return result;
  }
};

std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor> qkvpacked_fwd_autograd(
    const at::Tensor& qkv, int64_t num_heads, const std::optional<at::Tensor>& bias,
    const std::optional<at::Tensor>& mask, const std::optional<at::Tensor>& logit_scale, double scale,
    double dropout_p, bool return_inv_norms) {
  check_mask_no_grad(mask, "window_attention_qkvpacked");
  if (!any_requires_grad({&qkv, opt_ptr(bias), opt_ptr(logit_scale)})) {
    at::AutoDispatchBelowADInplaceOrView below;
    return packed_fwd_op().call(qkv, num_heads, bias, mask, logit_scale, scale, dropout_p, return_inv_norms);
  }
  const bool want = return_inv_norms || ask_inv_norms(qkv, 1, logit_scale, {&qkv, opt_ptr(bias), opt_ptr(logit_scale)});
  variable_list r =
      QkvPackedFunction::apply(qkv, num_heads, bias, mask, logit_scale, scale, dropout_p, return_inv_norms, want);
  return {r[0], r[1], r[2], r[3]};
}

}  // namespace

TORCH_LIBRARY_IMPL(flash_window_attn, Autograd, m) {
  m.impl("window_attention_fwd", &window_fwd_autograd);
  m.impl("window_attention_dropout_fwd", &window_dropout_fwd_autograd);
  m.impl("window_attention_qkvpacked_fwd", &qkvpacked_fwd_autograd);
}

}  // namespace flash_window_attn
