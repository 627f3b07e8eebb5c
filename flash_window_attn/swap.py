"""One call to run a timm or transformers Swin model's window attention on the fused op.

    model = flash_window_attn.swap_window_attention(model)

Replaces, in place, every supported attention module:

| family | original | drop-in |
|---|---|---|
| timm Swin V2 | ``timm.models.swin_transformer_v2.WindowAttention`` | ``modules.WindowAttention`` |
| timm Swin V1 | ``timm.models.swin_transformer.WindowAttention`` | ``modules.WindowAttentionV1`` |
| transformers Swin V2 | ``Swinv2SelfAttention`` | ``hf.FlashSwinv2SelfAttention`` |
| transformers Swin V1 | ``SwinAttention`` (5.x) | ``hf.FlashSwinAttention`` |

Each drop-in takes over the original's parameters, buffers and submodules (the same objects, in the
same order), so weights, devices, dtypes, ``requires_grad`` flags, train/eval mode, ``state_dict``
keys, ``named_parameters()`` order (DDP buckets) and optimizer references are all unchanged, and
no parameter is added. Nothing device-specific is captured: swapping before or after ``.cuda()`` /
``.to(dtype)`` is the same, and the model can be ``torch.compile``-d, run under ``torch.autocast`` or
wrapped in DistributedDataParallel afterwards.

In a training step, the position biases of all the model's Swin V2 drop-ins are computed together,
in one batched op call from a forward pre-hook on the returned model (and their gradients in one),
bitwise as each layer would; ``FWA_CPB_BATCH=0`` turns that off (see ``_swin_common``).

A module of a recognised family that cannot be replaced (an unsupported head dim or window size, a
subclass with its own behaviour, ...) is left exactly as it was, with a ``warnings.warn`` naming its
path and the reason. Each module is either replaced whole or not at all.
"""

from __future__ import annotations

import logging
import sys
import warnings
from dataclasses import dataclass
from typing import Callable, Dict, List, Optional, Tuple

from torch import nn

from . import _swin_common as common

__all__ = ["swap_window_attention", "SWAPPED_COUNT_ATTR"]

logger = logging.getLogger("flash_window_attn")

#: Attribute set on the returned model: how many modules the call replaced.
SWAPPED_COUNT_ATTR = "_flash_window_attn_swapped"


@dataclass
class _Family:
    label: str
    original: type
    dropin: type
    build: Callable[[nn.Module], nn.Module]
    unsupported: Callable[[nn.Module], Optional[str]]


def _timm_v2_reason(m: nn.Module) -> Optional[str]:
    H = m.num_heads
    if m.qkv.out_features % (3 * H) != 0:
        return f"qkv width {m.qkv.out_features} is not a multiple of 3 x num_heads ({H})"
    return common.unsupported_reason(common.window_area(m.window_size), m.qkv.out_features // (3 * H))


def _timm_v1_reason(m: nn.Module) -> Optional[str]:
    H = m.num_heads
    if m.qkv.out_features % (3 * H) != 0:
        return f"qkv width {m.qkv.out_features} is not a multiple of 3 x num_heads ({H})"
    return common.unsupported_reason(common.window_area(m.window_size), m.qkv.out_features // (3 * H))


def _families() -> List[_Family]:
    """The families whose defining library module is already imported (a model can only contain
    modules of imported classes; nothing is imported here that the caller has not imported)."""
    fams: List[_Family] = []
    timm_v2 = sys.modules.get("timm.models.swin_transformer_v2")
    timm_v1 = sys.modules.get("timm.models.swin_transformer")
    hf_v2 = sys.modules.get("transformers.models.swinv2.modeling_swinv2")
    hf_v1 = sys.modules.get("transformers.models.swin.modeling_swin")
    if timm_v2 is not None or timm_v1 is not None:
        from .modules import WindowAttention, WindowAttentionV1

        if timm_v2 is not None and hasattr(timm_v2, "WindowAttention"):
            fams.append(_Family("timm Swin V2 WindowAttention", timm_v2.WindowAttention,
                                WindowAttention, WindowAttention.from_timm, _timm_v2_reason))
        if timm_v1 is not None and hasattr(timm_v1, "WindowAttention"):
            fams.append(_Family("timm Swin V1 WindowAttention", timm_v1.WindowAttention,
                                WindowAttentionV1, WindowAttentionV1.from_timm, _timm_v1_reason))
    if (hf_v2 is not None and hasattr(hf_v2, "Swinv2SelfAttention")) or (
            hf_v1 is not None and hasattr(hf_v1, "SwinAttention")):
        from . import hf

        if hf_v2 is not None and hasattr(hf_v2, "Swinv2SelfAttention"):
            fams.append(_Family("transformers Swinv2SelfAttention", hf_v2.Swinv2SelfAttention,
                                hf.FlashSwinv2SelfAttention, hf.FlashSwinv2SelfAttention.from_hf,
                                hf.FlashSwinv2SelfAttention.unsupported_reason))
        if hf_v1 is not None and hasattr(hf_v1, "SwinAttention"):
            fams.append(_Family("transformers SwinAttention", hf_v1.SwinAttention,
                                hf.FlashSwinAttention, hf.FlashSwinAttention.from_hf,
                                hf.FlashSwinAttention.unsupported_reason))
    return fams


def _classify(m: nn.Module, fams: List[_Family]) -> Tuple[Optional[_Family], Optional[str]]:
    """(family, reason-it-cannot-be-swapped) for a recognised module; (None, None) otherwise."""
    t = type(m)
    if any(isinstance(m, f.dropin) for f in fams):
        return None, None  # already a drop-in
    for f in fams:
        if t is f.original:
            try:
                return f, f.unsupported(m)
            except Exception as exc:  # a module that does not look like the version we know
                return f, f"could not read its configuration ({type(exc).__name__}: {exc})"
    for f in fams:
        if isinstance(m, f.original):
            return f, (f"{t.__module__}.{t.__qualname__} subclasses {f.label} and may change its "
                       "behaviour; only the exact class is replaced")
    return None, None


def swap_window_attention(model: nn.Module, *, verbose: bool = True) -> nn.Module:
    """Replace every supported Swin attention module of ``model`` by its fused drop-in, in place.

    Supported: timm ``swin_transformer_v2.WindowAttention`` and ``swin_transformer.WindowAttention``
    (timm 1.0.x), transformers ``Swinv2SelfAttention`` and ``SwinAttention`` (5.x). Each drop-in
    takes over the original's parameters, buffers and submodules (same objects and order): weights,
    device, dtype, ``requires_grad``, train/eval mode, ``state_dict()`` keys and the parameter order
    are unchanged, so optimizers and DDP built before or after the swap keep working.

    Modules of these families that cannot be replaced (unsupported head dim or window size for the
    fused op, subclasses) are left unchanged with a ``warnings.warn`` naming the module path and the
    reason.

    Args:
        model: any ``nn.Module`` (a timm / transformers Swin model, or a model containing one).
        verbose: print a one-line summary (the number of modules replaced) to stderr, unless the
            ``"flash_window_attn"`` logger already shows INFO messages, where it is always logged.

    Returns:
        The model (the same object; only when ``model`` itself is a supported attention module is
        the returned object its drop-in). The number of modules replaced by this call is also set
        as ``returned_model._flash_window_attn_swapped``.
    """
    if not isinstance(model, nn.Module):
        raise TypeError(f"swap_window_attention: model must be an nn.Module, got {type(model).__name__}")
    fams = _families()
    replacements: Dict[int, Tuple[str, nn.Module]] = {}
    left_alone = 0
    for name, module in model.named_modules():
        fam, reason = _classify(module, fams)
        if fam is None:
            continue
        path = name or "<root>"
        if reason is None:
            try:
                new = fam.build(module)
            except Exception as exc:
                reason = f"building the drop-in failed ({type(exc).__name__}: {exc})"
        if reason is not None:
            left_alone += 1
            warnings.warn(f"flash_window_attn: left {path} ({fam.label}) unchanged: {reason}",
                          stacklevel=2)
            continue
        replacements[id(module)] = (path, new)
        logger.debug("swap_window_attention: %s: %s -> %s", path, fam.label, type(new).__name__)

    # Install: every parent that holds a replaced module (a shared module can have several).
    for parent in list(model.modules()):
        for child_name, child in list(parent._modules.items()):
            if child is not None and id(child) in replacements:
                parent._modules[child_name] = replacements[id(child)][1]
    result = replacements[id(model)][1] if id(model) in replacements else model
    # A training step computes every Swin V2 drop-in's position bias in one batched op call
    # (_swin_common.install_cpb_batching), from a forward pre-hook on the returned model.
    common.install_cpb_batching(
        result, [m for m in result.modules() if callable(getattr(type(m), "_cpb_batch_inputs", None))])

    count = len(replacements)
    setattr(result, SWAPPED_COUNT_ATTR, count)
    msg = f"swap_window_attention: replaced {count} window-attention module(s) with fused drop-ins"
    if left_alone:
        msg += f"; left {left_alone} unchanged (see warnings)"
    logger.info(msg)
    if verbose and not logger.isEnabledFor(logging.INFO):
        print(f"[flash_window_attn] {msg}", file=sys.stderr)
    return result
