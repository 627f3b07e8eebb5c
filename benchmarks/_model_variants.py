"""Model transformations used by benchmarks/bench_models.py (benchmark-only code).

- ``apply_ceiling(model)``: the "attention core removed" ceiling of issue 3, variant (e). Every timm
  Swin V2 ``WindowAttention`` (and Swin V1 ``WindowAttention``) keeps its qkv projection (with the
  q / k / v biases exactly as timm adds them) and its output projection, but the attention core
  (normalisation, q·kᵀ, logit scale, relative-position bias, shift mask, softmax, attention dropout,
  ·v) is replaced by passing v through: ``proj(v)`` with v = the last third of the qkv output, which
  is already laid out as (B_, N, H·d), exactly the (B_, N, C) tensor the output projection consumes
  (read in place: one GEMM with bias on the strided view, no copy).
  Nothing that only feeds the removed core is evaluated: not the continuous-position-bias MLP of V2
  (nor its bias gather / 16·sigmoid), not the bias-table gather of V1, not the logit-scale clamp.
  So the ceiling is strict: the swapped model, which still runs its cpb MLP once per layer and
  forward, is compared against a model that does not run it at all. The q and k columns of the
  projection are still computed (and get zero gradients in training), so the projection costs the
  same as in the real model.

  Implemented by re-classing each module in place (``module.__class__ = <subclass>``): the module
  keeps its parameters, buffers and state_dict; only ``forward`` changes.

- ``load_swap()``: the one-call model swap of issue 3, imported lazily
  (``flash_window_attn.swap.swap_window_attention``, else ``flash_window_attn.swap_window_attention``).
  Returns ``(fn, None)`` or ``(None, reason)`` when it is not available.

- ``count_attention_modules(model)``: how many timm window-attention modules (V2, V1) and how many
  modules from the flash_window_attn package a model holds (to record what a swap replaced).
"""

from __future__ import annotations

import importlib
from typing import Callable, Dict, Optional, Tuple

import torch
import torch.nn.functional as F


def _timm_attention_classes() -> Dict[str, type]:
    classes: Dict[str, type] = {}
    try:
        from timm.models import swin_transformer_v2 as v2

        classes["v2"] = v2.WindowAttention
    except Exception:  # noqa: BLE001 (timm missing or reorganised: nothing to replace)
        pass
    try:
        from timm.models import swin_transformer as v1

        classes["v1"] = v1.WindowAttention
    except Exception:  # noqa: BLE001
        pass
    return classes


_CEILING_CLASSES: Dict[type, type] = {}


def _qkv_v2(self, x: torch.Tensor) -> torch.Tensor:
    """The qkv projection exactly as timm's Swin V2 WindowAttention computes it."""
    if self.q_bias is None:
        return self.qkv(x)
    qkv_bias = torch.cat((self.q_bias, self.k_bias, self.v_bias))
    if self.qkv_bias_separate:
        qkv = self.qkv(x)
        qkv += qkv_bias
        return qkv
    return F.linear(x, weight=self.qkv.weight, bias=qkv_bias)


def _proj_of_v(proj: torch.nn.Linear, qkv: torch.Tensor) -> torch.Tensor:
    """proj(v) for v = the last third of qkv (B_, N, 3 * A), read in place as a (B_ * N, A) matrix
    with row stride 3 * A: one GEMM with the bias in its epilogue, no copy. (F.linear on the strided
    3-d view would instead run a matmul plus a separate bias add, and on the CPU a slow strided bf16
    path; a .contiguous() would add a copy that the swapped model does not have.)"""
    B_, N, three_a = qkv.shape
    a = three_a // 3
    v2d = qkv.reshape(B_ * N, three_a)[:, 2 * a:]
    if proj.bias is None:
        out = torch.mm(v2d, proj.weight.t())
    else:
        out = torch.addmm(proj.bias, v2d, proj.weight.t())
    return out.view(B_, N, proj.out_features)


def _ceiling_forward_v2(self, x: torch.Tensor, mask: Optional[torch.Tensor] = None) -> torch.Tensor:
    # qkv: (B_, N, 3 * C) = [q heads | k heads | v heads]; its v third is already the (B_, N, C)
    # tensor that (attn @ v).transpose(1, 2).reshape(B_, N, C) would produce with attn = identity
    x = _proj_of_v(self.proj, _qkv_v2(self, x))
    return self.proj_drop(x)


def _ceiling_forward_v1(self, x: torch.Tensor, mask: Optional[torch.Tensor] = None) -> torch.Tensor:
    x = _proj_of_v(self.proj, self.qkv(x))  # qkv: (B_, N, 3 * attn_dim)
    return self.proj_drop(x)


def _ceiling_class(base: type, version: str) -> type:
    cls = _CEILING_CLASSES.get(base)
    if cls is None:
        fwd = _ceiling_forward_v2 if version == "v2" else _ceiling_forward_v1
        cls = type(f"Ceiling{base.__name__}{version.upper()}", (base,), {
            "forward": fwd,
            "__doc__": f"{base.__module__}.{base.__name__} with its attention core replaced by v "
                       "(benchmark ceiling; same parameters and buffers).",
        })
        _CEILING_CLASSES[base] = cls
    return cls


def apply_ceiling(model: torch.nn.Module) -> int:
    """Turn every timm Swin (V2 or V1) WindowAttention of ``model`` into its ceiling version, in
    place. Returns how many modules were changed; raises if the model has none."""
    classes = _timm_attention_classes()
    n = 0
    for module in model.modules():
        for version, base in classes.items():
            if type(module) is base:
                module.__class__ = _ceiling_class(base, version)
                n += 1
                break
    if n == 0:
        raise RuntimeError(f"no timm Swin WindowAttention module found in {type(model).__name__}: "
                           "cannot build the attention-core-removed ceiling")
    return n


def count_attention_modules(model: torch.nn.Module) -> Dict[str, int]:
    classes = _timm_attention_classes()
    counts = {"timm_v2": 0, "timm_v1": 0, "ceiling": 0, "flash_window_attn": 0}
    ceilings = set(_CEILING_CLASSES.values())
    for module in model.modules():
        t = type(module)
        if t in ceilings:
            counts["ceiling"] += 1
        elif t is classes.get("v2"):
            counts["timm_v2"] += 1
        elif t is classes.get("v1"):
            counts["timm_v1"] += 1
        elif t.__module__.split(".")[0] == "flash_window_attn":
            counts["flash_window_attn"] += 1
    return counts


def load_swap() -> Tuple[Optional[Callable], Optional[str]]:
    """The model-swap function, or None and why it is unavailable."""
    reasons = []
    for modname in ("flash_window_attn.swap", "flash_window_attn"):
        try:
            mod = importlib.import_module(modname)
        except Exception as exc:  # noqa: BLE001 (missing module, or the extension does not load)
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
            reasons.append(f"import {modname}: {type(exc).__name__}: {first[:200]}")
            continue
        fn = getattr(mod, "swap_window_attention", None)
        if callable(fn):
            return fn, None
        reasons.append(f"{modname} has no swap_window_attention")
    return None, "; ".join(reasons)
