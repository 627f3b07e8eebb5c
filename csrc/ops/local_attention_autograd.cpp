// Autograd of local_attention_fwd in C++ (TORCH_LIBRARY_IMPL(..., Autograd, ...)): the forward op
// is called below autograd and a torch::autograd::Function node records local_attention_bwd.
// Same design as window_attention_autograd.cpp: a Python registration (torch.library.
// register_autograd) cost ~150 us of host time per forward + backward, more than the GPU work of
// a 4k-token band (benchmarks/NOTES.md, session 16); torch.compile traces through this kernel
// like through a Python one.
#include <ATen/core/dispatch/Dispatcher.h>
#include <torch/autograd.h>
#include <torch/library.h>

#include "ops/autograd_common.h"
#include "ops/local_attention_common.h"

namespace flash_window_attn {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

using LocalFwdSig = std::tuple<at::Tensor, at::Tensor>(const at::Tensor&, const at::Tensor&, const at::Tensor&,
                                                       int64_t, int64_t, int64_t, double);
using LocalFwdResSig = std::tuple<at::Tensor, at::Tensor, at::Tensor>(const at::Tensor&, const at::Tensor&,
                                                                      const at::Tensor&, int64_t, int64_t, int64_t,
                                                                      double);
using LocalBwdSig = std::tuple<at::Tensor, at::Tensor, at::Tensor>(
    const at::Tensor&, const at::Tensor&, const at::Tensor&, const at::Tensor&, const at::Tensor&,
    const at::Tensor&, int64_t, int64_t, int64_t, double, const std::optional<at::Tensor>&);

const c10::TypedOperatorHandle<LocalFwdSig>& local_fwd_op() {
  static const auto op = find_op<LocalFwdSig>("flash_window_attn::local_attention_fwd");
  return op;
}
const c10::TypedOperatorHandle<LocalFwdResSig>& local_fwd_res_op() {
  static const auto op = find_op<LocalFwdResSig>("flash_window_attn::local_attention_fwd_res");
  return op;
}
const c10::TypedOperatorHandle<LocalBwdSig>& local_bwd_op() {
  static const auto op = find_op<LocalBwdSig>("flash_window_attn::local_attention_bwd");
  return op;
}

class LocalAttnFunction : public torch::autograd::Function<LocalAttnFunction> {
 public:
  static variable_list forward(AutogradContext* ctx, const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                               int64_t left, int64_t right, int64_t block, double scale) {
    at::AutoDispatchBelowADInplaceOrView below;
    // out_lo (fp16 / bf16 on CUDA): the residual of out's rounding, for the
    // backward's D (local_attention.cpp), where that backward can use it (local_out_lo_wanted);
    // the plain forward elsewhere (the same out and lse) writes and saves none. (Whether it is
    // saved is told by the number of saved tensors, not by its size, which may be symbolic.)
    at::Tensor out, lse, out_lo;
    if (local_out_lo_wanted(q, k)) {
      std::tie(out, lse, out_lo) = local_fwd_res_op().call(q, k, v, left, right, block, scale);
      ctx->save_for_backward({q, k, v, out, lse, out_lo});
    } else {
      std::tie(out, lse) = local_fwd_op().call(q, k, v, left, right, block, scale);
      ctx->save_for_backward({q, k, v, out, lse});
    }
    ctx->saved_data["left"] = left;
    ctx->saved_data["right"] = right;
    ctx->saved_data["block"] = block;
    ctx->saved_data["scale"] = scale;
    ctx->mark_non_differentiable({lse});
    // no zero-filled gradient for lse (autograd would allocate and fill one per backward); an
    // undefined gradient of out is handled in backward
    ctx->set_materialize_grads(false);
    return {out, lse};
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    // one gradient per forward argument: q, k, v, left, right, block, scale
    variable_list result(7);
    if (!grads[0].defined()) return result;   // out did not reach the loss (lse is not differentiable)
    const at::Tensor dout = unit_last_stride(grads[0]);
    const variable_list saved = ctx->get_saved_variables();
    const std::optional<at::Tensor> out_lo =
        saved.size() > 5 ? std::optional<at::Tensor>(saved[5]) : std::optional<at::Tensor>();
    auto [dq, dk, dv] = local_bwd_op().call(dout, saved[0], saved[1], saved[2], saved[3], saved[4],
                                            ctx->saved_data["left"].toInt(), ctx->saved_data["right"].toInt(),
                                            ctx->saved_data["block"].toInt(), ctx->saved_data["scale"].toDouble(),
                                            out_lo);
    result[0] = dq;
    result[1] = dk;
    result[2] = dv;
    return result;
  }
};

std::tuple<at::Tensor, at::Tensor> local_fwd_autograd(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                                                      int64_t left, int64_t right, int64_t block, double scale) {
  if (!any_requires_grad({&q, &k, &v})) {   // no node to record
    at::AutoDispatchBelowADInplaceOrView below;
    return local_fwd_op().call(q, k, v, left, right, block, scale);
  }
  variable_list r = LocalAttnFunction::apply(q, k, v, left, right, block, scale);
  return {r[0], r[1]};
}

}  // namespace

#ifdef FWA_CPU_ONLY
bool local_out_lo_wanted(const at::Tensor&, const at::Tensor&) { return false; }   // (no CUDA backward)
#endif

TORCH_LIBRARY_IMPL(flash_window_attn, Autograd, m) {
  m.impl("local_attention_fwd", &local_fwd_autograd);
}

}  // namespace flash_window_attn
