"""Drop-in replacements for Hugging Face transformers' Swin attention modules (transformers 5.x).

- :class:`FlashSwinv2SelfAttention` replaces ``transformers.models.swinv2.modeling_swinv2.
  Swinv2SelfAttention`` (cosine attention, ``continuous_position_bias_mlp``, separate ``query`` /
  ``key`` / ``value`` projections; the output projection is the sibling ``Swinv2SelfOutput``).
- :class:`FlashSwinAttention` replaces ``transformers.models.swin.modeling_swin.SwinAttention``
  (transformers 5.x's Swin V1 attention: ``q_proj`` / ``k_proj`` / ``v_proj`` / ``o_proj`` and a
  ``relative_position_bias`` submodule; it replaced 4.x's ``SwinSelfAttention``).

Both subclass the transformers class they replace (so the model's ``_init_weights``, which
dispatches on ``isinstance``, still initialises them) and keep its constructor, parameters,
buffers, forward signature and return convention; only ``forward`` changes. ``from_hf(module)``
makes the drop-in from an existing module, taking over its parameters, buffers and submodules (the
same objects). This module imports transformers.

Numerics follow the originals exactly, including one quirk: transformers 5.x's
``Swinv2SelfAttention.forward`` adds the shifted-window mask to the attention scores **twice**
(``modeling_swinv2.py``, the two statements after ``if attention_mask is not None``), so a 0 / -100
mask acts as 0 / -200. The drop-in reproduces that by passing ``attention_mask + attention_mask`` to
the op, after checking in the installed source how many times the mask is added (a transformers
version that adds it once gets it once).

The fused op returns no attention probabilities: when they are asked for (``output_attentions``),
and where the op cannot run (see ``flash_window_attn.modules``), the drop-ins run the original
transformers forward.
"""

from __future__ import annotations

import inspect
from typing import Optional, Tuple

import torch
from torch import Tensor
from transformers.models.swin.modeling_swin import SwinAttention
from transformers.models.swinv2.modeling_swinv2 import Swinv2SelfAttention

from . import _swin_common as common
from .ops import window_attention

__all__ = ["FlashSwinv2SelfAttention", "FlashSwinAttention", "swinv2_mask_repeats"]


def _count_mask_additions() -> Optional[int]:
    """How many times the installed Swinv2SelfAttention.forward adds attention_mask to the scores."""
    try:
        src = inspect.getsource(Swinv2SelfAttention.forward)
    except (OSError, TypeError):
        return None
    n = src.count("attention_mask.unsqueeze(1).unsqueeze(0)")
    return n if n in (1, 2) else None


_SWINV2_MASK_REPEATS: Optional[int] = _count_mask_additions()


def swinv2_mask_repeats() -> Optional[int]:
    """1 or 2: how often the installed transformers adds the Swin V2 shift mask (None: unknown,
    then :class:`FlashSwinv2SelfAttention` runs the original forward whenever a mask is given)."""
    return _SWINV2_MASK_REPEATS


def _hf_unsupported_reason(window_tokens: int, head_dim: int) -> Optional[str]:
    return common.unsupported_reason(window_tokens, head_dim)


class FlashSwinv2SelfAttention(Swinv2SelfAttention):
    """``Swinv2SelfAttention`` on the fused op.

    ``forward(hidden_states, attention_mask=None, output_attentions=False)`` returns
    ``(context_layer,)``, context_layer (B_, N, C), like the original. With
    ``output_attentions=True`` it runs the original forward (the fused op does not return the
    probabilities) and returns ``(context_layer, attention_probs)``.

    The continuous-position-bias MLP runs once per forward; in eval mode or without grad its result
    is cached until one of its inputs changes.
    """

    def _compute_relative_position_bias(self) -> Tensor:
        """16 * sigmoid(cpb_mlp(table))[index]: (H, N, N) (see ``_swin_common.cpb_bias``)."""
        return common.cpb_bias(self.continuous_position_bias_mlp, self.relative_coords_table,
                               self.relative_position_index, self.num_attention_heads,
                               common.window_area(self.window_size))

    def _cpb_batch_inputs(self):
        """What the model-level batch of ``swap_window_attention`` computes this layer's bias from
        (``_swin_common.cpb_batch_inputs``), or None."""
        return common.cpb_batch_inputs(self.continuous_position_bias_mlp, self.relative_coords_table,
                                       self.relative_position_index, self.num_attention_heads)

    def relative_position_bias(self) -> Tensor:
        """The (H, N, N) bias 16 * sigmoid(cpb_mlp(table))[index] (cached in eval / no-grad; in a
        training step of a swapped model, the model's batched computation of every layer's)."""
        bias = common.prefetched_bias(self)
        if bias is not None:
            return bias

        def deps():
            return [*self.continuous_position_bias_mlp.parameters(), self.relative_coords_table,
                    self.relative_position_index]

        return common.cached_bias(
            self, self._compute_relative_position_bias, deps,
            (tuple(self.window_size), self.num_attention_heads),
        )

    def forward(
        self,
        hidden_states: Tensor,
        attention_mask: Optional[torch.FloatTensor] = None,
        output_attentions: Optional[bool] = False,
    ) -> Tuple[Tensor, ...]:
        batch_size, n, _ = hidden_states.shape
        H, d = self.num_attention_heads, self.attention_head_size
        if output_attentions or (attention_mask is not None and _SWINV2_MASK_REPEATS is None):
            return super().forward(hidden_states, attention_mask, output_attentions)
        # Three (B_, N, C) projections viewed as (B_, H, N, d): strided views, no copy.
        q = self.query(hidden_states).view(batch_size, -1, H, d).transpose(1, 2)
        k = self.key(hidden_states).view(batch_size, -1, H, d).transpose(1, 2)
        v = self.value(hidden_states).view(batch_size, -1, H, d).transpose(1, 2)
        drop = common.dropout_kwargs(self.dropout.p, self.training, q)
        if drop is None or not common.op_runs(q):
            return super().forward(hidden_states, attention_mask, output_attentions)
        mask = attention_mask
        if mask is not None and _SWINV2_MASK_REPEATS == 2:
            mask = mask + mask  # transformers 5.x adds the mask twice (see the module docstring)
        out = window_attention(q, k, v, self.relative_position_bias(), mask,
                               logit_scale=self.logit_scale, **drop)
        return (out.transpose(1, 2).reshape(batch_size, n, H * d),)  # free view of (B_, N, H, d)

    def _apply(self, fn, recurse=True):
        common.clear_bias_cache(self)
        return super()._apply(fn, recurse)

    @classmethod
    def from_hf(cls, module: Swinv2SelfAttention) -> "FlashSwinv2SelfAttention":
        """The drop-in for ``module``, taking over its parameters, buffers, submodules and config."""
        if isinstance(module, cls):
            return module
        if not isinstance(module, Swinv2SelfAttention):
            raise TypeError(f"expected a transformers Swinv2SelfAttention, got {type(module).__name__}")
        return common.adopt_state(cls.__new__(cls), module)

    @staticmethod
    def unsupported_reason(module: Swinv2SelfAttention) -> Optional[str]:
        reason = _hf_unsupported_reason(common.window_area(module.window_size),
                                        module.attention_head_size)
        if reason is None and _SWINV2_MASK_REPEATS is None:
            reason = ("could not tell from the installed transformers source how the shift mask is "
                      "added in Swinv2SelfAttention.forward")
        return reason


class FlashSwinAttention(SwinAttention):
    """``SwinAttention`` (transformers 5.x Swin V1) on the fused op.

    ``forward(hidden_states, attention_mask=None, **kwargs)`` returns ``(attn_output,
    attn_weights)`` like the original, with ``attn_weights = None`` (as the original's SDPA path
    returns). When attention weights are asked for (``output_attentions`` in kwargs, else in the
    config) it runs the original forward with the model's attention implementation.
    """

    def forward(
        self,
        hidden_states: Tensor,
        attention_mask: Optional[torch.FloatTensor] = None,
        **kwargs,
    ) -> Tuple[Tensor, Optional[Tensor]]:
        want_weights = kwargs.get("output_attentions", getattr(self.config, "output_attentions", False))
        if want_weights:
            return super().forward(hidden_states, attention_mask, **kwargs)
        input_shape = hidden_states.shape[:-1]
        hidden_shape = (*input_shape, -1, self.head_dim)
        q = self.q_proj(hidden_states).view(hidden_shape).transpose(1, 2)
        k = self.k_proj(hidden_states).view(hidden_shape).transpose(1, 2)
        v = self.v_proj(hidden_states).view(hidden_shape).transpose(1, 2)
        drop = common.dropout_kwargs(self.attention_dropout, self.training, q)
        if drop is None or not common.op_runs(q):
            return super().forward(hidden_states, attention_mask, **kwargs)
        bias = self.relative_position_bias()  # (1, H, N, N), through the submodule (its hooks run)
        out = window_attention(q, k, v, bias, attention_mask, scale=self.scaling, **drop)
        out = out.transpose(1, 2).reshape(*input_shape, -1)  # free view of (B_, N, H, d)
        return self.o_proj(out), None

    @classmethod
    def from_hf(cls, module: SwinAttention) -> "FlashSwinAttention":
        """The drop-in for ``module``, taking over its parameters, buffers, submodules and config."""
        if isinstance(module, cls):
            return module
        if not isinstance(module, SwinAttention):
            raise TypeError(f"expected a transformers SwinAttention, got {type(module).__name__}")
        return common.adopt_state(cls.__new__(cls), module)

    @staticmethod
    def unsupported_reason(module: SwinAttention) -> Optional[str]:
        H, d = module.num_attention_heads, module.head_dim
        if module.q_proj.out_features != H * d:
            return (f"hidden size {module.q_proj.out_features} is not num_heads ({H}) x head_dim "
                    f"({d})")
        return _hf_unsupported_reason(module.relative_position_bias.window_area, d)
