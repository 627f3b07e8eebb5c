"""Plain-PyTorch local (sliding-window / block-sliding-window) attention: the dense-mask semantics.

The oracle of the tests (run in float64) and the "eager" baseline (run in the inputs' dtype). It
materialises the full (L, L) boolean mask and the (B, H, L, L) logits, so it is for checking, not
for long sequences.

With bi = i // block and bj = j // block, query i may attend key j iff

    (left < 0 or bi - bj <= left) and (right < 0 or bj - bi <= right)

(-1 = unbounded on that side). ``sliding_window_attention(window=(w0, w1))`` is block = 1,
left = w0, right = w1 (0 if causal); ``block_sliding_window_attention(block_size, window_blocks)``
is block = block_size, left = window_blocks - 1, right = 0. Key j = i is always allowed, so no row
is empty.
"""

from __future__ import annotations

from typing import Optional, Tuple

import torch
from torch import Tensor

__all__ = ["local_attention_mask", "local_attention_reference"]


def local_attention_mask(
    L: int, left: int, right: int, block: int = 1, device: Optional[torch.device | str] = None
) -> Tensor:
    """The (L, L) bool mask: ``mask[i, j]`` is True where query i may attend key j."""
    if block < 1:
        raise ValueError(f"local_attention_mask: block must be >= 1, but block = {block}")
    if left < -1 or right < -1:
        raise ValueError(f"local_attention_mask: left and right must be >= -1, but got ({left}, {right})")
    blk = torch.arange(L, device=device) // block
    diff = blk[:, None] - blk[None, :]  # bi - bj
    allowed = torch.ones((L, L), dtype=torch.bool, device=device)
    if left >= 0:
        allowed &= diff <= left
    if right >= 0:
        allowed &= -diff <= right
    return allowed


def local_attention_reference(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    left: int,
    right: int,
    block: int,
    scale: Optional[float] = None,
    *,
    return_lse: bool = False,
) -> Tensor | Tuple[Tensor, Tensor]:
    """``softmax(scale * q kᵀ masked to the band) @ v``, dense, with an explicit boolean mask.

    q: (B, H, L, d); k, v: (B, Hkv, L, d) with H % Hkv == 0 (query head h uses kv head
    h // (H // Hkv), via ``repeat_interleave``). The logits and the product with v run in the
    inputs' dtype; the softmax in fp32 (fp64 for fp64 inputs). ``scale`` defaults to d ** -0.5.
    Returns out (B, H, L, d) in q's dtype, and with ``return_lse=True`` also lse (B, H, L), the
    natural-log log-sum-exp of the masked logits, in the softmax dtype.
    """
    B, H, L, d = q.shape
    Hkv = k.shape[1]
    if H % Hkv != 0:
        raise ValueError(f"local_attention_reference: H = {H} is not a multiple of Hkv = {Hkv}")
    if scale is None:
        scale = d ** -0.5
    group = H // Hkv
    if group > 1:
        k = k.repeat_interleave(group, dim=1)
        v = v.repeat_interleave(group, dim=1)
    logits = (q * scale) @ k.transpose(-2, -1)
    logits = logits.to(torch.promote_types(logits.dtype, torch.float32))
    allowed = local_attention_mask(L, left, right, block, device=q.device)
    logits = logits.masked_fill(~allowed, float("-inf"))
    p = torch.softmax(logits, dim=-1)
    out = p.to(v.dtype) @ v
    if return_lse:
        return out, torch.logsumexp(logits, dim=-1)
    return out
