"""Randomized differential testing of the local (sliding-window / block-sliding-window) attention ops.

The counterpart of the window-attention generator in :mod:`flash_window_attn.testing`, for
``torch.ops.flash_window_attn.local_attention_fwd`` / ``_bwd`` and the public functions of
:mod:`flash_window_attn.local`. Split in two steps so that the draws can be inspected without
building tensors:

    spec = local_problem_spec(seed, device)       # a plain dict: every decision, no tensors
    problem = build_local_problem(spec)           # a LocalProblem (tensors on spec["device"])
    problem = local_random_problem(seed, device)  # both steps
    ok, report = check_local_random_problem(seed, device)

Decisions come from ``random.Random`` seeded with the seed, tensor values from a torch.Generator
seeded from it and drawn on the CPU (so CPU and CUDA runs see the same numbers): a (seed, device
type, max_elems, dtypes) tuple always gives the same problem. A failing seed prints the one-line
reproducer

    python -m flash_window_attn.testing_local --repro SEED --device cuda

What a problem draws:

- sizes: B (rarely 0), Hkv and the GQA ratio H / Hkv in {1, 2, 4, 8}, L in [1, 4096] biased toward
  the kernels' 64-row tile boundaries (1, 2, 63, 64, 65, 127, 128, 129, ..., 1000, 4095, 4096),
  d a multiple of 8 in [8, 128] (fp32 / fp64: up to 256), capped so that the dense reference's
  B * H * L * max(L, d) stays under ``max_elems`` (a CPU problem then takes well under a second);
- the window pattern (``LOCAL_PATTERN_KINDS``): full (-1, -1), causal (-1, 0), symmetric (w, w),
  causal local (w, 0), right-only (0, w), right-unbounded (0, -1), asymmetric (w1, w2) (either side
  possibly unbounded), diagonal (0, 0), block-causal windows (window_blocks - 1, 0, block),
  block-diagonal (0, 0, block) and general block bands (left, right, block); windows from 1 to
  beyond L (and up to 2**40), block sizes that do and do not divide L and 64, blocks longer than L;
- how it is called: the public function (``sliding_window_attention`` with or without
  ``causal=True``, ``block_sliding_window_attention``) or the op itself (then lse is checked too);
- the scale (default, given, rarely negative) and the magnitude of q, k, v;
- the memory layout of q, k, v: contiguous, (B, L, H, d) storage seen transposed (``blhd``), views of
  one packed (B, L, (H + 2 Hkv) d) projection output, views into bigger buffers with larger batch /
  head / row strides (16-byte aligned: read in place by the CUDA kernels), misaligned views (storage
  offset of one element, odd row stride, or a column offset: the CUDA op copies them), zero-stride
  broadcasts, or a mix per tensor;
- which of q, k, v require grad, and the layout of the output gradient (contiguous, blhd, sliced,
  misaligned, zero-stride broadcast, or expanded along d with stride(-1) = 0 as from ``out.sum()``);
- in a fifth of the problems, q, k, v clustered around per-kv-head means (values close to their
  mean: the backward's D must be exact there).

Checks (:func:`check_local_problem`): out (and lse when the op is called directly) and every
requested gradient against the float64 dense reference with the explicit mask
(:func:`flash_window_attn.local_reference.local_attention_reference`), with the project's rule
(:func:`flash_window_attn.testing.compare_to_reference`): err <= 2 * err(same formula in the
inputs' dtype) + atol[dtype]; the output contract (shapes, dtypes, contiguity); and bitwise
determinism of the backward (run twice).
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Optional, Sequence, Tuple

import torch
from torch import Tensor

from .local_reference import local_attention_reference
from .testing import (ATOL, _generator, _randn, compare_to_reference, normalized_error, random_check_report,
                      random_seeds_main, repro_command)

__all__ = [
    "LOCAL_PATTERN_KINDS",
    "LOCAL_LAYOUTS",
    "LOCAL_DOUT_LAYOUTS",
    "LOCAL_GQA_RATIOS",
    "LOCAL_RANDOM_DTYPES",
    "LOCAL_RANDOM_MAX_ELEMS",
    "LocalProblem",
    "local_problem_spec",
    "build_local_problem",
    "local_random_problem",
    "local_random_problem_repro",
    "make_local_problem",
    "local_reference_results",
    "banded_reference_results",
    "compare_local",
    "local_grad_term_magnitudes",
    "check_local_problem",
    "check_local_random_problem",
]

LOCAL_PATTERN_KINDS: Tuple[str, ...] = (
    "full", "causal", "symmetric", "causal_local", "right_only", "right_unbounded", "asymmetric",
    "diagonal", "block_causal", "block_diagonal", "block_general",
)
_PATTERN_WEIGHTS: Tuple[float, ...] = (0.06, 0.08, 0.13, 0.16, 0.07, 0.04, 0.10, 0.04, 0.14, 0.06, 0.12)
# Per-tensor layouts ("packed" and "mixed" are problem-level)
_TENSOR_LAYOUTS: Tuple[str, ...] = ("contiguous", "blhd", "sliced", "misaligned", "broadcast")
LOCAL_LAYOUTS: Tuple[str, ...] = _TENSOR_LAYOUTS + ("packed", "mixed")
LOCAL_DOUT_LAYOUTS: Tuple[str, ...] = ("contiguous", "blhd", "sliced", "misaligned", "broadcast", "expanded")
LOCAL_GQA_RATIOS: Tuple[int, ...] = (1, 2, 4, 8)
LOCAL_RANDOM_DTYPES: Dict[str, Tuple[str, ...]] = {"cpu": ("fp32", "fp64"), "cuda": ("fp16", "bf16", "fp32")}
# Cap on B * H * L * max(L, d) * max(1, d // 64), the size (and, with the factor, the cost) of the
# dense reference's attention matrix: keeps a CPU
# problem well under half a second on 2 cores; on a GPU it admits L = 4096 with GQA ratio 8
# (the float64 oracle then needs a few GiB).
LOCAL_RANDOM_MAX_ELEMS: Dict[str, int] = {"cpu": 1 << 21, "cuda": 1 << 27}
LOCAL_BOUNDARY_LS: Tuple[int, ...] = (
    1, 2, 3, 7, 31, 32, 33, 63, 64, 65, 127, 128, 129, 191, 192, 193, 255, 256, 257, 511, 512, 513,
    1000, 1023, 1024, 1025, 2047, 2048, 2049, 4095, 4096,
)
_BLOCK_SIZES: Tuple[int, ...] = (2, 3, 4, 7, 8, 16, 32, 37, 63, 64, 65, 100, 128, 256, 300)
_HUGE_WINDOWS: Tuple[int, ...] = (2 ** 31 - 1, 2 ** 31, 2 ** 40)
_HALF_DS: Tuple[int, ...] = (8, 16, 32, 40, 64, 72, 128)  # head-dim bucket edges of the CUDA kernels
_DTYPE_BY_NAME: Dict[str, torch.dtype] = {
    "fp16": torch.float16, "bf16": torch.bfloat16, "fp32": torch.float32, "fp64": torch.float64,
}


def _device_type(device) -> str:
    return torch.device(device).type


def _num_blocks(L: int, block: int) -> int:
    return max(1, -(-L // block))


def band_is_unbounded(L: int, left: int, right: int, block: int) -> Tuple[bool, bool]:
    """Whether each side of the band reaches the whole sequence (-1, or a window of at least the
    number of blocks minus one: the "window wider than L" case)."""
    nb = _num_blocks(L, block)
    return (left < 0 or left >= nb - 1), (right < 0 or right >= nb - 1)


# =================================================================================================
# The spec: every random decision, no tensors
# =================================================================================================


def _draw_w(rng: random.Random, nblocks: int) -> int:
    """A window side >= 1 (in blocks): small, near a tile size, anywhere up to the sequence, around
    the number of blocks (wider than the sequence included), or huge."""
    r = rng.random()
    if r < 0.28:
        return rng.randint(1, 8)
    if r < 0.45:
        return rng.choice((15, 16, 31, 32, 63, 64, 65, 127, 128, 129, 255, 256))
    if r < 0.72:
        return rng.randint(1, max(1, nblocks))
    if r < 0.95:
        return max(1, rng.choice((nblocks - 2, nblocks - 1, nblocks, nblocks + 1, 2 * nblocks + 3)))
    return rng.choice(_HUGE_WINDOWS)


def _draw_block(rng: random.Random, L: int) -> int:
    r = rng.random()
    if r < 0.6:
        return rng.choice(_BLOCK_SIZES)
    if r < 0.75:
        divisors = [x for x in range(2, L + 1) if L % x == 0]
        return rng.choice(divisors) if divisors else 2
    if r < 0.85:
        return max(1, L)
    if r < 0.95:
        return L + rng.randint(1, 100)
    return 5000


def _draw_pattern(rng: random.Random, L: int) -> Dict[str, object]:
    """The band (left, right, block) and how it is called: op, sliding (window, causal) or block."""
    kind = rng.choices(LOCAL_PATTERN_KINDS, weights=_PATTERN_WEIGHTS)[0]
    block = 1
    if kind == "full":
        left, right = -1, -1
    elif kind == "causal":
        left, right = -1, 0
    elif kind == "symmetric":
        left = right = _draw_w(rng, L)
    elif kind == "causal_local":
        left, right = _draw_w(rng, L), 0
    elif kind == "right_only":
        left, right = 0, _draw_w(rng, L)
    elif kind == "right_unbounded":
        left, right = 0, -1
    elif kind == "asymmetric":
        left, right = _draw_w(rng, L), _draw_w(rng, L)
        if rng.random() < 0.3:
            if rng.random() < 0.5:
                left = -1
            else:
                right = -1
    elif kind == "diagonal":
        left, right = 0, 0
    else:
        block = _draw_block(rng, L)
        nb = _num_blocks(L, block)
        if kind == "block_causal":
            left, right = _draw_w(rng, nb) if rng.random() < 0.85 else rng.choice((1, 2)), 0
        elif kind == "block_diagonal":
            left, right = 0, 0
        else:
            left = rng.choice((-1, 0, 1, 2, _draw_w(rng, nb)))
            right = rng.choice((-1, 0, 1, 2, _draw_w(rng, nb)))

    # how it is called
    call_kwargs: Dict[str, object] = {}
    if kind in ("block_causal", "block_diagonal"):
        call = "block" if rng.random() < 0.6 else "op"
    elif kind == "block_general":
        call = "op"
    else:
        r = rng.random()
        if right == 0 and r < 0.1:
            call = "block"  # block_size 1: the causal local window
            block = 1
        elif r < 0.6:
            call = "sliding"
        else:
            call = "op"
    if call == "block":
        if left < 0:
            # unbounded to the left: any window_blocks >= the number of blocks (the op gets it as is)
            left = _num_blocks(L, block) - 1 + rng.choice((0, 1, 5))
        call_kwargs = dict(block_size=block, window_blocks=left + 1)
    elif call == "sliding":
        if right == 0 and rng.random() < 0.5:
            # causal=True caps right at 0 whatever window[1] is
            call_kwargs = dict(window=(left, rng.choice((-1, 0, 3, _draw_w(rng, L)))), causal=True)
            if left < 0 and rng.random() < 0.5:
                call_kwargs = dict(causal=True)
        elif (left, right) == (-1, -1) and rng.random() < 0.5:
            call_kwargs = {}  # the default window
        else:
            call_kwargs = dict(window=(left, right))
    return dict(kind=kind, left=left, right=right, block=block, call=call, call_kwargs=call_kwargs)


def _draw_slice(rng: random.Random) -> Dict[str, int]:
    return dict(batch_step=rng.choice((1, 1, 2)), extra_heads=rng.choice((0, 1)), extra_rows=rng.choice((0, 3)),
                extra_cols=rng.choice((0, 8, 16)), col_offset=rng.choice((0, 8)),
                misaligned=rng.choice(("offset", "row_stride", "col_offset")),
                broadcast=rng.choice(("heads", "batch", "both")))


def local_problem_spec(
    seed: int,
    device: str | torch.device = "cpu",
    *,
    max_elems: Optional[int] = None,
    dtypes: Optional[Sequence[str]] = None,
) -> Dict[str, object]:
    """Every random decision of local problem ``seed`` (no tensors). See the module docstring.

    ``max_elems`` caps B * H * L * max(L, d) (default per device type: LOCAL_RANDOM_MAX_ELEMS);
    ``dtypes``: names among fp16 / bf16 / fp32 / fp64 (default per device type: LOCAL_RANDOM_DTYPES).
    """
    dev_type = _device_type(device)
    if max_elems is None:
        max_elems = LOCAL_RANDOM_MAX_ELEMS.get(dev_type, LOCAL_RANDOM_MAX_ELEMS["cuda"])
    dtypes = tuple(dtypes) if dtypes else LOCAL_RANDOM_DTYPES.get(dev_type, LOCAL_RANDOM_DTYPES["cuda"])
    rng = random.Random(f"flash_window_attn-local-random-problem-{seed}")

    dtype = rng.choice(dtypes)
    wide_d = dtype in ("fp32", "fp64")  # fp32 (SIMT on CUDA) and fp64 (CPU) take d up to 256
    r = rng.random()
    if wide_d and r < 0.2:
        d = rng.choice((136, 192, 256)) if rng.random() < 0.5 else rng.randrange(136, 257, 8)
    elif r < 0.6:
        d = rng.choice(_HALF_DS)
    else:
        d = rng.randrange(8, 129, 8)

    ratio = rng.choice(LOCAL_GQA_RATIOS)
    Hkv = rng.choice((1, 1, 2, 3, 4)) if rng.random() < 0.9 else rng.randint(5, 8)
    B = rng.choice((1, 1, 1, 2, 2, 3, 4)) if rng.random() < 0.95 else rng.randint(5, 16)
    if rng.random() < 0.01:
        B = 0  # empty batch

    def draw_L() -> int:
        r = rng.random()
        if r < 0.45:
            return rng.choice(LOCAL_BOUNDARY_LS)
        if r < 0.7:
            return rng.randint(1, 200)
        return max(1, min(4096, int(round(math.exp(rng.uniform(0.0, math.log(4096.0)))))))

    # The cap on the dense reference's size B * H * L * max(L, d), counted 64 columns of d at a
    # time (its cost grows with d too). The smallest problem with this GQA ratio (B = 1, Hkv = 1)
    # must fit, else L is redrawn.
    dw = max(1, d // 64)
    for _ in range(100):
        L = draw_L()
        if ratio * L * max(L, d) * dw <= max_elems:
            break
    else:
        L = max(1, int(math.isqrt(max_elems // (ratio * dw))))
    cost = lambda b, hkv: b * hkv * ratio * L * max(L, d) * dw  # noqa: E731
    while B > 1 and cost(B, Hkv) > max_elems:
        B //= 2
    while Hkv > 1 and cost(B, Hkv) > max_elems:
        Hkv //= 2
    H = Hkv * ratio

    pattern = _draw_pattern(rng, L)

    r = rng.random()
    layout = ("contiguous" if r < 0.2 else "packed" if r < 0.4 else "blhd" if r < 0.55 else
              "sliced" if r < 0.68 else "misaligned" if r < 0.8 else "broadcast" if r < 0.85 else "mixed")
    if layout == "mixed":
        tensor_layouts = [rng.choice(_TENSOR_LAYOUTS) for _ in range(3)]
    elif layout == "packed":
        tensor_layouts = ["packed"] * 3
    else:
        tensor_layouts = [layout] * 3
    slices = [_draw_slice(rng) for _ in range(3)]

    qkv_std = 1.0 if rng.random() < 0.85 else rng.choice((0.1, 0.3, 3.0))
    scale = None
    if rng.random() < 0.5:
        scale = round(rng.uniform(0.02, 1.5), 4)
        if rng.random() < 0.1:
            scale = -scale

    if layout == "packed":
        rg = [rng.random() < 0.9] * 3
    else:
        rg = [rng.random() < 0.8 for _ in range(3)]
    dout_layout = rng.choices(LOCAL_DOUT_LAYOUTS, weights=(0.45, 0.2, 0.1, 0.1, 0.07, 0.08))[0]
    # drawn last, so that the draws above are those of the suite before this option existed
    clustered = None
    if rng.random() < 0.2:
        clustered = dict(spread_qk=rng.choice((0.1, 0.3)), spread_v=rng.choice((0.05, 0.2)))

    left, right, block = pattern["left"], pattern["right"], pattern["block"]
    wide_left, wide_right = band_is_unbounded(L, left, right, block)
    return dict(
        seed=seed, device=str(device), max_elems=max_elems, dtypes=list(dtypes),
        B=B, H=H, Hkv=Hkv, ratio=ratio, L=L, d=d, dtype=dtype,
        kind=pattern["kind"], left=left, right=right, block=block,
        call=pattern["call"], call_kwargs=pattern["call_kwargs"],
        # a finite window side that reaches past the sequence (the same as unbounded)
        wide=(wide_left and left >= 0) or (wide_right and right >= 0),
        block_divides_L=L % block == 0, block_divides_64=64 % block == 0,
        layout=layout, tensor_layouts=tensor_layouts, slices=slices, qkv_std=qkv_std, scale=scale,
        qkv_requires_grad=rg, dout_layout=dout_layout, clustered=clustered,
    )


# =================================================================================================
# Tensors
# =================================================================================================


@dataclass
class LocalProblem:
    """One local-attention problem: tensors, the band, and how the op is called."""

    q: Tensor
    k: Tensor
    v: Tensor
    dout: Optional[Tensor]
    left: int
    right: int
    block: int
    scale: Optional[float] = None
    call: str = "op"  # "op" | "sliding" | "block"
    call_kwargs: Dict[str, object] = field(default_factory=dict)
    qkv: Optional[Tensor] = None  # the packed leaf when q, k, v are views of one projection
    desc: Dict[str, object] = field(default_factory=dict)

    @property
    def op_scale(self) -> float:
        return self.q.shape[-1] ** -0.5 if self.scale is None else float(self.scale)

    @property
    def band(self) -> Tuple[int, int, int]:
        return self.left, self.right, self.block

    def forward(self) -> Tuple[Tensor, Optional[Tensor]]:
        """(out, lse) through the chosen entry point (lse is None for the public functions)."""
        from .local import block_sliding_window_attention, sliding_window_attention

        if self.call == "op":
            out, lse = torch.ops.flash_window_attn.local_attention_fwd(
                self.q, self.k, self.v, self.left, self.right, self.block, self.op_scale)
            return out, lse
        if self.call == "sliding":
            return sliding_window_attention(self.q, self.k, self.v, scale=self.scale, **self.call_kwargs), None
        if self.call == "block":
            kw = self.call_kwargs
            return block_sliding_window_attention(self.q, self.k, self.v, kw["block_size"], kw["window_blocks"],
                                                  scale=self.scale), None
        raise ValueError(f"unknown call {self.call!r}")

    def grad_inputs(self) -> Dict[str, Tensor]:
        return {g: t for g, t in (("dq", self.q), ("dk", self.k), ("dv", self.v)) if t.requires_grad}


def _numel(shape) -> int:
    return math.prod(shape)


def _qkv_tensor(shape, kind: str, sl: Dict[str, object], g, device, dtype, std: float, rg: bool) -> Tensor:
    """A (B, n, L, d) tensor with unit last stride in the given memory layout; a view of a leaf that
    requires grad when ``rg`` (gradients are taken with respect to the returned tensor)."""
    B, n, L, d = shape

    def leaf(*s):
        return _randn(s, g, device, dtype, std=std).requires_grad_(rg)

    if kind == "contiguous":
        t = leaf(B, n, L, d)
    elif kind == "blhd":
        # stored (B, L, n, d) as a projection produces it, seen as (B, n, L, d)
        t = leaf(B, L, n, d).transpose(1, 2)
    elif kind == "sliced":
        # a view into a bigger buffer with larger batch / head / row strides; every stride and the
        # offset stay multiples of 8 elements (16-byte aligned: the CUDA kernels read it in place)
        bs, eh, er, ec, co = (sl["batch_step"], sl["extra_heads"], sl["extra_rows"], sl["extra_cols"],
                              sl["col_offset"])
        ec = max(ec, co)
        base = leaf(max(B * bs, 1), n + eh, L + er, d + ec)
        t = base[: B * bs: bs, eh:, er: er + L, co: co + d]
    elif kind == "misaligned":
        how = sl["misaligned"]
        if how == "offset":  # storage offset of one element
            t = leaf(_numel(shape) + 1)[1:].view(B, n, L, d)
        elif how == "row_stride":  # odd row stride
            t = leaf(B, n, L, d + 3)[..., :d]
        else:  # rows start 2 elements into a wider buffer
            t = leaf(B, n, L, d + 8)[..., 2: 2 + d]
    elif kind == "broadcast":
        # zero strides: one head (and / or one batch) repeated
        how = sl["broadcast"]
        bb = 1 if how in ("batch", "both") else B
        nn = 1 if how in ("heads", "both") else n
        t = leaf(bb, nn, L, d).expand(B, n, L, d)
    else:
        raise ValueError(f"unknown tensor layout {kind!r}")
    assert t.shape == (B, n, L, d) and (t.numel() == 0 or t.stride(-1) == 1), (kind, t.shape, t.stride())
    return t


def _dout_tensor(shape, kind: str, g, device, dtype) -> Tensor:
    B, H, L, d = shape
    if kind == "contiguous":
        return _randn(shape, g, device, dtype)
    if kind == "blhd":
        return _randn((B, L, H, d), g, device, dtype).transpose(1, 2)
    if kind == "sliced":
        return _randn((B, H, L, d + 8), g, device, dtype)[..., :d]
    if kind == "misaligned":
        return _randn((_numel(shape) + 1,), g, device, dtype)[1:].view(shape)
    if kind == "broadcast":  # one row of d values everywhere: zero strides, unit last stride
        return _randn((1, 1, 1, d), g, device, dtype).expand(shape)
    if kind == "expanded":  # constant along d (stride(-1) = 0), as the cotangent of out.sum() is
        return _randn((B, H, L, 1), g, device, dtype).expand(shape)
    raise ValueError(f"unknown dout layout {kind!r}")


def make_local_problem(
    B: int,
    H: int,
    Hkv: int,
    L: int,
    d: int,
    *,
    dtype: torch.dtype = torch.float32,
    device: str | torch.device = "cpu",
    band: Tuple[int, int, int] = (-1, -1, 1),
    scale: Optional[float] = None,
    layout: str = "contiguous",
    dout_layout: str = "contiguous",
    std: float = 1.0,
    requires_grad: bool | Sequence[bool] = True,
    seed: int = 0,
    call: str = "op",
    call_kwargs: Optional[Dict[str, object]] = None,
) -> LocalProblem:
    """A local problem with explicit sizes (for hand-written tests and the sanitizer workload).

    ``layout``: one of LOCAL_LAYOUTS except "mixed" (packed: views of one (B, L, (H + 2 Hkv) d)
    projection output); misaligned uses a one-element storage offset, broadcast zero head strides,
    sliced every other batch / an extra head / 3 extra rows / 8 extra and 8 offset columns.
    """
    g = _generator(seed)
    rg = [requires_grad] * 3 if isinstance(requires_grad, bool) else list(requires_grad)
    qkv = None
    if layout == "packed":
        qkv = _randn((B, L, (H + 2 * Hkv) * d), g, device, dtype, std=std).requires_grad_(any(rg))
        heads = qkv.view(B, L, H + 2 * Hkv, d).transpose(1, 2)
        q, k, v = heads[:, :H], heads[:, H:H + Hkv], heads[:, H + Hkv:]
    else:
        sl = dict(batch_step=2, extra_heads=1, extra_rows=3, extra_cols=8, col_offset=8, misaligned="offset",
                  broadcast="heads")
        q, k, v = (_qkv_tensor((B, n, L, d), layout, sl, g, device, dtype, std, r)
                   for n, r in zip((H, Hkv, Hkv), rg))
    dout = _dout_tensor((B, H, L, d), dout_layout, g, device, dtype)
    left, right, block = band
    desc = dict(B=B, H=H, Hkv=Hkv, L=L, d=d, dtype=str(dtype).replace("torch.", ""), band=band, layout=layout,
                dout=dout_layout, scale=scale, call=call)
    return LocalProblem(q, k, v, dout, left, right, block, scale, call, dict(call_kwargs or {}), qkv, desc)


def _cluster_local_values_(q: Tensor, k: Tensor, v: Tensor, g, std: float, spread_qk: float,
                           spread_v: float) -> None:
    """In place: q, k <- std * mu + spread_qk * (q, k), v <- std * nu + spread_v * v, with one random
    direction mu per kv head shared by its query heads and its keys, and one mean nu per kv head
    for v: values close to their mean, where the backward's D = sum_j P_ij dP_ij must be exact.
    Broadcast (zero-stride) tensors are changed through the tensor they expand."""
    B, H, L, d = q.shape
    Hkv = k.shape[1]
    if q.numel() == 0 or Hkv == 0:
        return
    mu = torch.randn((1, Hkv, 1, d), generator=g) * std
    nu = torch.randn((1, Hkv, 1, d), generator=g) * std
    mu_q = mu.repeat_interleave(H // Hkv, dim=1)
    with torch.no_grad():
        for t, mean, spread in ((q, mu_q, spread_qk), (k, mu, spread_qk), (v, nu, spread_v)):
            if 0 in t.stride():
                base = t._base   # the (bb, nn, L, d) tensor a broadcast layout expands
                t, mean = base, mean[:, : base.shape[1]]
            mean = mean.to(device=t.device)
            t.copy_((t.float() * spread + mean).to(t.dtype))


def build_local_problem(spec: Dict[str, object]) -> LocalProblem:
    """The tensors of a spec from :func:`local_problem_spec` (on ``spec["device"]``)."""
    device = torch.device(spec["device"])
    B, H, Hkv, L, d = spec["B"], spec["H"], spec["Hkv"], spec["L"], spec["d"]
    dtype = _DTYPE_BY_NAME[spec["dtype"]]
    g = _generator(int(spec["seed"]) * 7919 + 23)
    std = spec["qkv_std"]
    rg = spec["qkv_requires_grad"]
    qkv = None
    if spec["layout"] == "packed":
        qkv = _randn((B, L, (H + 2 * Hkv) * d), g, device, dtype, std=std).requires_grad_(rg[0])
        heads = qkv.view(B, L, H + 2 * Hkv, d).transpose(1, 2)
        q, k, v = heads[:, :H], heads[:, H:H + Hkv], heads[:, H + Hkv:]
    else:
        q, k, v = (_qkv_tensor((B, n, L, d), kind, sl, g, device, dtype, std, r)
                   for n, kind, sl, r in zip((H, Hkv, Hkv), spec["tensor_layouts"], spec["slices"], rg))
    cl = spec.get("clustered")
    if cl is not None:
        _cluster_local_values_(q, k, v, _generator(int(spec["seed"]) * 7919 + 31), std, cl["spread_qk"],
                               cl["spread_v"])
    dout = _dout_tensor((B, H, L, d), spec["dout_layout"], g, device, dtype)
    desc = {k: spec[k] for k in ("seed", "B", "H", "Hkv", "L", "d", "dtype", "kind", "left", "right", "block",
                                 "call", "call_kwargs", "scale", "layout")}
    desc.update(tensor_layouts=spec["tensor_layouts"] if spec["layout"] == "mixed" else None,
                qkv_std=spec["qkv_std"], qkv_grad=rg, dout=spec["dout_layout"],
                clustered=None if cl is None else f"qk{cl['spread_qk']}/v{cl['spread_v']}")
    return LocalProblem(q, k, v, dout, spec["left"], spec["right"], spec["block"], spec["scale"], spec["call"],
                        dict(spec["call_kwargs"]), qkv, desc)


def local_random_problem(
    seed: int,
    device: str | torch.device = "cpu",
    *,
    max_elems: Optional[int] = None,
    dtypes: Optional[Sequence[str]] = None,
) -> LocalProblem:
    """Random local problem ``seed`` on ``device`` (``problem.desc`` describes it)."""
    return build_local_problem(local_problem_spec(seed, device, max_elems=max_elems, dtypes=dtypes))


def local_random_problem_repro(
    seed: int,
    device: str | torch.device = "cpu",
    *,
    max_elems: Optional[int] = None,
    dtypes: Optional[Sequence[str]] = None,
) -> str:
    """The one-line shell command that re-runs (and re-checks) random local problem ``seed``."""
    return repro_command("flash_window_attn.testing_local", seed, device, max_elems, dtypes,
                         LOCAL_RANDOM_MAX_ELEMS, LOCAL_RANDOM_DTYPES)


# =================================================================================================
# References and the rule
# =================================================================================================


def local_reference_results(
    q: Tensor, k: Tensor, v: Tensor, dout: Optional[Tensor], band: Tuple[int, int, int], scale: float,
    dtype: torch.dtype, *, device: Optional[torch.device | str] = None,
) -> Dict[str, Tensor]:
    """out, lse and (with ``dout``) dq, dk, dv of the dense reference with the explicit mask
    (local_reference.local_attention_reference), run in ``dtype`` (float64: the oracle) on
    ``device`` (default: the inputs')."""
    device = q.device if device is None else torch.device(device)
    qq, kk, vv = (t.detach().to(device=device, dtype=dtype).requires_grad_(dout is not None) for t in (q, k, v))
    out, lse = local_attention_reference(qq, kk, vv, *band, scale, return_lse=True)
    res = {"out": out.detach(), "lse": lse.detach()}
    if dout is not None:
        grads = torch.autograd.grad(out, (qq, kk, vv), dout.detach().to(device=device, dtype=dtype))
        res.update(zip(("dq", "dk", "dv"), grads))
    return res


def _band_mask(rows: Tensor, cols: Tensor, left: int, right: int, block: int) -> Tensor:
    diff = (rows // block)[:, None] - (cols // block)[None, :]
    allowed = torch.ones((rows.numel(), cols.numel()), dtype=torch.bool, device=rows.device)
    if left >= 0:
        allowed &= diff <= left
    if right >= 0:
        allowed &= -diff <= right
    return allowed


def _key_range(i0: int, i1: int, L: int, left: int, right: int, block: int) -> Tuple[int, int]:
    """Keys [lo, hi) allowed for some query in [i0, i1)."""
    lo = 0 if left < 0 else max(0, (i0 // block - left) * block)
    hi = L if right < 0 else min(L, ((i1 - 1) // block + right + 1) * block)
    return lo, hi


def banded_reference_results(
    q: Tensor, k: Tensor, v: Tensor, dout: Optional[Tensor], band: Tuple[int, int, int], scale: float,
    dtype: torch.dtype, *, rows_per_chunk: int = 1024, max_chunk_elems: int = 1 << 25,
) -> Dict[str, Tensor]:
    """:func:`local_reference_results` for long sequences and many heads: the same formula (scaled
    logits in ``dtype``, softmax in fp32 / fp64, masked with the explicit rule, autograd for the
    gradients) on chunks of query rows and batches, each against only the keys its band reaches.
    dq is exact per chunk; dk / dv are the chunks' contributions summed in float64. Results on
    q's device, out / grads in ``dtype`` (accumulated dk / dv rounded to it), lse in fp32 / fp64."""
    left, right, block = band
    B, H, L, d = q.shape
    Hkv = k.shape[1]
    G = H // Hkv
    dev = q.device
    res = {"out": torch.empty((B, H, L, d), device=dev, dtype=dtype),
           "lse": torch.empty((B, H, L), device=dev, dtype=torch.promote_types(dtype, torch.float32))}
    if dout is not None:
        res["dq"] = torch.empty((B, H, L, d), device=dev, dtype=dtype)
        dk = torch.zeros((B, Hkv, L, d), device=dev, dtype=torch.float64)
        dv = torch.zeros((B, Hkv, L, d), device=dev, dtype=torch.float64)
    for i0 in range(0, L, rows_per_chunk):
        i1 = min(L, i0 + rows_per_chunk)
        j0, j1 = _key_range(i0, i1, L, left, right, block)
        allowed = _band_mask(torch.arange(i0, i1, device=dev), torch.arange(j0, j1, device=dev), left, right, block)
        b_step = max(1, max_chunk_elems // max(1, H * (i1 - i0) * (j1 - j0)))
        for b0 in range(0, B, b_step):
            b1 = min(B, b0 + b_step)
            qq = q[b0:b1, :, i0:i1].detach().to(dtype).requires_grad_(dout is not None)
            kk = k[b0:b1, :, j0:j1].detach().to(dtype).requires_grad_(dout is not None)
            vv = v[b0:b1, :, j0:j1].detach().to(dtype).requires_grad_(dout is not None)
            ke, ve = (kk.repeat_interleave(G, dim=1), vv.repeat_interleave(G, dim=1)) if G > 1 else (kk, vv)
            logits = ((qq * scale) @ ke.transpose(-2, -1))
            logits = logits.to(torch.promote_types(logits.dtype, torch.float32)).masked_fill(~allowed, float("-inf"))
            p = torch.softmax(logits, dim=-1)
            out = p.to(ve.dtype) @ ve
            res["out"][b0:b1, :, i0:i1] = out.detach()
            res["lse"][b0:b1, :, i0:i1] = torch.logsumexp(logits.detach(), dim=-1)
            if dout is not None:
                gq, gk, gv = torch.autograd.grad(out, (qq, kk, vv), dout[b0:b1, :, i0:i1].to(dtype))
                res["dq"][b0:b1, :, i0:i1] = gq
                dk[b0:b1, :, j0:j1] += gk.double()
                dv[b0:b1, :, j0:j1] += gv.double()
            del qq, kk, vv, ke, ve, logits, p, out
    if dout is not None:
        res["dk"], res["dv"] = dk.to(dtype), dv.to(dtype)
    return res


def local_grad_term_magnitudes(
    q: Tensor, k: Tensor, v: Tensor, dout: Tensor, band: Tuple[int, int, int], scale: float,
) -> Dict[str, Tensor]:
    """Float64 magnitudes of the terms dq and dk sum (error scales for ill-conditioned problems).

    With P the masked softmax, dP = dout vᵀ and T = P o (|dP| + |rowsum(P o dP)|), a bound on the
    terms of dS = P o (dP - rowsum(P o dP)): dq ~ |scale| T |k|, dk ~ |scale| Σ_group Tᵀ |q|. Where
    the softmax is one-hot (logits of 1e8) the exact dq / dk vanish while their terms do not; pass
    the result as ``magnitudes`` to :func:`compare_local` to measure errors against the terms."""
    left, right, block = band
    f = lambda t: t.detach().to(torch.float64)  # noqa: E731
    q, k, v, dout = map(f, (q, k, v, dout))
    B, H, L, d = q.shape
    G = H // k.shape[1]
    ke, ve = (k.repeat_interleave(G, dim=1), v.repeat_interleave(G, dim=1)) if G > 1 else (k, v)
    from .local_reference import local_attention_mask

    S = (scale * q @ ke.transpose(-2, -1)).masked_fill(~local_attention_mask(L, left, right, block, q.device),
                                                     float("-inf"))
    P = torch.softmax(S, dim=-1)
    dP = dout @ ve.transpose(-2, -1)
    T = P * (dP.abs() + (P * dP).sum(-1, keepdim=True).abs())
    dq = abs(scale) * (T @ ke.abs())
    dk = abs(scale) * (T.transpose(-2, -1) @ q.abs())
    if G > 1:
        dk = dk.reshape(B, H // G, G, L, d).sum(2)
    return {"dq": dq, "dk": dk}


def compare_local(
    ours: Dict[str, Optional[Tensor]],
    ref64: Dict[str, Tensor],
    reflp: Optional[Dict[str, Tensor]],
    dtype: torch.dtype,
    *,
    atol: Optional[float] = None,
    magnitudes: Optional[Dict[str, Tensor]] = None,
) -> Tuple[bool, List[str]]:
    """The project's rule (testing.compare_to_reference) for out / dq / dk / dv, plus lse when
    ``ours`` has it: lse is fp32 in every dtype, so it is held to the fp32 rule (its baseline: the
    same-precision reference's lse, or for fp64 inputs the float64 lse rounded to fp32), with its
    error measured against max(max|lse|, 1) (a log-sum-exp is an absolute quantity near 0)."""
    if atol is None and dtype == torch.float64:
        atol = 1e-9
    main = {n: t for n, t in ours.items() if n != "lse"}
    ok, lines = compare_to_reference(main, ref64, reflp, dtype, atol=atol, magnitudes=magnitudes)
    if ours.get("lse") is not None:
        x, r = ours["lse"], ref64["lse"]
        floor = 1.0
        err = normalized_error(x, r, floor)
        if dtype == torch.float64 or reflp is None:
            base = normalized_error(r.to(torch.float32), r, floor)
        else:
            base = normalized_error(reflp["lse"], r, floor)
            if not math.isfinite(base):
                base = 0.0
        lse_atol = ATOL[torch.float32] if dtype == torch.float64 else ATOL[dtype]
        bound = 2.0 * base + lse_atol
        good = err <= bound
        ok &= good
        what = "fp32-rounding" if dtype == torch.float64 or reflp is None else \
            f"pytorch-{str(dtype).replace('torch.', '')}"
        lines.append(f"{'lse':>12}: err {err:.3e}  {what} err {base:.3e}  bound {bound:.3e}  "
                     f"{'ok' if good else 'FAIL'}")
    return ok, lines


def run_local(problem: LocalProblem, fn: Optional[Callable] = None, *, repeat_backward: bool = True):
    """Forward (``fn(problem)`` -> out or (out, lse); default ``problem.forward()``) and backward with
    ``problem.dout`` for the inputs that require grad, twice when ``repeat_backward``. Returns
    (ours: name -> tensor, second backward's grads or None)."""
    res = (fn or LocalProblem.forward)(problem)
    out, lse = res if isinstance(res, tuple) else (res, None)
    ours: Dict[str, Optional[Tensor]] = {"out": out.detach()}
    if lse is not None:
        ours["lse"] = lse.detach()
    inputs = problem.grad_inputs()
    again = None
    if inputs and problem.dout is not None and out.requires_grad:
        names, tensors = list(inputs), list(inputs.values())
        grads = torch.autograd.grad(out, tensors, problem.dout, retain_graph=repeat_backward)
        ours.update(zip(names, grads))
        if repeat_backward:
            again = dict(zip(names, torch.autograd.grad(out, tensors, problem.dout)))
    return ours, again


def check_local_problem(problem: LocalProblem, fn: Optional[Callable] = None,
                        *, ref_device: Optional[torch.device | str] = None) -> Tuple[bool, List[str]]:
    """Run ``fn`` (default: the problem's entry point) forward and backward (twice) on ``problem``
    and check out, lse (op calls) and every gradient of an input that requires grad against the
    float64 reference with the rule, the output contract (shapes, dtypes, contiguous outputs) and
    the bitwise determinism of the backward. ``ref_device``: where the references run (default:
    the problem's device). Returns (ok, report lines)."""
    dtype = problem.q.dtype
    ours, again = run_local(problem, fn)
    need_grads = any(n in ours for n in ("dq", "dk", "dv"))
    dout = problem.dout if need_grads else None
    ref64 = local_reference_results(problem.q, problem.k, problem.v, dout, problem.band, problem.op_scale,
                                    torch.float64, device=ref_device)
    reflp = ref64 if dtype == torch.float64 else local_reference_results(
        problem.q, problem.k, problem.v, dout, problem.band, problem.op_scale, dtype, device=ref_device)
    if ref_device is not None:
        ours = {n: t.to(ref_device) for n, t in ours.items()}
    # dq / dk sum dS = P o (dP - D) terms that cancel exactly where a row has one allowed key (P = 1,
    # dP = D): PyTorch's formula then gives exactly 0, a fused kernel (D = dout . out, dP from an
    # MMA in another summation order) an fp32 residue of the terms' size. As in the window suite,
    # such vanishing sums are measured against (a tenth of) the magnitude of their terms.
    mags = None
    if need_grads and any(n in ours for n in ("dq", "dk")):
        mags = local_grad_term_magnitudes(problem.q, problem.k, problem.v, dout, problem.band, problem.op_scale)
        if ref_device is not None:
            mags = {n: t.to(ref_device) for n, t in mags.items()}
    ok, lines = compare_local(ours, ref64, reflp, dtype, magnitudes=mags)

    B, H, L, d = problem.q.shape
    out = ours["out"]
    if out.shape != (B, H, L, d) or out.dtype != dtype or not out.is_contiguous():
        ok = False
        lines.append(f"out: shape {tuple(out.shape)} dtype {out.dtype} contiguous {out.is_contiguous()}, "
                     f"expected {(B, H, L, d)} {dtype} contiguous")
    if "lse" in ours:
        lse = ours["lse"]
        if lse.shape != (B, H, L) or lse.dtype != torch.float32 or not lse.is_contiguous():
            ok = False
            lines.append(f"lse: shape {tuple(lse.shape)} dtype {lse.dtype}, expected {(B, H, L)} float32 contiguous")
    for g, t in problem.grad_inputs().items():
        x = ours.get(g)
        if x is None or x.shape != t.shape or x.dtype != t.dtype:
            ok = False
            lines.append(f"{g}: got {None if x is None else (tuple(x.shape), x.dtype)}, "
                         f"expected {(tuple(t.shape), t.dtype)}")
    if again is not None:
        for g, x in again.items():
            y = ours[g].to(x.device)
            same_nan = torch.equal(torch.isnan(x), torch.isnan(y))
            if not (same_nan and torch.equal(torch.nan_to_num(x), torch.nan_to_num(y))):
                ok = False
                diff = (x.double() - y.double()).abs().nan_to_num(math.inf).max().item() if x.numel() else 0.0
                lines.append(f"{g}: backward not bitwise deterministic (two runs differ by up to {diff:.3e})")
        if ok:
            lines.append(f"{'backward':>12}: bitwise deterministic (2 runs)")
    return ok, lines


def check_local_random_problem(
    seed: int,
    device: str | torch.device = "cpu",
    *,
    max_elems: Optional[int] = None,
    dtypes: Optional[Sequence[str]] = None,
    fn: Optional[Callable] = None,
) -> Tuple[bool, str]:
    """Build random local problem ``seed`` and :func:`check_local_problem` it. Returns (ok, report):
    the report starts with the one-line reproducer, then the description and one line per compared
    tensor. An exception from the op is a failure (its traceback ends the report), not a crash."""
    return random_check_report(
        f"random local problem seed {seed} on {device}",
        local_random_problem_repro(seed, device, max_elems=max_elems, dtypes=dtypes),
        lambda: local_random_problem(seed, device, max_elems=max_elems, dtypes=dtypes),
        lambda problem: check_local_problem(problem, fn),
    )


def _main(argv: Optional[Sequence[str]] = None) -> int:
    return random_seeds_main(
        argv, "python -m flash_window_attn.testing_local",
        "Re-run random local-attention problems (flash_window_attn.testing_local) against the float64 "
        "dense reference.", check_local_random_problem, "local problems")


if __name__ == "__main__":
    raise SystemExit(_main())
