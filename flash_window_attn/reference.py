"""Plain-PyTorch window attention: the one source of truth for the math.

Tests use it as the oracle (run in float64), benchmarks as the "eager" row (run in the input
dtype). It follows ``csrc/README.md`` (the op contract) and writes the formula the way timm's Swin
V1 / V2 ``WindowAttention`` does, so that it is also the baseline the fused op must beat:

- V1 (``logit_scale`` is None): ``S = (q * scale) @ kᵀ``, ``scale`` defaults to ``d ** -0.5``.
- V2 (``logit_scale`` given):   ``S = normalize(q) @ normalize(k)ᵀ * exp(clamp(logit_scale, max=ln 100))``.
- ``S = S + bias[h]`` (if given), then ``S = S + mask[b % nW]`` (if given), via the
  ``(B_ // nW, nW, H, N, N)`` view timm uses.
- ``P = softmax(S)`` in fp32 (fp64 for fp64 inputs), cast back to ``v``'s dtype, ``out = P @ v``.

Everything runs in the inputs' dtypes with PyTorch's ordinary type promotion (an fp32 bias or
logit_scale with fp16 q makes S fp32, exactly as under AMP in timm); only the softmax is forced
to fp32. A row whose logits are all −inf returns 0 (the fused op's contract), not NaN, and gets
zero (finite) gradients.
"""

from __future__ import annotations

import math
from typing import Dict, Optional, Sequence

import torch
import torch.nn.functional as F
from torch import Tensor

__all__ = [
    "LN100_F32",
    "window_attention_reference",
    "window_attention_reference_unguarded",
    "reference_logits",
    "reference_outputs_and_grads",
    "reference_float64",
    "swin_shift_mask",
]

# The clamp bound of the logit scale is float32(ln 100) (the contract), which is slightly *larger*
# than the float64 ln 100. Using it as a Python float gives the same clamp (and the same
# `torch.clamp` gradient at the boundary) in fp32 and in the float64 oracle.
LN100_F32: float = float(torch.tensor(math.log(100.0), dtype=torch.float32))


def reference_logits(
    q: Tensor,
    k: Tensor,
    bias: Optional[Tensor] = None,
    mask: Optional[Tensor] = None,
    *,
    scale: Optional[float] = None,
    logit_scale: Optional[Tensor] = None,
) -> Tensor:
    """The attention logits S, (B_, H, N, N), before the softmax."""
    B_, H, N, d = q.shape
    if logit_scale is not None:
        if scale is not None:
            raise ValueError("window_attention_reference: give either scale or logit_scale, not both")
        attn = F.normalize(q, dim=-1) @ F.normalize(k, dim=-1).transpose(-2, -1)
        attn = attn * torch.clamp(logit_scale.reshape(1, H, 1, 1), max=LN100_F32).exp()
    else:
        if scale is None:
            scale = d ** -0.5
        attn = (q * scale) @ k.transpose(-2, -1)
    if bias is not None:
        attn = attn + bias.reshape(1, H, N, N)
    if mask is not None:
        nW = mask.shape[0]
        attn = attn.view(B_ // nW, nW, H, N, N) + mask[None, :, None]
        attn = attn.view(B_, H, N, N)
    return attn


def _reference(
    q, k, v, bias, mask, scale, logit_scale, guard_all_masked_rows: bool, keep=None, dropout_p=0.0
) -> Tensor:
    attn = reference_logits(q, k, bias, mask, scale=scale, logit_scale=logit_scale)
    attn = attn.to(torch.promote_types(attn.dtype, torch.float32))  # softmax in fp32 (fp64 stays fp64)
    if guard_all_masked_rows:
        # softmax of an all −inf row is NaN, and so is its backward; the contract says out = 0 with
        # zero gradient there. Replace such rows by zeros before the softmax and zero them after.
        dead = torch.isneginf(attn).all(dim=-1, keepdim=True)
        attn = attn.masked_fill(dead, 0.0)
        p = attn.softmax(dim=-1).masked_fill(dead, 0.0)
    else:
        p = attn.softmax(dim=-1)
    if keep is not None:
        # attention dropout with an explicit keep mask (what nn.Dropout does with its own draw)
        p = p * keep.to(p.dtype) * (1.0 / (1.0 - dropout_p) if dropout_p < 1 else 0.0)
    return p.to(v.dtype) @ v


def window_attention_reference(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    bias: Optional[Tensor] = None,
    mask: Optional[Tensor] = None,
    *,
    scale: Optional[float] = None,
    logit_scale: Optional[Tensor] = None,
    dropout_keep: Optional[Tensor] = None,
    dropout_p: float = 0.0,
) -> Tensor:
    """Plain-PyTorch window attention with the exact semantics of ``window_attention``.

    Same arguments and result as :func:`flash_window_attn.window_attention`, computed with
    ordinary PyTorch ops (and materialising the (B_, H, N, N) attention matrix). Differentiable.
    Attention dropout takes its mask explicitly: ``dropout_keep`` (bool, (B_, H, N, N), e.g. from
    :func:`flash_window_attn.dropout_keep_mask`) with probability ``dropout_p``.
    """
    return _reference(
        q, k, v, bias, mask, scale, logit_scale, guard_all_masked_rows=True,
        keep=dropout_keep, dropout_p=dropout_p,
    )


def window_attention_reference_unguarded(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    bias: Optional[Tensor] = None,
    mask: Optional[Tensor] = None,
    *,
    scale: Optional[float] = None,
    logit_scale: Optional[Tensor] = None,
) -> Tensor:
    """The reference exactly as timm writes it: no special case for all −inf rows (they give NaN).

    This is what a Swin model runs today, so it is the "eager" peer of the benchmark (whose masks
    are finite, where both functions agree bit for bit).
    """
    return _reference(q, k, v, bias, mask, scale, logit_scale, guard_all_masked_rows=False)


_GRAD_NAMES = ("dq", "dk", "dv", "dbias", "dlogit_scale")


def reference_outputs_and_grads(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    bias: Optional[Tensor] = None,
    mask: Optional[Tensor] = None,
    *,
    scale: Optional[float] = None,
    logit_scale: Optional[Tensor] = None,
    dout: Optional[Tensor] = None,
    dtype: Optional[torch.dtype] = None,
    device: Optional[torch.device | str] = None,
    chunk_windows: Optional[int] = None,
) -> Dict[str, Optional[Tensor]]:
    """Reference output and all gradients for the cotangent ``dout``.

    Inputs are detached and, if ``dtype`` is given, cast to it (all floating inputs: q, k, v, bias,
    mask, logit_scale and dout), and moved to ``device`` if given. With ``dtype=None`` the reference
    runs in the inputs' own dtypes (the "PyTorch in low precision" error baseline of the tests).

    Returns ``{"out", "dq", "dk", "dv", "dbias", "dlogit_scale"}``; a gradient is None when its
    input is None or ``dout`` is None. The gradients of bias and logit_scale are summed over all
    windows and have the input's shape.

    ``chunk_windows`` bounds memory for large B_: windows are processed in chunks of that many
    (rounded to a multiple of nW so that ``mask[b % nW]`` stays aligned) and the bias and
    logit_scale gradients are summed over chunks.
    """

    def prep(t: Optional[Tensor], grad: bool) -> Optional[Tensor]:
        if t is None:
            return None
        t = t.detach()
        if device is not None:
            t = t.to(device)
        if dtype is not None:
            t = t.to(dtype)
        return t.requires_grad_(grad and dout is not None)

    q_, k_, v_ = prep(q, True), prep(k, True), prep(v, True)
    bias_, ls_ = prep(bias, True), prep(logit_scale, True)
    mask_ = prep(mask, False)
    dout_ = prep(dout, False)

    B_ = q_.shape[0]
    step = B_ if not chunk_windows else max(1, int(chunk_windows))
    if mask_ is not None and step < B_:
        nW = mask_.shape[0]
        step = max(nW, step // nW * nW)

    outs = []
    grads: Dict[str, list] = {name: [] for name in _GRAD_NAMES}
    for start in range(0, max(B_, 1), max(step, 1)):
        stop = min(B_, start + step)
        qc, kc, vc = q_[start:stop], k_[start:stop], v_[start:stop]
        with torch.enable_grad():
            out = window_attention_reference(qc, kc, vc, bias_, mask_, scale=scale, logit_scale=ls_)
        if dout_ is not None:
            wrt = [qc, kc, vc] + [t for t in (bias_, ls_) if t is not None]
            g = torch.autograd.grad(out, wrt, dout_[start:stop], allow_unused=True)
            g = list(g)
            grads["dq"].append(g.pop(0))
            grads["dk"].append(g.pop(0))
            grads["dv"].append(g.pop(0))
            if bias_ is not None:
                grads["dbias"].append(g.pop(0))
            if ls_ is not None:
                grads["dlogit_scale"].append(g.pop(0))
        outs.append(out.detach())
        if B_ == 0:
            break

    result: Dict[str, Optional[Tensor]] = {"out": torch.cat(outs) if len(outs) > 1 else outs[0]}
    for name in _GRAD_NAMES:
        parts = grads[name]
        if not parts:
            result[name] = None
        elif name in ("dbias", "dlogit_scale"):
            total = parts[0]
            for p in parts[1:]:
                total = total + p
            result[name] = total
        else:
            result[name] = torch.cat(parts) if len(parts) > 1 else parts[0]
    for name, like in (("dq", q_), ("dk", k_), ("dv", v_), ("dbias", bias_), ("dlogit_scale", ls_)):
        # autograd.grad gives None for an input the output does not depend on; report zeros.
        if dout_ is not None and like is not None and result[name] is None:
            result[name] = torch.zeros_like(like)
    return result


def reference_float64(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    bias: Optional[Tensor] = None,
    mask: Optional[Tensor] = None,
    *,
    scale: Optional[float] = None,
    logit_scale: Optional[Tensor] = None,
    dout: Optional[Tensor] = None,
    device: Optional[torch.device | str] = None,
    chunk_windows: Optional[int] = None,
) -> Dict[str, Optional[Tensor]]:
    """The float64 oracle: output and all gradients, every input upcast to float64.

    Runs on ``device`` (default: the inputs' device; pass ``"cpu"`` to keep GPU memory free).
    See :func:`reference_outputs_and_grads` for the result and ``chunk_windows``.
    """
    return reference_outputs_and_grads(
        q, k, v, bias, mask, scale=scale, logit_scale=logit_scale, dout=dout,
        dtype=torch.float64, device=device, chunk_windows=chunk_windows,
    )


def swin_shift_mask(
    grid: Sequence[int] | int,
    window: Sequence[int] | int,
    shift: Optional[Sequence[int] | int] = None,
    *,
    masked_value: float = -100.0,
    dtype: torch.dtype = torch.float32,
    device: Optional[torch.device | str] = None,
) -> Tensor:
    """The attention mask of Swin's shifted windows, (nW, N, N) with entries 0 / ``masked_value``.

    ``grid``: the feature map size (Hp, Wp) in tokens, a multiple of ``window`` (Wh, Ww);
    ``shift``: the cyclic shift, default half a window. nW = (Hp / Wh) * (Wp / Ww), N = Wh * Ww.
    Built the way timm's ``SwinTransformerBlock`` builds it.
    """
    Hp, Wp = (grid, grid) if isinstance(grid, int) else tuple(grid)
    Wh, Ww = (window, window) if isinstance(window, int) else tuple(window)
    if shift is None:
        shift = (Wh // 2, Ww // 2)
    sh, sw = (shift, shift) if isinstance(shift, int) else tuple(shift)
    if Hp % Wh or Wp % Ww:
        raise ValueError(f"swin_shift_mask: grid {(Hp, Wp)} is not a multiple of window {(Wh, Ww)}")
    img = torch.zeros(Hp, Wp, dtype=torch.float32)
    cnt = 0
    for hs in (slice(0, -Wh), slice(-Wh, -sh if sh else None), slice(-sh, None) if sh else slice(0, 0)):
        for ws in (slice(0, -Ww), slice(-Ww, -sw if sw else None), slice(-sw, None) if sw else slice(0, 0)):
            img[hs, ws] = cnt
            cnt += 1
    win = img.view(Hp // Wh, Wh, Wp // Ww, Ww).permute(0, 2, 1, 3).reshape(-1, Wh * Ww)
    diff = win.unsqueeze(1) - win.unsqueeze(2)
    mask = torch.zeros_like(diff).masked_fill(diff != 0, masked_value)
    return mask.to(dtype=dtype, device=device)
