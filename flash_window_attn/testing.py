"""Helpers shared by the tests, the benchmark and the demo: random problems, error metrics with the
FlashAttention-style tolerance rule, allocator poisoning, and an all-pairs case generator.

Tolerance rule. For every output and gradient x, with x64 the float64 reference and xlp the same
reference formula run in the op's precision (PyTorch's own error in that precision):

    err(x) = max|x - x64| / max(max|x64|, floor)
    err(ours) <= 2 * err(xlp) + atol[dtype]

``floor`` keeps the normalisation meaningful for gradients that vanish mathematically (N = 1, where
softmax is constant, or a head above the logit-scale clamp): there, errors are measured against the
scale of a related non-degenerate quantity instead of against ~0; and for dlogit_scale, a sum whose
terms cancel to ~1e-3 of their magnitude, it is the terms' magnitude (a sum cannot be more accurate
than its terms).
"""

from __future__ import annotations

import itertools
import math
import random
from dataclasses import dataclass, field
from typing import Dict, Iterable, List, Optional, Sequence, Tuple

import torch
from torch import Tensor

from .reference import LN100_F32, swin_shift_mask

__all__ = [
    "ATOL",
    "Problem",
    "make_problem",
    "window_grid",
    "normalized_error",
    "compare_to_reference",
    "reduction_magnitudes",
    "poison_cuda_allocator",
    "all_pairs",
]

# Added to 2x PyTorch's own error (both measured relative to the reference's max-abs).
ATOL: Dict[torch.dtype, float] = {
    torch.float64: 1e-10,
    torch.float32: 1e-5,
    torch.float16: 1e-3,
    torch.bfloat16: 5e-3,
}

GRAD_NAMES = ("dq", "dk", "dv", "dbias", "dlogit_scale")
INPUT_OF_GRAD = {"dq": "q", "dk": "k", "dv": "v", "dbias": "bias", "dlogit_scale": "logit_scale"}


@dataclass
class Problem:
    """One random window-attention problem. ``kwargs()`` feeds window_attention and the reference."""

    q: Tensor
    k: Tensor
    v: Tensor
    bias: Optional[Tensor] = None
    mask: Optional[Tensor] = None
    logit_scale: Optional[Tensor] = None
    scale: Optional[float] = None
    dout: Optional[Tensor] = None
    qkv: Optional[Tensor] = None  # the packed leaf when q, k, v are views of it
    desc: Dict[str, object] = field(default_factory=dict)

    def args(self) -> Tuple:
        return (self.q, self.k, self.v, self.bias, self.mask)

    def kwargs(self) -> Dict[str, object]:
        return {"scale": self.scale, "logit_scale": self.logit_scale}

    def grad_inputs(self) -> Dict[str, Tensor]:
        """Tensors whose gradients are compared, keyed by gradient name (q/k/v views included)."""
        out = {}
        for g, name in INPUT_OF_GRAD.items():
            t = getattr(self, name)
            if t is not None and t.requires_grad:
                out[g] = t
        return out


def window_grid(N: int) -> Tuple[int, int]:
    """A (Wh, Ww) window with Wh * Ww == N and Wh <= Ww as square as possible (192 -> 12 x 16)."""
    wh = int(math.isqrt(N))
    while N % wh:
        wh -= 1
    return wh, N // wh


def _generator(seed: int) -> torch.Generator:
    g = torch.Generator(device="cpu")
    g.manual_seed(seed)
    return g


def _randn(shape, g, device, dtype, std: float = 1.0, mean: float = 0.0) -> Tensor:
    # Drawn on the CPU with a seeded generator so that CPU and CUDA runs see the same numbers;
    # very large tensors are drawn on the device (seeded from g) to keep set-up fast.
    if math.prod(shape) > (1 << 25) and torch.device(device).type != "cpu":
        gd = torch.Generator(device=device)
        gd.manual_seed(int(torch.randint(0, 2**62, (1,), generator=g)))
        t = torch.randn(shape, generator=gd, device=device, dtype=torch.float32)
    else:
        t = torch.randn(shape, generator=g, dtype=torch.float32)
    return (t * std + mean).to(device=device, dtype=dtype)


def make_problem(
    B_: int,
    H: int,
    N: int,
    d: int,
    *,
    dtype: torch.dtype = torch.float32,
    device: str | torch.device = "cpu",
    version: str = "v2",
    bias: Optional[str] = "hnn",
    bias_dtype: Optional[torch.dtype] = None,
    mask: Optional[str] = None,
    nW: Optional[int] = None,
    mask_dtype: torch.dtype = torch.float32,
    layout: str = "contiguous",
    logit_scale: Optional[Sequence[float] | Tensor] = None,
    logit_scale_shape: str = "h11",
    scale: Optional[float] = None,
    bias_std: float = 1.0,
    requires_grad: bool = True,
    seed: int = 0,
) -> Problem:
    """A random problem (no zeros: normal q, k, v, bias, dout).

    version: "v1" (``scale``) or "v2" (cosine, ``logit_scale``; default per-head values around
    ln 10, below the clamp). bias: None, "hnn" (H, N, N) or "1hnn" (1, H, N, N), in ``bias_dtype``
    (default: fp32, the AMP case). mask: None; "shift" (Swin's 0 / -100 shifted-window mask);
    "random" (normal values, some -100, a few -inf entries but no all -inf row); "dead" (like
    "random" plus some rows that are entirely -inf). nW defaults to the largest of 4, 2, 1 that
    divides B_. layout: "contiguous" or "packed" (views of one (B_, N, 3*H*d) projection output).
    """
    g = _generator(seed)
    if layout == "packed":
        qkv = _randn((B_, N, 3 * H * d), g, device, dtype).requires_grad_(requires_grad)
        # views, no copy: gradients are taken w.r.t. these views (autograd.grad accepts non-leaves)
        q, k, v = qkv.reshape(B_, N, 3, H, d).permute(2, 0, 3, 1, 4)
    elif layout == "contiguous":
        qkv = None
        q, k, v = (_randn((B_, H, N, d), g, device, dtype) for _ in range(3))
        if requires_grad:
            for t in (q, k, v):
                t.requires_grad_(True)
    else:
        raise ValueError(f"make_problem: unknown layout {layout!r}")

    bias_t = None
    if bias is not None:
        shape = (H, N, N) if bias == "hnn" else (1, H, N, N)
        bias_t = _randn(shape, g, device, bias_dtype or torch.float32, std=bias_std)
        bias_t.requires_grad_(requires_grad)

    mask_t = None
    if nW is None:
        nW = next(n for n in (4, 2, 1) if B_ % n == 0) if B_ > 0 else 1
    if mask == "shift":
        wh, ww = window_grid(N)
        rows = 2 if nW % 2 == 0 else 1
        mask_t = swin_shift_mask((rows * wh, (nW // rows) * ww), (wh, ww), (wh // 2, ww // 2),
                                 dtype=mask_dtype, device=device)
    elif mask in ("random", "dead"):
        m = torch.randn((nW, N, N), generator=g)
        m = torch.where(torch.rand((nW, N, N), generator=g) < 0.2, torch.full_like(m, -100.0), m)
        if N > 1:
            neg_inf = torch.rand((nW, N, N), generator=g) < 0.1
            neg_inf[..., 0] = False  # keep every row alive in "random"
            m = m.masked_fill(neg_inf, float("-inf"))
        if mask == "dead":
            dead_rows = torch.rand((nW, N), generator=g) < 0.25
            dead_rows[0, 0] = True
            if N > 1:
                dead_rows[-1, -1] = False
            m = m.masked_fill(dead_rows[..., None], float("-inf"))
        mask_t = m.to(device=device, dtype=mask_dtype)
    elif mask is not None:
        raise ValueError(f"make_problem: unknown mask kind {mask!r}")

    ls_t = None
    if version == "v2":
        if logit_scale is None:
            ls = torch.log(torch.tensor(10.0)) + 0.5 * torch.randn((H,), generator=g)
            ls = ls.clamp(max=LN100_F32 - 0.1)
        elif isinstance(logit_scale, Tensor):
            ls = logit_scale.detach().float().reshape(H).cpu()
        else:
            ls = torch.tensor(list(logit_scale), dtype=torch.float32).reshape(H)
        shape = {"h": (H,), "h11": (H, 1, 1), "1h11": (1, H, 1, 1)}[logit_scale_shape]
        ls_t = ls.reshape(shape).to(device=device, dtype=torch.float32).requires_grad_(requires_grad)
        if scale is not None:
            raise ValueError("make_problem: scale is for V1 only")
    elif version != "v1":
        raise ValueError(f"make_problem: unknown version {version!r}")

    dout = _randn((B_, H, N, d), g, device, dtype)
    desc = dict(B_=B_, H=H, N=N, d=d, dtype=str(dtype).replace("torch.", ""), version=version,
                bias=bias, mask=mask, nW=nW if mask else None, layout=layout)
    return Problem(q, k, v, bias_t, mask_t, ls_t, scale, dout, qkv, desc)


def normalized_error(x: Tensor, ref: Tensor, floor: float = 0.0) -> float:
    """max|x - ref| / max(max|ref|, floor), computed in float64; inf if x has NaN/inf where ref doesn't."""
    x = x.detach().to(torch.float64)
    ref = ref.detach().to(device=x.device, dtype=torch.float64)
    if x.shape != ref.shape:
        raise AssertionError(f"shape {tuple(x.shape)} != reference shape {tuple(ref.shape)}")
    if x.numel() == 0:
        return 0.0
    if not torch.isfinite(x).all():
        return math.inf
    scale = max(ref.abs().max().item(), floor)
    if scale == 0.0:
        return (x - ref).abs().max().item()
    return (x - ref).abs().max().item() / scale


def _floors(ref64: Dict[str, Optional[Tensor]], magnitudes: Optional[Dict[str, Tensor]]) -> Dict[str, float]:
    def mx(t):
        return t.abs().max().item() if t is not None and t.numel() else 0.0

    qkv = max(mx(ref64.get("dq")), mx(ref64.get("dk")), mx(ref64.get("dv")))
    floors = {
        "out": 1e-3 * mx(ref64.get("out")),
        "dq": 1e-2 * qkv,
        "dk": 1e-2 * qkv,
        "dv": 1e-2 * qkv,
        # dbias / dlogit_scale sum dS over windows; where they vanish, use dv's scale
        "dbias": 1e-2 * qkv,
        "dlogit_scale": 1e-2 * qkv,
    }
    # A sum with heavy cancellation (dlogit_scale = alpha * sum dS o (q^ k^T) is ~1e-3 of the sum of
    # its terms' magnitudes) can only be as accurate as its terms: measure it against them.
    for name, t in (magnitudes or {}).items():
        floors[name] = max(floors.get(name, 0.0), 0.1 * mx(t))
    return floors


def reduction_magnitudes(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    bias: Optional[Tensor] = None,
    mask: Optional[Tensor] = None,
    *,
    scale: Optional[float] = None,
    logit_scale: Optional[Tensor] = None,
    dout: Tensor,
) -> Dict[str, Tensor]:
    """Float64 magnitudes of the terms the window-reduced gradients sum (error scales for them).

    ``dbias``: sum over windows of |dS| (H, N, N); ``dlogit_scale``: alpha_h * sum |dS o q^ k^T| (H,),
    with dS = P o (dP - rowsum(P o dP)) the gradient of the logits.
    """
    from .reference import reference_logits

    f = lambda t: None if t is None else t.detach().to(torch.float64)  # noqa: E731
    q, k, v, bias, mask, ls, dout = map(f, (q, k, v, bias, mask, logit_scale, dout))
    S = reference_logits(q, k, bias, mask, scale=scale, logit_scale=ls)
    dead = torch.isneginf(S).all(-1, keepdim=True)
    P = S.masked_fill(dead, 0.0).softmax(-1).masked_fill(dead, 0.0)
    dP = dout @ v.transpose(-2, -1)
    dS = P * (dP - (P * dP).sum(-1, keepdim=True))
    out: Dict[str, Tensor] = {}
    if bias is not None:
        out["dbias"] = dS.abs().sum(0)
    if ls is not None:
        H = q.shape[1]
        C = torch.nn.functional.normalize(q, dim=-1) @ torch.nn.functional.normalize(k, dim=-1).transpose(-2, -1)
        alpha = torch.clamp(ls.reshape(H), max=LN100_F32).exp()
        out["dlogit_scale"] = (dS * C).abs().sum((0, 2, 3)) * alpha
    return out


def compare_to_reference(
    ours: Dict[str, Optional[Tensor]],
    ref64: Dict[str, Optional[Tensor]],
    ref_lowp: Optional[Dict[str, Optional[Tensor]]],
    dtype: torch.dtype,
    *,
    atol: Optional[float] = None,
    factor: float = 2.0,
    magnitudes: Optional[Dict[str, Tensor]] = None,
) -> Tuple[bool, List[str]]:
    """Apply the tolerance rule to every key present in ``ours``; returns (ok, report lines).

    ``ref_lowp=None`` means "no low-precision baseline": then err(ours) <= atol.
    ``magnitudes`` (from :func:`reduction_magnitudes`) sets the error scale of dbias / dlogit_scale
    to (a tenth of) the magnitude of the terms they sum, where that exceeds their value.
    """
    atol = ATOL[dtype] if atol is None else atol
    floors = _floors(ref64, magnitudes)
    ok = True
    lines = []
    for name, x in ours.items():
        r = ref64.get(name)
        if x is None and r is None:
            continue
        if x is None or r is None:
            ok = False
            lines.append(f"{name}: ours is {'None' if x is None else 'set'}, reference is "
                         f"{'None' if r is None else 'set'}")
            continue
        err = normalized_error(x, r, floors.get(name, 0.0))
        base = 0.0
        if ref_lowp is not None and ref_lowp.get(name) is not None:
            base = normalized_error(ref_lowp[name], r, floors.get(name, 0.0))
            if not math.isfinite(base):
                base = 0.0
        bound = factor * base + atol
        good = err <= bound
        ok &= good
        lines.append(f"{name:>12}: err {err:.3e}  pytorch-{str(dtype).replace('torch.', '')} err "
                     f"{base:.3e}  bound {bound:.3e}  {'ok' if good else 'FAIL'}")
    return ok, lines


def poison_cuda_allocator(nbytes: int, device: Optional[torch.device | str] = None) -> None:
    """Fill memory the caching allocator will hand out next with NaN, then free it.

    Outputs an op forgets to write then read NaN instead of stale plausible values. Covers the
    large pool (one block of ``nbytes``, split for later allocations) and the small pool
    (allocations < 1 MiB come from 2 MiB segments).
    """
    device = torch.device(device or "cuda")
    big = torch.empty(max(nbytes, 1 << 20) // 4, dtype=torch.float32, device=device).fill_(math.nan)
    small = [torch.empty((512 << 10) // 4, dtype=torch.float32, device=device).fill_(math.nan)
             for _ in range(16)]
    del big, small


def all_pairs(factors: Dict[str, Sequence], seed: int = 0) -> List[Dict[str, object]]:
    """A small list of cases covering every pair of values of every two factors (greedy AETG).

    Deterministic for a given ``factors`` (insertion order) and ``seed``.
    """
    names = list(factors)
    values = [list(factors[n]) for n in names]
    uncovered = set()
    for (i, a), (j, b) in itertools.combinations(enumerate(values), 2):
        for x in range(len(a)):
            for y in range(len(b)):
                uncovered.add((i, x, j, y))
    rng = random.Random(seed)
    cases: List[Tuple[int, ...]] = []
    while uncovered:
        best, best_gain = None, -1
        for _ in range(30):
            # start from an uncovered pair, fill the other factors greedily in random order
            i, x, j, y = rng.choice(sorted(uncovered))
            case = [None] * len(names)
            case[i], case[j] = x, y
            order = [f for f in range(len(names)) if case[f] is None]
            rng.shuffle(order)
            for f in order:
                best_v, best_g = 0, -1
                for v_idx in range(len(values[f])):
                    gain = 0
                    for o in range(len(names)):
                        if o != f and case[o] is not None:
                            key = (o, case[o], f, v_idx) if o < f else (f, v_idx, o, case[o])
                            gain += key in uncovered
                    if gain > best_g:
                        best_v, best_g = v_idx, gain
                case[f] = best_v
            gain = sum(
                (a, case[a], b, case[b]) in uncovered
                for a, b in itertools.combinations(range(len(names)), 2)
            )
            if gain > best_gain:
                best, best_gain = case, gain
        cases.append(tuple(best))
        for a, b in itertools.combinations(range(len(names)), 2):
            uncovered.discard((a, best[a], b, best[b]))
    return [{n: values[i][c[i]] for i, n in enumerate(names)} for c in cases]


def run_ours(problem: Problem, fn) -> Dict[str, Optional[Tensor]]:
    """Run ``fn(*problem.args(), **problem.kwargs())`` forward and backward with ``problem.dout``."""
    out = fn(*problem.args(), **problem.kwargs())
    result: Dict[str, Optional[Tensor]] = {"out": out.detach()}
    inputs = problem.grad_inputs()
    if inputs and problem.dout is not None:
        grads = torch.autograd.grad(out, list(inputs.values()), problem.dout)
        result.update(zip(inputs.keys(), grads))
    return result


def iter_grad_names(result: Dict[str, Optional[Tensor]]) -> Iterable[str]:
    return (n for n in GRAD_NAMES if result.get(n) is not None)
