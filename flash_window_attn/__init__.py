"""flash_window_attn: fused Swin-Transformer window attention for PyTorch (CPU and CUDA).

    out = flash_window_attn.window_attention(q, k, v, bias=None, mask=None, *, scale=None, logit_scale=None,
                                             dropout_p=0.0)

The compiled library ``flash_window_attn._C`` registers the ops ``torch.ops.flash_window_attn.
window_attention_fwd`` and ``window_attention_bwd`` (schemas and math: ``csrc/README.md``);
``ops.py`` adds their fake kernels and the public function (the autograd kernels are C++:
``csrc/ops/window_attention_autograd.cpp``); ``reference.py`` holds the plain-PyTorch formula.
"""

import torch

__version__ = "0.1.0"


def _load_library() -> None:
    try:
        from . import _C  # noqa: F401  (registers the ops with the dispatcher on import)
    except ImportError as exc:
        raise ImportError(
            "flash_window_attn: the compiled extension flash_window_attn._C could not be loaded "
            f"({exc}). Build it from the repository root with\n"
            "    pip install --no-build-isolation -e .\n"
            "(CPU only, no CUDA toolkit needed: FLASH_WINDOW_ATTN_CPU_ONLY=1 pip install "
            "--no-build-isolation -e .). It must be built against the torch you import "
            f"(this is torch {torch.__version__}); rebuild after upgrading torch."
        ) from exc
    ns = torch.ops.flash_window_attn
    for name in (
        "window_attention_fwd",
        "window_attention_bwd",
        "window_attention_dropout_fwd",
        "window_attention_dropout_bwd",
        "dropout_keep_mask",
        "local_attention_fwd",
        "local_attention_fwd_res",
        "local_attention_bwd",
    ):
        if not hasattr(ns, name):
            raise ImportError(
                f"flash_window_attn: flash_window_attn._C loaded but did not register the op "
                f"flash_window_attn::{name}; rebuild the extension (pip install --no-build-isolation -e .)."
            )


_load_library()

from .ops import dropout_keep_mask, window_attention, window_attention_qkvpacked  # noqa: E402
from .reference import window_attention_reference  # noqa: E402
from .modules import WindowAttention, WindowAttentionV1  # noqa: E402
from .swap import swap_window_attention  # noqa: E402
from .local import block_sliding_window_attention, sliding_window_attention  # noqa: E402
from .local_reference import local_attention_reference  # noqa: E402


def __getattr__(name):
    # The Hugging Face drop-ins import transformers: loaded on first use only.
    if name in ("FlashSwinv2SelfAttention", "FlashSwinAttention"):
        from . import hf

        return getattr(hf, name)
    raise AttributeError(f"module 'flash_window_attn' has no attribute {name!r}")

__all__ = [
    "window_attention",
    "window_attention_qkvpacked",
    "window_attention_reference",
    "dropout_keep_mask",
    "WindowAttention",
    "WindowAttentionV1",
    "swap_window_attention",
    "sliding_window_attention",
    "block_sliding_window_attention",
    "local_attention_reference",
    "FlashSwinv2SelfAttention",
    "FlashSwinAttention",
    "__version__",
]
