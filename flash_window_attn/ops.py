"""Fake kernels, autograd and the public function for the flash_window_attn ops.

The two ops (schemas, math, output layouts: ``csrc/README.md``) are defined and implemented in
C++ (``flash_window_attn._C``). Here we add what ``torch.compile`` and autograd need:

- fake (meta) kernels that give exactly the real outputs' shapes, dtypes and strides, symbolic
  shapes included;
- (the forward ops' autograd is registered in C++: ``csrc/ops/window_attention_autograd.cpp``);
- :func:`window_attention`, the public entry point.

All argument validation lives in the C++ op (one place, same messages on every device); Python
only checks what never reaches it (argument types, ``scale`` together with ``logit_scale``, a mask
that asks for a gradient).
"""

from __future__ import annotations

import numbers
from typing import Optional

import torch
from torch import Tensor

__all__ = ["window_attention", "window_attention_qkvpacked", "dropout_keep_mask"]

_fwd_op = torch.ops.flash_window_attn.window_attention_fwd.default
_dfwd_op = torch.ops.flash_window_attn.window_attention_dropout_fwd.default
_pfwd_op = torch.ops.flash_window_attn.window_attention_qkvpacked_fwd.default


# ---------------------------------------------------------------------------------------------
# Fake kernels (shapes, dtypes and strides of the real outputs, for FakeTensor / torch.compile)
# ---------------------------------------------------------------------------------------------


@torch.library.register_fake("flash_window_attn::window_attention_fwd")
def _window_attention_fwd_fake(q, k, v, bias, mask, logit_scale, scale, return_inv_norms=False):
    B_, H, N, d = q.shape
    # out is laid out as (B_, N, H, d): strides (N*H*d, d, H*d, 1).
    out = q.new_empty((B_, N, H, d)).transpose(1, 2)
    lse = q.new_empty((B_, H, N), dtype=torch.float32)
    return out, lse, _qk_inv_norm_like(q, B_, H, N, logit_scale, return_inv_norms)


def _qk_inv_norm_like(q: Tensor, B_, H, N, logit_scale: Optional[Tensor], return_inv_norms: bool) -> Tensor:
    # the forwards' last result: asked for (return_inv_norms) and V2, the inverse norms of q's and
    # k's rows, (2, B_, H, N) fp32; empty otherwise
    if logit_scale is None or not return_inv_norms:
        return q.new_empty((0,), dtype=torch.float32)
    return q.new_empty((2, B_, H, N), dtype=torch.float32)


def _grad_like(t: Optional[Tensor], q: Tensor) -> Tensor:
    if t is None:
        return q.new_empty((0,), dtype=torch.float32)
    return t.new_empty(t.shape, dtype=t.dtype, device=q.device)  # contiguous


@torch.library.register_fake("flash_window_attn::window_attention_bwd")
def _window_attention_bwd_fake(dout, q, k, v, out, lse, bias, mask, logit_scale, scale, qk_inv_norm=None):
    dq = torch.empty_like(q)
    dk = torch.empty_like(k)
    dv = torch.empty_like(v)
    return dq, dk, dv, _grad_like(bias, q), _grad_like(logit_scale, q)


@torch.library.register_fake("flash_window_attn::window_attention_dropout_fwd")
def _window_attention_dropout_fwd_fake(q, k, v, bias, mask, logit_scale, scale, dropout_p, return_inv_norms=False):
    out, lse, qk_inv_norm = _window_attention_fwd_fake(q, k, v, bias, mask, logit_scale, scale, return_inv_norms)
    rng_state = q.new_empty((2 if dropout_p > 0 else 0,), dtype=torch.int64)
    return out, lse, rng_state, qk_inv_norm


@torch.library.register_fake("flash_window_attn::window_attention_dropout_bwd")
def _window_attention_dropout_bwd_fake(
    dout, q, k, v, out, lse, bias, mask, logit_scale, scale, dropout_p, rng_state, qk_inv_norm=None
):
    return _window_attention_bwd_fake(dout, q, k, v, out, lse, bias, mask, logit_scale, scale)


@torch.library.register_fake("flash_window_attn::window_attention_qkvpacked_fwd")
def _window_attention_qkvpacked_fwd_fake(qkv, num_heads, bias, mask, logit_scale, scale, dropout_p,
                                         return_inv_norms=False):
    B_, N, c3 = qkv.shape
    d = c3 // (3 * num_heads)
    out = qkv.new_empty((B_, N, num_heads, d)).transpose(1, 2)
    lse = qkv.new_empty((B_, num_heads, N), dtype=torch.float32)
    rng_state = qkv.new_empty((2 if dropout_p > 0 else 0,), dtype=torch.int64)
    return out, lse, rng_state, _qk_inv_norm_like(qkv, B_, num_heads, N, logit_scale, return_inv_norms)


@torch.library.register_fake("flash_window_attn::window_attention_qkvpacked_bwd")
def _window_attention_qkvpacked_bwd_fake(
    dout, qkv, out, lse, bias, mask, logit_scale, scale, num_heads, dropout_p, rng_state, qk_inv_norm=None
):
    dqkv = qkv.new_empty(qkv.shape)  # contiguous
    return dqkv, _grad_like(bias, qkv), _grad_like(logit_scale, qkv)


@torch.library.register_fake("flash_window_attn::swin_cpb_bias")
def _swin_cpb_bias_fake(coords, w1, b1, w2, index):
    H, n = w2.shape[0], index.shape[0]
    return w1.new_empty((H, n, n))


@torch.library.register_fake("flash_window_attn::swin_cpb_bias_forward")
def _swin_cpb_bias_forward_fake(coords, w1, b1, w2, index):
    T = coords.numel() // 2
    return _swin_cpb_bias_fake(coords, w1, b1, w2, index), w1.new_empty((T, w1.shape[0])), w1.new_empty((T, w2.shape[0]))


@torch.library.register_fake("flash_window_attn::swin_cpb_bias_backward")
def _swin_cpb_bias_backward_fake(grad, coords, w1, b1, w2, index, h, sig):
    return w1.new_empty(w1.shape), w1.new_empty(b1.shape if b1 is not None else (0,)), w2.new_empty(w2.shape)


@torch.library.register_fake("flash_window_attn::swin_cpb_bias_batch_forward")
def _swin_cpb_bias_batch_forward_fake(coords, w1, b1, w2, index):
    outs = [_swin_cpb_bias_forward_fake(*a) for a in zip(coords, w1, b1, w2, index)]
    return [o[0] for o in outs], [o[1] for o in outs], [o[2] for o in outs]


@torch.library.register_fake("flash_window_attn::swin_cpb_bias_batch_backward")
def _swin_cpb_bias_batch_backward_fake(grad, coords, w1, b1, w2, index, h, sig):
    outs = [_swin_cpb_bias_backward_fake(*a) for a in zip(grad, coords, w1, b1, w2, index, h, sig)]
    return [o[0] for o in outs], [o[1] for o in outs], [o[2] for o in outs]


@torch.library.register_fake("flash_window_attn::dropout_keep_mask")
def _dropout_keep_mask_fake(rng_state, B, H, N, dropout_p):
    return rng_state.new_empty((B, H, N, N), dtype=torch.bool)


# ---------------------------------------------------------------------------------------------
# Autograd: registered in C++ for the three forward ops (csrc/ops/window_attention_autograd.cpp;
# the backward of each is its *_bwd op). A Python autograd registration costs ~100 us of host time
# per call and as much in the backward, which the GPU waits for on small problems and in every
# layer of a swapped model.
# ---------------------------------------------------------------------------------------------


def dropout_keep_mask(rng_state: Tensor, B: int, H: int, N: int, dropout_p: float) -> Tensor:
    """The (B, H, N, N) bool keep mask that a dropout forward which returned ``rng_state`` used
    (on rng_state's device). For tests and debugging: the mask is a pure function of
    (rng_state, window, head, row, column), see ``csrc/kernels/dropout.h``."""
    keep = torch.ops.flash_window_attn.dropout_keep_mask(rng_state.cpu(), B, H, N, float(dropout_p))
    return keep.to(rng_state.device)


# ---------------------------------------------------------------------------------------------
# Public function
# ---------------------------------------------------------------------------------------------


def _check_tensor(name: str, t, optional: bool) -> None:
    if t is None and optional:
        return
    if not isinstance(t, Tensor):
        expected = "a torch.Tensor or None" if optional else "a torch.Tensor"
        raise TypeError(f"window_attention: {name} must be {expected}, got {type(t).__name__}")


def _op_scale_and_checks(what: str, head_dim, bias, mask, scale, logit_scale, dropout_p) -> float:
    """Python-side checks shared by the public functions (the tensors' own checks are the op's);
    returns the ``scale`` argument of the op."""
    _check_tensor("bias", bias, optional=True)
    _check_tensor("mask", mask, optional=True)
    _check_tensor("logit_scale", logit_scale, optional=True)
    if scale is not None and (isinstance(scale, bool) or not isinstance(scale, numbers.Real)):
        raise TypeError(
            f"{what}: scale must be a real number or None, got {type(scale).__name__}"
        )
    if isinstance(dropout_p, bool) or not isinstance(dropout_p, numbers.Real):
        raise TypeError(
            f"{what}: dropout_p must be a real number, got {type(dropout_p).__name__}"
        )
    if mask is not None and mask.requires_grad:
        raise ValueError(
            f"{what}: mask receives no gradient; pass mask.detach() (got a mask with "
            "requires_grad=True)"
        )
    if logit_scale is not None:
        if scale is not None:
            raise ValueError(
                f"{what}: give either scale (V1, S = scale * q k^T) or logit_scale "
                f"(V2 cosine attention), not both (got scale={scale!r} and a logit_scale tensor)"
            )
        return 1.0  # ignored by the op in V2
    if scale is None:
        return head_dim ** -0.5 if head_dim > 0 else 1.0  # a bad rank or d is the op's to report
    try:
        return float(scale)
    except OverflowError:
        raise ValueError(
            f"{what}: scale must be a finite number, but scale = {scale!r} does not "
            "fit in a float"
        ) from None


def window_attention(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    bias: Optional[Tensor] = None,
    mask: Optional[Tensor] = None,
    *,
    scale: Optional[float] = None,
    logit_scale: Optional[Tensor] = None,
    dropout_p: float = 0.0,
) -> Tensor:
    """Fused Swin window attention: ``softmax(S + bias[h] + mask[b % nW]) @ v`` per window b, head h.

    Args:
        q, k, v: (B_, H, N, d), fp16 / bf16 / fp32 (CPU also fp64), same dtype and device, any
            strides with ``stride(-1) == 1`` (packed-qkv views run without a copy).
            1 <= N <= 1024; d a multiple of 8 in [16, 128].
        bias: optional (H, N, N) or (1, H, N, N), any floating dtype; receives a gradient (in its
            dtype, summed over all windows) when it requires grad.
        mask: optional (nW, N, N), any floating dtype, window b uses ``mask[b % nW]``;
            ``B_ % nW == 0``. Values are added as given (Swin's 0 / -100 shift mask works as is);
            only -inf excludes a key; a row whose logits are all -inf gives 0. No gradient.
        scale: V1 logit scale, ``S = scale * q @ k^T``; default ``d ** -0.5``.
        logit_scale: optional H-element tensor ((H,), (H, 1, 1) or (1, H, 1, 1)), selects Swin V2
            cosine attention: ``S = normalize(q) @ normalize(k)^T * exp(min(logit_scale[h], ln 100))``.
            Its gradient follows ``torch.clamp(max=ln 100)``. Cannot be combined with ``scale``.
        dropout_p: attention dropout probability in [0, 1] (``nn.Dropout`` on the softmax
            probabilities: kept ones are scaled by ``1 / (1 - dropout_p)``), applied inside the
            kernels; forward and backward use the same mask, drawn from torch's default generator
            of q's device (``torch.manual_seed`` reproduces it; CUDA-graph safe). Pass 0 in eval.
            Not implemented for float32 CUDA inputs (use autocast).

    Returns:
        out: (B_, H, N, d) in q's dtype, laid out in memory as (B_, N, H, d), so
        ``out.transpose(1, 2).reshape(B_, N, H * d)`` is free.
    """
    _check_tensor("q", q, optional=False)
    _check_tensor("k", k, optional=False)
    _check_tensor("v", v, optional=False)
    d = q.shape[-1] if q.dim() > 0 else 0
    op_scale = _op_scale_and_checks("window_attention", d, bias, mask, scale, logit_scale, dropout_p)
    if dropout_p != 0:
        return _dfwd_op(q, k, v, bias, mask, logit_scale, op_scale, float(dropout_p))[0]
    return _fwd_op(q, k, v, bias, mask, logit_scale, op_scale)[0]


def window_attention_qkvpacked(
    qkv: Tensor,
    num_heads: int,
    bias: Optional[Tensor] = None,
    mask: Optional[Tensor] = None,
    *,
    scale: Optional[float] = None,
    logit_scale: Optional[Tensor] = None,
    dropout_p: float = 0.0,
) -> Tensor:
    """:func:`window_attention` on q, k, v packed in one tensor, as a qkv projection returns them.

    Args:
        qkv: (B_, N, 3 * num_heads * d) with unit last stride: for each token, the q heads, then the
            k heads, then the v heads (``qkv.reshape(B_, N, 3, num_heads, d)``), e.g. the output of
            timm's ``nn.Linear(dim, 3 * dim)``. Same dtypes and limits as :func:`window_attention`.
        num_heads: H.
        bias, mask, scale, logit_scale, dropout_p: as in :func:`window_attention`.

    Returns:
        out: (B_, H, N, d) laid out as (B_, N, H, d), as :func:`window_attention` returns it.

    The gradient of ``qkv`` comes back as one tensor in qkv's layout, written by the backward
    kernels directly: unlike ``window_attention(*qkv.reshape(B_, N, 3, H, d).permute(2, 0, 3, 1, 4))``
    (same values), autograd does not stack dq, dk, dv and copy the stack into qkv's layout.
    """
    _check_tensor("qkv", qkv, optional=False)
    if isinstance(num_heads, bool) or not isinstance(num_heads, int):
        raise TypeError(
            f"window_attention_qkvpacked: num_heads must be an int, got {type(num_heads).__name__}"
        )
    if qkv.dim() == 3 and num_heads > 0 and qkv.shape[-1] % (3 * num_heads) == 0:
        d = qkv.shape[-1] // (3 * num_heads)
    else:
        d = 0  # the op reports the bad shape
    op_scale = _op_scale_and_checks("window_attention_qkvpacked", d, bias, mask, scale, logit_scale, dropout_p)
    return _pfwd_op(qkv, num_heads, bias, mask, logit_scale, op_scale, float(dropout_p))[0]
