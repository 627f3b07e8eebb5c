// Helpers shared by the C++ autograd kernels of the forward ops (window_attention_autograd.cpp,
// local_attention_autograd.cpp).
#pragma once
#include <ATen/ATen.h>
#include <ATen/core/dispatch/Dispatcher.h>

namespace flash_window_attn {

// The backward ops want dout with a unit last stride. Not .contiguous(): an empty expanded gradient
// (e.g. of out.sum() over zero windows) counts as contiguous and keeps its zero strides. The stride
// is read through sym_stride: Tensor::stride evaluates every stride, which under
// torch.compile(dynamic=True) specialised the traced graph on N.
inline at::Tensor unit_last_stride(const at::Tensor& dout) {
  if (dout.dim() == 0 || dout.sym_stride(-1) == 1) return dout;
  return at::empty_like(dout, at::MemoryFormat::Contiguous).copy_(dout);
}

// Whether a forward op's autograd kernel must record a node: grad mode on and an input that requires
// grad. Otherwise the kernels call their op below autograd directly: torch::autograd::Function::apply
// would only build a node, its saved variables and its output bookkeeping to drop them (host time of
// every inference call).
inline bool any_requires_grad(std::initializer_list<const at::Tensor*> inputs) {
  if (!at::GradMode::is_enabled()) return false;
  for (const at::Tensor* t : inputs)
    if (t != nullptr && t->defined() && t->requires_grad()) return true;
  return false;
}

inline const at::Tensor* opt_ptr(const std::optional<at::Tensor>& t) { return t.has_value() ? &*t : nullptr; }

// The typed dispatcher handle of op `name` ("flash_window_attn::..."); callers keep it in a
// function-local static (one lookup per process).
template <typename Sig>
c10::TypedOperatorHandle<Sig> find_op(const char* name) {
  return c10::Dispatcher::singleton().findSchemaOrThrow(name, "").template typed<Sig>();
}

}  // namespace flash_window_attn
