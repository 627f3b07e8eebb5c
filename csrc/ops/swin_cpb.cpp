// Swin V2's continuous position bias as one op with a C++ autograd kernel:
//
//   swin_cpb_bias(Tensor coords, Tensor w1, Tensor? b1, Tensor w2, Tensor index) -> Tensor bias
//       coords (..., 2) relative-coordinate table (T rows after flattening), w1 (hidden, 2),
//       b1 (hidden) or None, w2 (H, hidden), index (N, N) int64 into the T rows:
//       bias = 16 * sigmoid(relu(coords w1ᵀ + b1) w2ᵀ)[index]  as (H, N, N), contiguous
//   swin_cpb_bias_forward(same arguments) -> (bias, h, sig)   the forward of the autograd kernel
//   swin_cpb_bias_backward(Tensor grad, Tensor coords, Tensor w1, Tensor? b1, Tensor w2,
//                          Tensor index, Tensor h, Tensor sig) -> (Tensor dw1, Tensor db1, Tensor dw2)
//       h = relu(coords w1ᵀ + b1) (T, hidden) and sig = sigmoid(h w2ᵀ) (T, H), saved by the
//       autograd kernel's forward
//   swin_cpb_bias_batch_forward(Tensor[] coords, Tensor[] w1, Tensor[] b1, Tensor[] w2,
//                               Tensor[] index) -> (Tensor[] bias, Tensor[] h, Tensor[] sig)
//   swin_cpb_bias_batch_backward(Tensor[] grad, Tensor[] coords, Tensor[] w1, Tensor[] b1,
//                                Tensor[] w2, Tensor[] index, Tensor[] h, Tensor[] sig)
//       -> (Tensor[] dw1, Tensor[] db1, Tensor[] dw2)
//       swin_cpb_bias_forward / _backward of several layers at once (lists of one entry per
//       layer, b1 given for each): what a model's training step computes for all its layers (the
//       model-level batching of flash_window_attn/_swin_common.py). On CUDA in float32 each kernel
//       runs once for all the layers (the MLP backward once per head-count class;
//       csrc/kernels/swin_cpb.cu, CpbBatch), with each layer's
//       results bitwise the one-layer op's; elsewhere, layer by layer. No autograd kernel: the
//       Python autograd.Function of _swin_common.py pairs them.
//
// The same math as timm's / transformers' `16 * sigmoid(cpb_mlp(table))[index].permute(2, 0, 1)`
// (sigmoid before the gather: it is elementwise), in the parameters' dtype, written with ATen ops.
// Why an op: the drop-in modules evaluate it in every layer of every training step, and as ~10
// Python-level autograd ops forward and ~15 backward it cost more host time than its GPU work
// (benchmarks/NOTES.md, session 4). The autograd kernel runs the forward itself (below autograd)
// to keep the MLP's activations h and sig (T x hidden and T x H: small) for the backward, which
// then needs no matmul but those of the gradients; the gather's gradient is a segment sum over the
// positions sorted by index (dtable_cpu on the CPU; on CUDA a sorted index_put_ with accumulation,
// as autograd's own indexing backward): deterministic. No gradient
// for coords and index (buffers). That is the CPU implementation (and CUDA's for dtypes other than
// float32); on CUDA in float32, the usual case (the MLP runs outside autocast), the same math runs
// as 2 fused kernels forward and 2 backward (csrc/ops/swin_cpb_cuda.cpp, csrc/kernels/swin_cpb.cu)
// instead of ~6 and ~29 ATen kernel launches.
#include <ATen/ATen.h>
#include <ATen/Dispatch.h>
#include <ATen/Parallel.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <torch/autograd.h>
#include <torch/library.h>

#include "ops/autograd_common.h"
#include "ops/swin_cpb_common.h"

#include <vector>

namespace flash_window_attn {

CpbSizes check_cpb_args(const at::Tensor& coords, const at::Tensor& w1, const std::optional<at::Tensor>& b1,
                        const at::Tensor& w2, const at::Tensor& index) {
  TORCH_CHECK_VALUE(coords.dim() >= 1 && coords.size(-1) == 2, kCpbOp,
                    "coords must have a last dimension of size 2, got shape ", coords.sizes());
  TORCH_CHECK_VALUE(w1.dim() == 2 && w1.size(1) == 2, kCpbOp, "w1 must have shape (hidden, 2), got ", w1.sizes());
  TORCH_CHECK_VALUE(w2.dim() == 2 && w2.size(1) == w1.size(0), kCpbOp, "w2 must have shape (H, hidden) with hidden = ",
                    w1.size(0), ", got ", w2.sizes());
  if (b1.has_value())
    TORCH_CHECK_VALUE(b1->dim() == 1 && b1->size(0) == w1.size(0), kCpbOp, "b1 must have shape (", w1.size(0),
                      ",), got ", b1->sizes());
  TORCH_CHECK_VALUE(index.dim() == 2 && index.size(0) == index.size(1), kCpbOp,
                    "index must have shape (N, N), got ", index.sizes());
  TORCH_CHECK_TYPE(index.scalar_type() == at::kLong, kCpbOp, "index must be int64, got ", index.scalar_type());
  TORCH_CHECK_TYPE(at::isFloatingType(w1.scalar_type()), kCpbOp, "w1 must be floating point, got ",
                   w1.scalar_type());
  for (const auto& [t, name] : {std::pair<const at::Tensor*, const char*>{&coords, "coords"}, {&w2, "w2"}})
    TORCH_CHECK_TYPE(t->scalar_type() == w1.scalar_type(), kCpbOp, name, " has dtype ", t->scalar_type(),
                     " but w1 has dtype ", w1.scalar_type());
  if (b1.has_value())
    TORCH_CHECK_TYPE(b1->scalar_type() == w1.scalar_type(), kCpbOp, "b1 has dtype ", b1->scalar_type(),
                     " but w1 has dtype ", w1.scalar_type());
  for (const auto& [t, name] : {std::pair<const at::Tensor*, const char*>{&coords, "coords"}, {&w2, "w2"},
                                {&index, "index"}})
    TORCH_CHECK_VALUE(t->device() == w1.device(), kCpbOp, name, " is on device ", t->device(),
                      " but w1 is on device ", w1.device());
  if (b1.has_value())
    TORCH_CHECK_VALUE(b1->device() == w1.device(), kCpbOp, "b1 is on device ", b1->device(),
                      " but w1 is on device ", w1.device());
  return {coords.numel() / 2, w1.size(0), w2.size(0), index.size(0)};
}

void check_cpb_saved(const at::Tensor& grad, const at::Tensor& h, const at::Tensor& sig, const CpbSizes& s) {
  TORCH_CHECK_VALUE(grad.dim() == 3 && grad.size(0) == s.H && grad.size(1) == s.N && grad.size(2) == s.N, kCpbOp,
                    "grad must have shape (", s.H, ", ", s.N, ", ", s.N, "), got ", grad.sizes());
  TORCH_CHECK_VALUE(h.dim() == 2 && h.size(0) == s.T && h.size(1) == s.hidden && sig.dim() == 2 &&
                    sig.size(0) == s.T && sig.size(1) == s.H, kCpbOp, "h must have shape (", s.T, ", ", s.hidden,
                    ") and sig (", s.T, ", ", s.H, "), got ", h.sizes(), " and ", sig.sizes());
}

namespace {

// The ATen math below runs in the parameters' dtype whatever the autocast state: the op has no
// autocast kernel (autocast falls through to it with the caller's tensors), so without this guard
// its mm / addmm would be autocast's, in bf16 / fp16. (The drop-in modules called the op inside a
// Python `torch.autocast(enabled=False)` context instead, ~30 us of host time per call on the
// device host: session 28 run D.) Also the CUDA op's fallback for dtypes other than float32.
struct NoAutocast {
  c10::impl::ExcludeDispatchKeyGuard guard{c10::autocast_dispatch_keyset};
};

// h = relu(coords w1ᵀ + b1) (T, hidden); s = sigmoid(h w2ᵀ) (T, H)
std::pair<at::Tensor, at::Tensor> mlp(const at::Tensor& coords, const at::Tensor& w1,
                                      const std::optional<at::Tensor>& b1, const at::Tensor& w2) {
  const at::Tensor c = coords.reshape({-1, 2});
  at::Tensor h = b1.has_value() ? at::addmm(*b1, c, w1.t()) : at::mm(c, w1.t());
  h.relu_();
  return {h, at::sigmoid(at::mm(h, w2.t()))};
}

// 16 * sig[index] as (H, N, N): gather along the rows, then one transposing copy of H N² values
at::Tensor gather_bias(const at::Tensor& sig, const at::Tensor& index, const CpbSizes& s) {
  const at::Tensor rows = sig.index_select(0, index.reshape({-1}));           // (N², H)
  at::Tensor bias = at::empty({s.H, s.N * s.N}, sig.options());
  at::mul_out(bias, rows.t(), at::scalar_tensor(16, sig.options().device(at::kCPU)));   // one kernel
  return bias.view({s.H, s.N, s.N});
}

// d table (T, H) on the CPU: dtable[t, hh] = the sum of grad[hh, e] over the positions e with
// index[e] = t, added in increasing e (a counting sort gives each t its positions in that order),
// rows t in parallel: bitwise the same results whatever the thread count. (index_put_ with
// accumulation, which the CUDA path uses, adds in parallel on the CPU: its results changed from
// run to run at 16 threads.) float and double accumulate in their own type, 16-bit types in float.
at::Tensor dtable_cpu(const at::Tensor& grad, const at::Tensor& index, const CpbSizes& s, at::ScalarType out_type) {
  const int64_t nn = s.N * s.N;
  const at::Tensor idx = index.reshape({-1}).contiguous();
  const int64_t* ip = idx.data_ptr<int64_t>();
  std::vector<int64_t> offsets(s.T + 1, 0), order(nn);
  for (int64_t e = 0; e < nn; ++e) {
    TORCH_CHECK_INDEX(ip[e] >= 0 && ip[e] < s.T, kCpbOp, "index holds ", ip[e], " at position ", e,
                      ", outside the table of ", s.T, " rows");
    ++offsets[ip[e] + 1];
  }
  for (int64_t t = 0; t < s.T; ++t) offsets[t + 1] += offsets[t];
  {
    std::vector<int64_t> cursor(offsets.begin(), offsets.end() - 1);
    for (int64_t e = 0; e < nn; ++e) order[cursor[ip[e]]++] = e;
  }
  const at::ScalarType acc = out_type == at::kDouble ? at::kDouble : at::kFloat;
  const at::Tensor g = grad.reshape({s.H, nn}).to(acc).contiguous();
  at::Tensor dtable = at::empty({s.T, s.H}, grad.options().dtype(acc));
  AT_DISPATCH_FLOATING_TYPES(acc, "swin_cpb_bias_dtable_cpu", [&] {
    const scalar_t* gp = g.data_ptr<scalar_t>();
    scalar_t* out = dtable.data_ptr<scalar_t>();
    at::parallel_for(0, s.T, 8, [&](int64_t t0, int64_t t1) {
      for (int64_t t = t0; t < t1; ++t)
        for (int64_t hh = 0; hh < s.H; ++hh) {
          scalar_t sum = 0;
          for (int64_t k = offsets[t]; k < offsets[t + 1]; ++k) sum += gp[hh * nn + order[k]];
          out[t * s.H + hh] = sum;
        }
    });
  });
  return dtable.to(out_type);
}

}  // namespace

at::Tensor cpb_bias_impl(const at::Tensor& coords, const at::Tensor& w1, const std::optional<at::Tensor>& b1,
                         const at::Tensor& w2, const at::Tensor& index) {
  const CpbSizes s = check_cpb_args(coords, w1, b1, w2, index);
  const NoAutocast no_autocast;
  return gather_bias(mlp(coords, w1, b1, w2).second, index, s);
}

// The forward with the activations the backward needs: (bias, h, sig).
std::tuple<at::Tensor, at::Tensor, at::Tensor> cpb_bias_forward_impl(
    const at::Tensor& coords, const at::Tensor& w1, const std::optional<at::Tensor>& b1, const at::Tensor& w2,
    const at::Tensor& index) {
  const CpbSizes s = check_cpb_args(coords, w1, b1, w2, index);
  const NoAutocast no_autocast;
  auto [h, sig] = mlp(coords, w1, b1, w2);
  at::Tensor bias = gather_bias(sig, index, s);
  return {bias, h, sig};
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> cpb_bias_backward_impl(
    const at::Tensor& grad, const at::Tensor& coords, const at::Tensor& w1, const std::optional<at::Tensor>& b1,
    const at::Tensor& w2, const at::Tensor& index, const at::Tensor& h, const at::Tensor& sig) {
  const CpbSizes s = check_cpb_args(coords, w1, b1, w2, index);
  check_cpb_saved(grad, h, sig, s);
  const NoAutocast no_autocast;
  // d table (T, H): sum of grad over the (i, j) with index[i, j] = t
  at::Tensor dtable;
  if (grad.is_cpu()) {
    dtable = dtable_cpu(grad, index, s, w1.scalar_type());
  } else {   // index_put_ with accumulation sorts the indices on CUDA (deterministic)
    dtable = at::zeros({s.T, s.H}, grad.options().dtype(w1.scalar_type()));
    dtable.index_put_({index.reshape({-1})}, grad.reshape({s.H, s.N * s.N}).t().to(w1.scalar_type()),
                      /*accumulate=*/true);
  }
  const at::Tensor dpre = at::sigmoid_backward(dtable, sig).mul_(16);         // d(h w2ᵀ)
  at::Tensor dw2 = at::mm(dpre.t(), h);                                       // (H, hidden)
  const at::Tensor dh = at::threshold_backward(at::mm(dpre, w2), h, 0);       // relu: h > 0
  at::Tensor dw1 = at::mm(dh.t(), coords.reshape({-1, 2}));                   // (hidden, 2)
  at::Tensor db1 = b1.has_value() ? dh.sum(0) : at::empty({0}, w1.options());
  return {dw1, db1, dw2};
}

namespace {

using BwdSig = std::tuple<at::Tensor, at::Tensor, at::Tensor>(const at::Tensor&, const at::Tensor&,
                                                              const at::Tensor&, const std::optional<at::Tensor>&,
                                                              const at::Tensor&, const at::Tensor&,
                                                              const at::Tensor&, const at::Tensor&);

using FwdSig = std::tuple<at::Tensor, at::Tensor, at::Tensor>(const at::Tensor&, const at::Tensor&,
                                                              const std::optional<at::Tensor>&, const at::Tensor&,
                                                              const at::Tensor&);

const c10::TypedOperatorHandle<FwdSig>& fwd_op() {
  static const auto op = c10::Dispatcher::singleton()
                             .findSchemaOrThrow("flash_window_attn::swin_cpb_bias_forward", "")
                             .typed<FwdSig>();
  return op;
}

const c10::TypedOperatorHandle<BwdSig>& bwd_op() {
  static const auto op = c10::Dispatcher::singleton()
                             .findSchemaOrThrow("flash_window_attn::swin_cpb_bias_backward", "")
                             .typed<BwdSig>();
  return op;
}

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

class CpbBiasFunction : public torch::autograd::Function<CpbBiasFunction> {
 public:
  static variable_list forward(AutogradContext* ctx, const at::Tensor& coords, const at::Tensor& w1,
                               const std::optional<at::Tensor>& b1, const at::Tensor& w2, const at::Tensor& index) {
    at::AutoDispatchBelowADInplaceOrView below;
    // through the dispatcher, so that the fake kernels serve torch.compile's symbolic shapes
    auto [bias, h, sig] = fwd_op().call(coords, w1, b1, w2, index);
    ctx->save_for_backward({coords, w1, b1.value_or(at::Tensor()), w2, index, h, sig});
    return {bias};
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const variable_list sv = ctx->get_saved_variables();
    variable_list result(5);   // coords, w1, b1, w2, index
    if (!grads[0].defined()) return result;
    const std::optional<at::Tensor> b1 = sv[2].defined() ? std::optional<at::Tensor>(sv[2]) : std::nullopt;
    auto [dw1, db1, dw2] = bwd_op().call(grads[0], sv[0], sv[1], b1, sv[3], sv[4], sv[5], sv[6]);
    result[1] = dw1;
    if (b1.has_value()) result[2] = db1;
    result[3] = dw2;
    return result;
  }
};

at::Tensor cpb_bias_autograd(const at::Tensor& coords, const at::Tensor& w1, const std::optional<at::Tensor>& b1,
                             const at::Tensor& w2, const at::Tensor& index) {
  if (!any_requires_grad({&coords, &w1, opt_ptr(b1), &w2})) {   // no node to record (inference)
    at::AutoDispatchBelowADInplaceOrView below;
    return std::get<0>(fwd_op().call(coords, w1, b1, w2, index));
  }
  return CpbBiasFunction::apply(coords, w1, b1, w2, index)[0];
}

}  // namespace

size_t check_cpb_batch_lists(std::initializer_list<std::pair<at::TensorList, const char*>> lists) {
  const auto& first = *lists.begin();
  const size_t n = first.first.size();
  for (const auto& [list, name] : lists)
    TORCH_CHECK_VALUE(list.size() == n, kCpbOp, "batch: ", name, " has ", list.size(), " entries but ",
                      first.second, " has ", n, " (one per layer)");
  return n;
}

CpbBatchOut cpb_batch_forward_impl(at::TensorList coords, at::TensorList w1, at::TensorList b1, at::TensorList w2,
                                   at::TensorList index) {
  const size_t n = check_cpb_batch_lists({{coords, "coords"}, {w1, "w1"}, {b1, "b1"}, {w2, "w2"}, {index, "index"}});
  return cpb_per_layer(n, [&](size_t i) { return cpb_bias_forward_impl(coords[i], w1[i], b1[i], w2[i], index[i]); });
}

CpbBatchOut cpb_batch_backward_impl(at::TensorList grad, at::TensorList coords, at::TensorList w1,
                                    at::TensorList b1, at::TensorList w2, at::TensorList index, at::TensorList h,
                                    at::TensorList sig) {
  const size_t n = check_cpb_batch_lists({{grad, "grad"}, {coords, "coords"}, {w1, "w1"}, {b1, "b1"}, {w2, "w2"},
                                          {index, "index"}, {h, "h"}, {sig, "sig"}});
  return cpb_per_layer(n, [&](size_t i) {
    return cpb_bias_backward_impl(grad[i], coords[i], w1[i], b1[i], w2[i], index[i], h[i], sig[i]);
  });
}

TORCH_LIBRARY_FRAGMENT(flash_window_attn, m) {
  m.def("swin_cpb_bias(Tensor coords, Tensor w1, Tensor? b1, Tensor w2, Tensor index) -> Tensor");
  m.def("swin_cpb_bias_forward(Tensor coords, Tensor w1, Tensor? b1, Tensor w2, Tensor index) -> "
        "(Tensor, Tensor, Tensor)");
  m.def("swin_cpb_bias_backward(Tensor grad, Tensor coords, Tensor w1, Tensor? b1, Tensor w2, Tensor index, "
        "Tensor h, Tensor sig) -> (Tensor, Tensor, Tensor)");
  m.def("swin_cpb_bias_batch_forward(Tensor[] coords, Tensor[] w1, Tensor[] b1, Tensor[] w2, Tensor[] index) -> "
        "(Tensor[], Tensor[], Tensor[])");
  m.def("swin_cpb_bias_batch_backward(Tensor[] grad, Tensor[] coords, Tensor[] w1, Tensor[] b1, Tensor[] w2, "
        "Tensor[] index, Tensor[] h, Tensor[] sig) -> (Tensor[], Tensor[], Tensor[])");
}

// ATen ops on the CPU (registered per device, not as CompositeExplicitAutograd, so that the fake
// kernels of ops.py serve symbolic shapes), with the autograd kernel above it.
TORCH_LIBRARY_IMPL(flash_window_attn, CPU, m) {
  m.impl("swin_cpb_bias", &cpb_bias_impl);
  m.impl("swin_cpb_bias_forward", &cpb_bias_forward_impl);
  m.impl("swin_cpb_bias_backward", &cpb_bias_backward_impl);
  m.impl("swin_cpb_bias_batch_forward", &cpb_batch_forward_impl);
  m.impl("swin_cpb_bias_batch_backward", &cpb_batch_backward_impl);
}

// CUDA: csrc/ops/swin_cpb_cuda.cpp (fused float32 kernels, these ATen ops otherwise).

TORCH_LIBRARY_IMPL(flash_window_attn, Autograd, m) {
  m.impl("swin_cpb_bias", &cpb_bias_autograd);
}

}  // namespace flash_window_attn
