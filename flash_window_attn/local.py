"""Sliding-window and block-sliding-window attention for long sequences (fake kernels, autograd,
public functions).

The two ops are declared in C++ (``csrc/ops/local_attention.cpp``) with a CPU implementation
(``local_attention_cpu.cpp``) and, in CUDA builds, CUDA kernels:

    local_attention_fwd(q, k, v, int left, int right, int block, float scale) -> (out, lse)
    local_attention_fwd_res(q, k, v, int left, int right, int block, float scale) -> (out, lse, out_lo)
    local_attention_bwd(dout, q, k, v, out, lse, int left, int right, int block, float scale,
                        out_lo=None) -> (dq, dk, dv)

``local_attention_fwd_res`` is the forward that autograd records where the backward can use its
out_lo (fp16 / bf16 on CUDA, on grids where both warp-specialised backward sides run; the plain
forward elsewhere): out and lse as the plain forward,
and for fp16 / bf16 on CUDA out_lo, the fp32 output minus out rounded to bfloat16 (elsewhere an
empty tensor). Given to the backward, it lets the warp-specialised CUDA backward take
D = rowsum(dout * (out + out_lo)) instead of summing P dP on its key side (docs/local_attention.md).

With bi = i // block and bj = j // block, query i attends key j iff
``(left < 0 or bi - bj <= left) and (right < 0 or bj - bi <= right)``. The public functions below
map their arguments onto (left, right, block). Everything about the tensors is validated by the
C++ op (one place, the same messages on every device); Python only checks what never reaches it
(argument types, the window pair, block_size / window_blocks). The plain-PyTorch formula with an
explicit mask is :func:`flash_window_attn.local_reference.local_attention_reference`.
"""

from __future__ import annotations

import numbers
from typing import Optional, Sequence, Tuple

import torch
from torch import Tensor

__all__ = ["sliding_window_attention", "block_sliding_window_attention"]

_fwd_op = torch.ops.flash_window_attn.local_attention_fwd.default


# ---------------------------------------------------------------------------------------------
# Fake kernels: the real outputs' shapes, dtypes and strides (all contiguous)
# ---------------------------------------------------------------------------------------------


@torch.library.register_fake("flash_window_attn::local_attention_fwd")
def _local_attention_fwd_fake(q, k, v, left, right, block, scale):
    B, H, L, d = q.shape
    out = q.new_empty((B, H, L, d))
    lse = q.new_empty((B, H, L), dtype=torch.float32)
    return out, lse


@torch.library.register_fake("flash_window_attn::local_attention_fwd_res")
def _local_attention_fwd_res_fake(q, k, v, left, right, block, scale):
    # out_lo: (B, H, L, d) bfloat16 for fp16 / bf16 on CUDA, else (0,) (make_local_out_lo in C++)
    out, lse = _local_attention_fwd_fake(q, k, v, left, right, block, scale)
    lo_shape = tuple(q.shape) if q.device.type == "cuda" and q.dtype in (torch.float16, torch.bfloat16) else (0,)
    out_lo = q.new_empty(lo_shape, dtype=torch.bfloat16)
    return out, lse, out_lo


@torch.library.register_fake("flash_window_attn::local_attention_bwd")
def _local_attention_bwd_fake(dout, q, k, v, out, lse, left, right, block, scale, out_lo=None):
    dq = q.new_empty(q.shape)
    dk = k.new_empty(k.shape)
    dv = v.new_empty(v.shape)
    return dq, dk, dv


# Autograd: registered in C++ (csrc/ops/local_attention_autograd.cpp; under autograd,
# local_attention_fwd runs local_attention_fwd_res where the backward can use its out_lo
# (local_out_lo_wanted), and the backward, local_attention_bwd, takes it). A Python registration
# cost ~150 us of host time per forward + backward.


# ---------------------------------------------------------------------------------------------
# Public functions
# ---------------------------------------------------------------------------------------------


def _is_int(x) -> bool:
    return isinstance(x, (numbers.Integral, torch.SymInt)) and not isinstance(x, bool)


def _check_tensors(fn: str, q, k, v) -> None:
    for name, t in (("q", q), ("k", k), ("v", v)):
        if not isinstance(t, Tensor):
            raise TypeError(f"{fn}: {name} must be a torch.Tensor, got {type(t).__name__}")


def _op_scale(fn: str, q: Tensor, scale) -> float:
    if scale is None:
        d = q.shape[-1] if q.dim() > 0 else 0
        return d ** -0.5 if d > 0 else 1.0  # a bad rank or d is the op's to report
    if isinstance(scale, bool) or not isinstance(scale, (numbers.Real, torch.SymFloat, torch.SymInt)):
        raise TypeError(f"{fn}: scale must be a real number or None, got {type(scale).__name__}")
    try:
        return float(scale)
    except OverflowError:
        raise ValueError(
            f"{fn}: scale must be a finite number, but scale = {scale!r} does not fit in a float"
        ) from None


def _check_window(window) -> Tuple[int, int]:
    fn = "sliding_window_attention"
    if not isinstance(window, Sequence) or isinstance(window, (str, bytes)) or len(window) != 2:
        raise TypeError(
            f"{fn}: window must be a pair of ints (left, right), -1 meaning unbounded, "
            f"got {window!r}"
        )
    left, right = window
    for side, w in (("window[0] (left)", left), ("window[1] (right)", right)):
        if not _is_int(w):
            raise TypeError(f"{fn}: {side} must be an int, got {type(w).__name__} ({w!r})")
        if w < -1:
            raise ValueError(
                f"{fn}: {side} must be >= 0, or -1 for unbounded, but got {w} (window = {window!r})"
            )
    return int(left), int(right)


def sliding_window_attention(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    *,
    window: Tuple[int, int] = (-1, -1),
    causal: bool = False,
    scale: Optional[float] = None,
) -> Tensor:
    """Sliding-window (local) attention: query i attends keys j with ``i - left <= j <= i + right``.

    ``out[b, h, i] = softmax_j(scale * q[b, h, i] · k[b, g, j]) @ v[b, g, :]`` over the allowed keys
    j only, with g = h // (H // Hkv) (grouped-query attention), the softmax in fp32 (fp64 for fp64
    inputs). Cost is proportional to L times the window, not L².

    Args:
        q: (B, H, L, d). k, v: (B, Hkv, L, d) with H % Hkv == 0 (Hkv = H is plain multi-head
            attention). fp16, bf16 or fp32 (CPU also fp64), all the same dtype and device; any
            strides with ``stride(-1) == 1`` (views of a packed qkv projection run without a copy).
            d a multiple of 8 in [8, 256]; any L >= 0, no divisibility requirement.
        window: (left, right), each >= 0 or -1 for unbounded. (-1, -1) is full attention, (-1, 0)
            plain causal attention, (w, w) a symmetric local window, (w, 0) the causal local window
            of language models. A window wider than the sequence is the same as unbounded.
        causal: if True, right is capped at 0 (also when ``window[1] == -1``).
        scale: logit scale, default ``d ** -0.5``.

    Returns:
        out: (B, H, L, d), contiguous, in q's dtype.

    Every query sees at least its own key (j = i is always inside the window), so a row with no
    allowed key cannot occur. Gradients flow to q, k, v (dk, dv summed over the query heads of each
    group, bitwise deterministic). Bad arguments raise TypeError / ValueError naming the argument.
    """
    fn = "sliding_window_attention"
    _check_tensors(fn, q, k, v)
    left, right = _check_window(window)
    if not isinstance(causal, bool):
        raise TypeError(f"{fn}: causal must be a bool, got {type(causal).__name__} ({causal!r})")
    if causal:
        right = 0
    out, _ = _fwd_op(q, k, v, left, right, 1, _op_scale(fn, q, scale))
    return out


def block_sliding_window_attention(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    block_size: int,
    window_blocks: int,
    *,
    scale: Optional[float] = None,
) -> Tensor:
    """Block-causal sliding-window attention (e.g. autoregressive video, one block per frame).

    Tokens are grouped in consecutive blocks of ``block_size`` (the last block may be shorter: L
    need not be a multiple of it). A query in block bi attends every key in blocks
    ``bi - window_blocks + 1 ... bi``: its own block in full (both directions) and the
    ``window_blocks - 1`` blocks before it. ``window_blocks = 1`` is block-diagonal attention; a
    ``window_blocks`` of at least the number of blocks is block-causal attention over everything.

    Args:
        q: (B, H, L, d). k, v: (B, Hkv, L, d), H % Hkv == 0 (grouped-query attention). Dtypes,
            devices, strides and d as for :func:`sliding_window_attention`.
        block_size: tokens per block, >= 1.
        window_blocks: blocks each query sees (its own included), >= 1.
        scale: logit scale, default ``d ** -0.5``.

    Returns:
        out: (B, H, L, d), contiguous, in q's dtype.

    Every query sees its own block, so a row with no allowed key cannot occur. Gradients flow to q,
    k, v as for :func:`sliding_window_attention`.
    """
    fn = "block_sliding_window_attention"
    _check_tensors(fn, q, k, v)
    for name, x in (("block_size", block_size), ("window_blocks", window_blocks)):
        if not _is_int(x):
            raise TypeError(f"{fn}: {name} must be an int, got {type(x).__name__} ({x!r})")
        if x < 1:
            raise ValueError(f"{fn}: {name} must be >= 1, but {name} = {x}")
    out, _ = _fwd_op(q, k, v, int(window_blocks) - 1, 0, int(block_size), _op_scale(fn, q, scale))
    return out
