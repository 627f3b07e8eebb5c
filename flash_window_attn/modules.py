"""Drop-in replacements for timm's Swin window-attention modules, running the fused op.

- :class:`WindowAttention`: for ``timm.models.swin_transformer_v2.WindowAttention`` (timm 1.0.x),
  cosine attention with a continuous position bias (CPB) MLP.
- :class:`WindowAttentionV1`: for ``timm.models.swin_transformer.WindowAttention``, scaled
  dot-product attention with a learned relative-position bias table.

Each has timm's constructor, parameter / buffer names, shapes, registration order and persistence,
so ``load_state_dict(strict=True)`` works in both directions and ``named_parameters()`` lists the
same names in the same order; and timm's ``forward(x, mask=None)``: x (B_, N, C) windows, mask
(nW, N, N) or None (window b uses ``mask[b % nW]``), result (B_, N, C).

What changes inside the forward:

- the op reads q, k, v straight from the qkv projection output (no permute copy), writes its
  result in the (B_, N, H, d) layout the output projection reads (no transpose copy), and its
  backward writes the projection's gradient in the projection's layout (no stack, no copy);
- the attention core (normalise, q·kᵀ, scale, bias, mask, softmax, ·v) is one fused op that never
  materialises the (B_, H, N, N) attention matrix;
- V2: the CPB MLP runs once per forward (it is per layer, not per window), and in eval mode, or
  under ``torch.no_grad`` / ``torch.inference_mode``, its result is cached until one of its inputs
  changes (see :func:`flash_window_attn._swin_common.cached_bias`).

Attention dropout (``attn_drop`` in training mode) is applied inside the op (``dropout_p``; its
mask comes from torch's generator, so ``torch.manual_seed`` reproduces a run). Where the op cannot
run (head_dim not a multiple of 8 in [16, 128], a window of more than 1024 tokens, a device other
than CPU / CUDA, float64 on CUDA, attention dropout on float32 CUDA inputs, or an op built without
``dropout_p``) the module computes exactly timm's formula with plain PyTorch ops instead.

``from_timm(module)`` turns a timm module into the drop-in: the drop-in takes over the module's
parameters, buffers and submodules (the same tensor objects, not copies), its configuration and its
train/eval mode. Deep-copy the timm module first if you need the two to stay independent.
"""

from __future__ import annotations

import collections.abc
import math
from typing import Optional, Tuple, Union

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from . import _swin_common as common
from .ops import window_attention_qkvpacked

__all__ = ["WindowAttention", "WindowAttentionV1"]

_int_or_tuple_2_t = Union[int, Tuple[int, int]]


def _to_2tuple(x) -> Tuple:
    """timm's ``to_2tuple``: an iterable (not a string) becomes a tuple, anything else is repeated."""
    if isinstance(x, collections.abc.Iterable) and not isinstance(x, str):
        return tuple(x)
    return (x, x)


def _relative_position_index(win_h: int, win_w: int, device=None) -> Tensor:
    """(N, N) int64: for tokens i, j of a win_h x win_w window, the row of their offset in the
    (2*win_h - 1) x (2*win_w - 1) table of relative offsets (Swin's indexing)."""
    coords = torch.stack(torch.meshgrid(
        torch.arange(win_h, device=device, dtype=torch.long),
        torch.arange(win_w, device=device, dtype=torch.long),
        indexing="ij",
    )).flatten(1)  # 2, N
    rel = (coords[:, :, None] - coords[:, None, :]).permute(1, 2, 0).contiguous()  # N, N, 2
    rel[:, :, 0] += win_h - 1
    rel[:, :, 1] += win_w - 1
    rel[:, :, 0] *= 2 * win_w - 1
    return rel.sum(-1)


def _eager_attention(
    module: nn.Module,
    q: Tensor,
    k: Tensor,
    v: Tensor,
    bias: Tensor,
    mask: Optional[Tensor],
    *,
    scale: Optional[float] = None,
    logit_scale: Optional[Tensor] = None,
) -> Tensor:
    """timm's own attention math (the fallback), returning (B_, N, H*d)."""
    B_, H, N, _ = q.shape
    if logit_scale is not None:
        attn = F.normalize(q, dim=-1) @ F.normalize(k, dim=-1).transpose(-2, -1)
        attn = attn * torch.clamp(logit_scale, max=common.LN100).exp()
    else:
        attn = (q * scale) @ k.transpose(-2, -1)
    attn = attn + bias.unsqueeze(0)
    if mask is not None:
        num_win = mask.shape[0]
        attn = attn.view(-1, num_win, H, N, N) + mask.unsqueeze(1).unsqueeze(0)
        attn = attn.view(-1, H, N, N)
    attn = module.softmax(attn)
    attn = module.attn_drop(attn)
    return (attn @ v).transpose(1, 2).reshape(B_, N, -1)


def _fused_attention_packed(module: nn.Module, qkv: Tensor, bias: Tensor, mask: Optional[Tensor],
                            **kw) -> Tensor:
    """The fused op on the qkv projection output (B_, N, 3 * H * d) itself (or the eager fallback
    on its q, k, v views where the op cannot run), returning (B_, N, H*d). Its backward returns the
    projection's gradient in the projection's layout (no stack of dq, dk, dv, no copy)."""
    B_, N, C3 = qkv.shape
    H = module.num_heads
    drop = common.dropout_kwargs(module.attn_drop.p, module.training, qkv)
    if drop is None or not common.op_runs(qkv, N, C3 // (3 * H)):
        q, k, v = qkv.reshape(B_, N, 3, H, -1).permute(2, 0, 3, 1, 4).unbind(0)
        return _eager_attention(module, q, k, v, bias, mask, **kw)
    out = window_attention_qkvpacked(qkv, H, bias, mask, **kw, **drop)
    return out.transpose(1, 2).reshape(B_, N, -1)  # (B_, N, H, d) in memory: a free view


class WindowAttention(nn.Module):
    """Swin V2 window attention (cosine attention + continuous position bias) on the fused op.

    Drop-in for ``timm.models.swin_transformer_v2.WindowAttention`` (timm 1.0.x): same constructor,
    parameters (``logit_scale``, ``cpb_mlp.*``, ``qkv.weight``, ``q_bias``, ``v_bias``, ``proj.*``),
    non-persistent buffers (``k_bias``, ``relative_coords_table``, ``relative_position_index``),
    submodules, ``forward(x, mask=None)``, ``set_window_size`` and ``reset_parameters``.

    Args:
        dim: number of input channels.
        window_size: (height, width) of the window.
        num_heads: number of attention heads.
        qkv_bias: learnable q and v biases (k has a fixed zero bias, as in Swin V2).
        qkv_bias_separate: add the bias after the projection instead of inside it.
        attn_drop: dropout on the attention probabilities.
        proj_drop: dropout on the output.
        pretrained_window_size: window size at pre-training, used to normalise the CPB coordinates
            ((0, 0): the window size itself).
    """

    def __init__(
        self,
        dim: int,
        window_size: Tuple[int, int],
        num_heads: int,
        qkv_bias: bool = True,
        qkv_bias_separate: bool = False,
        attn_drop: float = 0.0,
        proj_drop: float = 0.0,
        pretrained_window_size: Tuple[int, int] = (0, 0),
        device=None,
        dtype=None,
    ) -> None:
        dd = {"device": device, "dtype": dtype}
        super().__init__()
        self.dim = dim
        self.window_size = window_size  # stored as given, like timm
        self.pretrained_window_size = _to_2tuple(pretrained_window_size)
        self.num_heads = num_heads
        self.qkv_bias_separate = qkv_bias_separate

        # Registration order matches timm (named_parameters / state_dict order, DDP buckets).
        self.logit_scale = nn.Parameter(torch.empty((num_heads, 1, 1), **dd))
        self.cpb_mlp = nn.Sequential(
            nn.Linear(2, 512, bias=True, **dd),
            nn.ReLU(inplace=True),
            nn.Linear(512, num_heads, bias=False, **dd),
        )
        self.qkv = nn.Linear(dim, dim * 3, bias=False, **dd)
        if qkv_bias:
            self.q_bias = nn.Parameter(torch.empty(dim, **dd))
            self.register_buffer("k_bias", torch.empty(dim, **dd), persistent=False)
            self.v_bias = nn.Parameter(torch.empty(dim, **dd))
        else:
            self.q_bias = None
            self.k_bias = None
            self.v_bias = None
        self.attn_drop = nn.Dropout(attn_drop)
        self.proj = nn.Linear(dim, dim, **dd)
        self.proj_drop = nn.Dropout(proj_drop)
        self.softmax = nn.Softmax(dim=-1)  # used by the plain-PyTorch fallback only

        win_h, win_w = self.window_size
        self.register_buffer(
            "relative_coords_table",
            torch.empty(1, 2 * win_h - 1, 2 * win_w - 1, 2, **dd),
            persistent=False,
        )
        self.register_buffer(
            "relative_position_index",
            torch.empty(win_h * win_w, win_h * win_w, device=device, dtype=torch.long),
            persistent=False,
        )
        self.reset_parameters()

    # -- initialisation and window size (timm's behaviour) ---------------------------------------

    def reset_parameters(self) -> None:
        nn.init.constant_(self.logit_scale, math.log(10))
        if self.q_bias is not None:
            nn.init.zeros_(self.q_bias)
            nn.init.zeros_(self.v_bias)
        self._init_buffers()

    def _init_buffers(self) -> None:
        if self.k_bias is not None:
            self.k_bias.zero_()
        table, index = self._make_pair_wise_relative_positions(
            device=self.proj.weight.device, dtype=self.proj.weight.dtype
        )
        self.relative_coords_table.copy_(table)
        self.relative_position_index.copy_(index)
        common.clear_bias_cache(self)

    def init_non_persistent_buffers(self) -> None:
        self._init_buffers()

    def _make_pair_wise_relative_positions(self, device=None, dtype=None) -> Tuple[Tensor, Tensor]:
        """(relative_coords_table (1, 2Wh-1, 2Ww-1, 2), relative_position_index (N, N)).

        The table holds every relative offset, normalised by the (pretrained) window size to
        [-8, 8] and log-spaced: sign(x) * log2(|x| + 1) / 3; computed in float32, then cast.
        """
        win_h, win_w = self.window_size
        rel_h = torch.arange(-(win_h - 1), win_h, device=device, dtype=torch.float32)
        rel_w = torch.arange(-(win_w - 1), win_w, device=device, dtype=torch.float32)
        table = torch.stack(torch.meshgrid(rel_h, rel_w, indexing="ij"))
        table = table.permute(1, 2, 0).contiguous().unsqueeze(0)  # 1, 2Wh-1, 2Ww-1, 2
        if self.pretrained_window_size[0] > 0:
            table[:, :, :, 0] /= (self.pretrained_window_size[0] - 1)
            table[:, :, :, 1] /= (self.pretrained_window_size[1] - 1)
        else:
            table[:, :, :, 0] /= (win_h - 1)
            table[:, :, :, 1] /= (win_w - 1)
        table *= 8
        table = torch.sign(table) * torch.log2(torch.abs(table) + 1.0) / math.log2(8)
        table = table.to(dtype=dtype)
        return table, _relative_position_index(win_h, win_w, device=device)

    def set_window_size(self, window_size: Tuple[int, int]) -> None:
        """Change the window size; regenerates the coordinate table and index (timm's behaviour)."""
        window_size = _to_2tuple(window_size)
        if window_size != self.window_size:
            device = self.relative_coords_table.device
            dtype = self.relative_coords_table.dtype
            self.window_size = window_size
            table, index = self._make_pair_wise_relative_positions(device=device, dtype=dtype)
            self.register_buffer("relative_coords_table", table, persistent=False)
            self.register_buffer("relative_position_index", index, persistent=False)
            common.clear_bias_cache(self)

    # -- forward ----------------------------------------------------------------------------------

    def _compute_relative_position_bias(self) -> Tensor:
        """16 * sigmoid(cpb_mlp(table))[index]: (H, N, N) (see ``_swin_common.cpb_bias``)."""
        return common.cpb_bias(self.cpb_mlp, self.relative_coords_table, self.relative_position_index,
                               self.num_heads, common.window_area(self.window_size))

    def _cpb_batch_inputs(self):
        """What the model-level batch of ``swap_window_attention`` computes this layer's bias from
        (``_swin_common.cpb_batch_inputs``), or None."""
        return common.cpb_batch_inputs(self.cpb_mlp, self.relative_coords_table, self.relative_position_index,
                                       self.num_heads)

    def relative_position_bias(self) -> Tensor:
        """The (H, N, N) bias; cached in eval mode / without grad while its inputs are unchanged.
        In a training step of a swapped model, the model's batched computation of every layer's
        bias (``_swin_common.install_cpb_batching``)."""
        bias = common.prefetched_bias(self)
        if bias is not None:
            return bias

        def deps():
            return [*self.cpb_mlp.parameters(), self.relative_coords_table, self.relative_position_index]

        return common.cached_bias(
            self, self._compute_relative_position_bias, deps,
            (tuple(self.window_size), self.num_heads),
        )

    def _qkv_projection(self, x: Tensor) -> Tensor:
        if self.q_bias is None:
            return self.qkv(x)
        qkv_bias = torch.cat((self.q_bias, self.k_bias, self.v_bias))
        if self.qkv_bias_separate:
            qkv = self.qkv(x)
            qkv += qkv_bias
            return qkv
        return F.linear(x, weight=self.qkv.weight, bias=qkv_bias)

    def forward(self, x: Tensor, mask: Optional[Tensor] = None) -> Tensor:
        """x: (num_windows*B, N, C); mask: (num_windows, N, N) or None. Returns (num_windows*B, N, C)."""
        B_, N, C = x.shape
        qkv = self._qkv_projection(x)
        bias = self.relative_position_bias()
        x = _fused_attention_packed(self, qkv, bias, mask, logit_scale=self.logit_scale)
        x = self.proj(x)
        x = self.proj_drop(x)
        return x

    def _apply(self, fn, recurse=True):
        common.clear_bias_cache(self)
        return super()._apply(fn, recurse)

    def extra_repr(self) -> str:
        return (f"dim={self.dim}, window_size={tuple(self.window_size)}, num_heads={self.num_heads}, "
                f"pretrained_window_size={self.pretrained_window_size}")

    @classmethod
    def from_timm(cls, module: nn.Module) -> "WindowAttention":
        """The drop-in for a ``timm.models.swin_transformer_v2.WindowAttention``.

        It takes over ``module``'s parameters, buffers and submodules (the same objects: weights,
        device, dtype, requires_grad and train/eval mode carry over) and its configuration.
        """
        if isinstance(module, cls):
            return module
        common.require_attributes(
            module,
            ("dim", "window_size", "pretrained_window_size", "num_heads", "qkv_bias_separate",
             "logit_scale", "cpb_mlp", "qkv", "q_bias", "k_bias", "v_bias", "attn_drop", "proj",
             "proj_drop", "softmax", "relative_coords_table", "relative_position_index"),
            "a timm swin_transformer_v2.WindowAttention",
        )
        return common.adopt_state(cls.__new__(cls), module)


class WindowAttentionV1(nn.Module):
    """Swin V1 window attention (scaled dot product + relative position bias table) on the fused op.

    Drop-in for ``timm.models.swin_transformer.WindowAttention`` (timm 1.0.x): same constructor,
    parameters (``relative_position_bias_table``, ``qkv.*``, ``proj.*``), non-persistent buffer
    ``relative_position_index``, ``scale = head_dim ** -0.5``, ``forward(x, mask=None)`` and
    ``set_window_size`` (which, like timm's, resizes the bias table with
    ``timm.layers.resize_rel_pos_bias_table``, so it needs timm).

    Args:
        dim: number of input channels.
        num_heads: number of attention heads.
        head_dim: channels per head (default ``dim // num_heads``).
        window_size: window height and width.
        qkv_bias: learnable bias of the qkv projection.
        attn_drop: dropout on the attention probabilities.
        proj_drop: dropout on the output.
    """

    def __init__(
        self,
        dim: int,
        num_heads: int,
        head_dim: Optional[int] = None,
        window_size: _int_or_tuple_2_t = 7,
        qkv_bias: bool = True,
        attn_drop: float = 0.0,
        proj_drop: float = 0.0,
        device=None,
        dtype=None,
    ) -> None:
        dd = {"device": device, "dtype": dtype}
        super().__init__()
        self.dim = dim
        self.window_size = _to_2tuple(window_size)
        win_h, win_w = self.window_size
        self.window_area = win_h * win_w
        self.num_heads = num_heads
        head_dim = head_dim or dim // num_heads
        attn_dim = head_dim * num_heads
        self.scale = head_dim ** -0.5

        self.relative_position_bias_table = nn.Parameter(
            torch.empty((2 * win_h - 1) * (2 * win_w - 1), num_heads, **dd))
        self.register_buffer(
            "relative_position_index",
            torch.empty(win_h * win_w, win_h * win_w, device=device, dtype=torch.long),
            persistent=False,
        )
        self.qkv = nn.Linear(dim, attn_dim * 3, bias=qkv_bias, **dd)
        self.attn_drop = nn.Dropout(attn_drop)
        self.proj = nn.Linear(attn_dim, dim, **dd)
        self.proj_drop = nn.Dropout(proj_drop)
        self.softmax = nn.Softmax(dim=-1)  # used by the plain-PyTorch fallback only
        self.reset_parameters()

    def reset_parameters(self) -> None:
        nn.init.trunc_normal_(self.relative_position_bias_table, std=0.02)
        self._init_buffers()

    def _init_buffers(self) -> None:
        win_h, win_w = self.window_size
        self.relative_position_index.copy_(
            _relative_position_index(win_h, win_w, device=self.relative_position_index.device)
        )

    def init_non_persistent_buffers(self) -> None:
        self._init_buffers()

    def set_window_size(self, window_size: Tuple[int, int]) -> None:
        """Change the window size, interpolating the bias table exactly as timm does."""
        window_size = _to_2tuple(window_size)
        if window_size == self.window_size:
            return
        try:
            from timm.layers import resize_rel_pos_bias_table
        except ImportError as exc:  # pragma: no cover - timm is there wherever its modules are
            raise ImportError(
                "WindowAttentionV1.set_window_size resizes the bias table with timm's "
                "resize_rel_pos_bias_table: install timm"
            ) from exc
        self.window_size = window_size
        win_h, win_w = self.window_size
        self.window_area = win_h * win_w
        with torch.no_grad():
            new_bias_shape = (2 * win_h - 1) * (2 * win_w - 1), self.num_heads
            self.relative_position_bias_table = nn.Parameter(
                resize_rel_pos_bias_table(
                    self.relative_position_bias_table,
                    new_window_size=self.window_size,
                    new_bias_shape=new_bias_shape,
                ))
            self.register_buffer(
                "relative_position_index",
                _relative_position_index(win_h, win_w, device=self.relative_position_bias_table.device),
                persistent=False,
            )

    def _relative_position_bias(self) -> Tensor:
        """(H, N, N): table[index], heads first (a permuted view: the op takes any strides)."""
        n = self.window_area
        bias = self.relative_position_bias_table[self.relative_position_index.view(-1)].view(n, n, -1)
        return bias.permute(2, 0, 1)

    def _get_rel_pos_bias(self) -> Tensor:
        """timm's helper: the bias as (1, H, N, N) (contiguous, as timm returns it)."""
        return self._relative_position_bias().contiguous().unsqueeze(0)

    def forward(self, x: Tensor, mask: Optional[Tensor] = None) -> Tensor:
        """x: (num_windows*B, N, C); mask: (num_windows, N, N) or None. Returns (num_windows*B, N, C)."""
        B_, N, C = x.shape
        bias = self._relative_position_bias()
        x = _fused_attention_packed(self, self.qkv(x), bias, mask, scale=self.scale)
        x = self.proj(x)
        x = self.proj_drop(x)
        return x

    def extra_repr(self) -> str:
        return f"dim={self.dim}, window_size={self.window_size}, num_heads={self.num_heads}"

    @classmethod
    def from_timm(cls, module: nn.Module) -> "WindowAttentionV1":
        """The drop-in for a ``timm.models.swin_transformer.WindowAttention``.

        It takes over ``module``'s parameters, buffers and submodules (the same objects) and its
        configuration (including ``scale``) and train/eval mode.
        """
        if isinstance(module, cls):
            return module
        common.require_attributes(
            module,
            ("dim", "window_size", "window_area", "num_heads", "scale", "relative_position_bias_table",
             "relative_position_index", "qkv", "attn_drop", "proj", "proj_drop", "softmax"),
            "a timm swin_transformer.WindowAttention",
        )
        return common.adopt_state(cls.__new__(cls), module)
