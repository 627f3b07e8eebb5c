"""Helpers for tests/test_modules.py and tests/test_swap.py (not a test file)."""

from __future__ import annotations

import copy
import math
import shutil
from typing import Dict, List, Optional, Sequence

import pytest
import torch
from torch import Tensor, nn

from flash_window_attn import window_attention
from flash_window_attn.reference import swin_shift_mask

LN100 = math.log(100.0)


class LazyModule:
    """A module imported on first attribute access, with pytest.importorskip: a test that uses a
    missing optional dependency (timm, transformers) is skipped, the rest of the file still runs."""

    def __init__(self, name: str):
        self._name = name

    def __getattr__(self, attr):
        if attr.startswith("_"):  # pytest's collection probes module attributes: not an import
            raise AttributeError(attr)
        return getattr(pytest.importorskip(self._name), attr)


def close(actual: Tensor, expected: Tensor, tol: float, floor: float = 0.0, msg: str = "") -> None:
    """assert_close with rtol = tol and atol = tol * max(max|expected|, floor): a relative check
    scaled by the tensor's magnitude (``floor`` for quantities that vanish mathematically, such as
    the gradient of a key bias, which softmax cancels)."""
    scale = max(expected.detach().abs().max().item() if expected.numel() else 0.0, floor)
    torch.testing.assert_close(actual, expected, rtol=tol, atol=tol * scale + 1e-30,
                               msg=lambda m: f"{msg}: {m}")


def window_mask(window, kind: Optional[str], nW: int = 4, seed: int = 0) -> Optional[Tensor]:
    """None, Swin's 0 / -100 shift mask over a 2x2 grid of windows ("shift"), or random 0 / -100."""
    if kind is None:
        return None
    wh, ww = window
    if kind == "shift":
        assert nW == 4
        return swin_shift_mask((2 * wh, 2 * ww), (wh, ww), (wh // 2, ww // 2))
    g = torch.Generator().manual_seed(seed)
    n = wh * ww
    return torch.where(torch.rand((nW, n, n), generator=g) < 0.3, -100.0, 0.0)


def perturb_parameters(module: nn.Module, seed: int = 0) -> None:
    """Random values for the parameters Swin initialises to constants (zeros, ones, ln 10), so that
    the comparisons exercise them: logit scales spread around and above the clamp, q / v biases,
    relative position tables, projection biases, and normalisation weights (timm's Swin V2 starts
    its post-norms at zero, which would make every block an identity and hide the attention)."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in module.named_parameters():
            r = torch.randn(p.shape, generator=g, dtype=torch.float32).to(p.dtype)
            leaf = name.rsplit(".", 1)[-1]
            if leaf == "logit_scale":
                ls = math.log(10.0) + 0.6 * r
                ls.view(-1)[0] = LN100 + 0.5  # one head above the clamp (its gradient is zero)
                p.copy_(ls)
            elif leaf == "relative_position_bias_table":
                p.copy_(0.5 * r)
            elif leaf in ("q_bias", "v_bias", "bias"):
                p.add_(0.3 * r)
            elif leaf == "weight" and p.dim() == 1:  # LayerNorm weights
                p.copy_(1.0 + 0.2 * r)
            elif "cpb_mlp" in name or "continuous_position_bias_mlp" in name:
                p.add_(0.05 * r)


def grads_of(out: Tensor, inputs: Sequence[Tensor], dout: Tensor) -> List[Optional[Tensor]]:
    return list(torch.autograd.grad(out, list(inputs), dout, allow_unused=True))


def _run(module: nn.Module, args, kwargs, x_index, out_fn, dout=None, dtype=None):
    """Output, dout and [input grad] + parameter grads (parameters that require grad)."""
    args = list(args)
    x = args[x_index].detach().clone()
    if dtype is not None:
        args = [a.to(dtype) if isinstance(a, Tensor) and a.is_floating_point() else a for a in args]
        x = x.to(dtype)
    args[x_index] = x.requires_grad_(True)
    out = out_fn(module(*args, **kwargs))
    if dout is None:
        dout = torch.randn(out.shape, generator=torch.Generator().manual_seed(123)).to(out.dtype)
    params = [p for p in module.parameters() if p.requires_grad]
    grads = grads_of(out, [args[x_index]] + params, dout.to(out.dtype))
    return out.detach(), dout, grads


def assert_same_run(ref: nn.Module, ours: nn.Module, args, kwargs=None, *, tol: float,
                    grad_tol: float, x_index: int = 0, out_fn=lambda o: o,
                    reduction_tol: float = 1e-3) -> None:
    """Forward with the same inputs; output, input gradient and every parameter gradient agree.

    Each quantity must satisfy ``close(ours, ref, tol)`` (relative to its max-abs; gradients that
    vanish mathematically, like a key bias's, are measured against 1e-3 of the largest gradient).
    A quantity that misses it passes if it meets the project's tolerance rule instead (see
    flash_window_attn/testing.py): its error against the original run in float64 is at most twice
    the original's own fp32 error plus ``tol`` (sums with heavy cancellation, such as the
    logit-scale gradient, are only as accurate as fp32 rounding of their terms allows).

    The logit-scale gradient, a sum over all windows and token pairs whose terms cancel to ~1e-3 of
    their magnitude, is held to ``reduction_tol`` (the op accumulates it in its own fixed order).
    """
    kwargs = kwargs or {}
    ours_mod = getattr(ours, "_orig_mod", ours)  # a torch.compile'd module
    names = [n for n, p in ref.named_parameters() if p.requires_grad]
    assert [n for n, p in ours_mod.named_parameters() if p.requires_grad] == names
    out_a, dout, ga = _run(ref, args, kwargs, x_index, out_fn)
    out_b, _, gb = _run(ours, args, kwargs, x_index, out_fn, dout)
    ref64 = None

    def check(name, a, b, t, floor):
        nonlocal ref64
        try:
            close(b, a, t, floor=floor, msg=name)
        except AssertionError:
            if a.dtype != torch.float32:
                raise
            if ref64 is None:
                r = copy.deepcopy(ref).double()
                o64, _, g64 = _run(r, args, kwargs, x_index, out_fn, dout, dtype=torch.float64)
                ref64 = dict(zip(["output", "input"] + names, [o64] + g64))
            e = ref64[name]
            scale = max(e.abs().max().item(), floor)
            err_ours = (b.double() - e).abs().max().item() / scale
            err_ref = (a.double() - e).abs().max().item() / scale
            assert err_ours <= 2 * err_ref + t, (
                f"{name}: error vs float64 {err_ours:.3e} > 2 x the original's fp32 error "
                f"{err_ref:.3e} + {t:.1e}")

    check("output", out_a, out_b, tol, 0.0)
    floor = max(g.abs().max().item() for g in ga if g is not None) * 1e-3
    for name, a, b in zip(["input"] + names, ga, gb):
        if a is None or b is None:
            assert a is None and b is None, f"gradient of {name}: {a is None} vs {b is None}"
            continue
        t = reduction_tol if name.rsplit(".", 1)[-1] == "logit_scale" else grad_tol
        check(name, a, b, t, floor)
    return dict(zip(["input"] + names, ga))


def op_has_dropout() -> bool:
    """True once window_attention accepts dropout_p > 0 (being added to the op)."""
    q = torch.zeros(1, 1, 4, 16)
    try:
        window_attention(q, q, q, dropout_p=0.1)
    except (NotImplementedError, TypeError, RuntimeError):
        return False
    return True


def require_op_dropout() -> None:
    if not op_has_dropout():
        pytest.skip("op has no dropout yet")


def require_inductor_cpu() -> None:
    if not any(shutil.which(c) for c in ("c++", "g++", "clang++")):
        pytest.skip("inductor CPU compile unavailable (no C++ compiler)")


def autocast_error(out: Tensor, ref64: Tensor) -> float:
    """max|out - ref| / max|ref| in float64."""
    out = out.detach().double()
    ref64 = ref64.detach().double().to(out.device)
    return ((out - ref64).abs().max() / ref64.abs().max().clamp_min(1e-30)).item()


def assert_autocast_rule(ours: Dict[str, Tensor], ref_lp: Dict[str, Tensor], ref32: Dict[str, Tensor],
                         atol: float) -> None:
    """For every key (output, gradients): error(ours vs ref32) <= 2 x error(ref_lp vs ref32) + atol,
    errors relative to max|ref32| (gradients: at least 1e-3 of the largest gradient, so that those
    that vanish mathematically, like a key bias's, are not measured against ~0)."""
    assert ours.keys() == ref32.keys() == ref_lp.keys()
    grads = [v for k, v in ref32.items() if k != "output"]
    floor = 1e-3 * max((g.abs().max().item() for g in grads), default=0.0)
    for k, r in ref32.items():
        scale = max(r.abs().max().item(), 0.0 if k == "output" else floor, 1e-30)
        err = (ours[k].double() - r.double()).abs().max().item() / scale
        base = (ref_lp[k].double() - r.double()).abs().max().item() / scale
        assert err <= 2 * base + atol, f"{k}: error {err:.3e} > 2 x {base:.3e} + {atol:.0e}"


def param_grads(module: nn.Module) -> Dict[str, Tensor]:
    return {n: p.grad.detach().clone() for n, p in module.named_parameters() if p.grad is not None}
