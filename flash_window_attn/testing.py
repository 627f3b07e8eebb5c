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
from typing import Callable, Dict, Iterable, List, Optional, Sequence, Tuple

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


def _cluster_values_(q: Tensor, k: Tensor, v: Tensor, g: torch.Generator, std: float,
                     spread_qk: float, spread_v: float) -> None:
    """In place: q, k <- std * mu + spread_qk * (q, k) and v <- std * nu + spread_v * v, with one
    random direction mu per head shared by q and k (so queries and keys are aligned, as in trained
    Swin layers) and one mean nu per head for v (values close to their mean: dP_ij - D_i cancels
    heavily in the backward, which exposes any inaccuracy in D = sum_j P_ij dP_ij)."""
    H, d = q.shape[1], q.shape[3]
    mu = (torch.randn((1, H, 1, d), generator=g) * std).to(device=q.device, dtype=torch.float32)
    nu = (torch.randn((1, H, 1, d), generator=g) * std).to(device=q.device, dtype=torch.float32)
    with torch.no_grad():
        for t, mean, spread in ((q, mu, spread_qk), (k, mu, spread_qk), (v, nu, spread_v)):
            t.copy_((t.float() * spread + mean).to(t.dtype))


def _packed_parts(qkv: Tensor, H: int, d: int) -> Tuple[Tensor, Tensor, Tensor]:
    """q, k, v of a packed (B_, N, 3 * H * d) projection as separate (B_, H, N, d) views (views
    that may be modified in place, unlike the outputs of one permute + unbind)."""
    B_, N = qkv.shape[:2]
    parts = qkv.detach().view(B_, N, 3, H, d)
    return tuple(parts[:, :, i].transpose(1, 2) for i in range(3))


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
    values: str = "normal",
    cluster_spread: Tuple[float, float] = (0.3, 0.2),
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
    values: "normal" (q, k, v standard normal) or "clustered" (q and k around one shared direction
    per head with spread ``cluster_spread[0]``, v around its per-head mean with spread
    ``cluster_spread[1]``: the regime of trained Swin layers where the backward's
    D = sum_j P_ij dP_ij must be exact).
    """
    if values not in ("normal", "clustered"):
        raise ValueError(f"make_problem: unknown values {values!r}")
    g = _generator(seed)
    if layout == "packed":
        qkv = _randn((B_, N, 3 * H * d), g, device, dtype).requires_grad_(requires_grad)
        if values == "clustered":
            _cluster_values_(*_packed_parts(qkv, H, d), _generator(seed + 104729), 1.0, *cluster_spread)
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
    if values == "clustered" and layout != "packed":
        _cluster_values_(q, k, v, _generator(seed + 104729), 1.0, *cluster_spread)

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
    if values != "normal":
        desc["values"] = values
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


# =================================================================================================
# Randomized differential testing
# =================================================================================================
#
# A seeded generator of random window-attention problems over the whole supported range, split in
# two steps so that the draws can be inspected without building tensors:
#
#   spec = random_problem_spec(seed, device)     # a plain dict: every decision, no tensors
#   problem = build_random_problem(spec)         # a Problem (tensors on spec["device"])
#   problem = random_problem(seed, device)       # both steps
#   ok, report = check_random_problem(seed, device)
#
# Decisions come from random.Random(seed) and tensor values from a torch.Generator seeded from it
# and drawn on the CPU, so a (seed, device type, max_elems, dtypes) tuple always gives the same
# problem. ``python -m flash_window_attn.testing --repro SEED --device cuda`` re-runs one.

SWIN_NS: Tuple[int, ...] = (49, 64, 144, 256, 576)
_BOUNDARY_NS: Tuple[int, ...] = (1, 2, 63, 64, 65, 127, 128, 129, 255, 256, 257, 1023, 1024)
RANDOM_DTYPES: Dict[str, Tuple[str, ...]] = {"cpu": ("fp32", "fp64"), "cuda": ("fp16", "bf16", "fp32")}
# Cap on B_ * H * N * max(N, d) (the size of the reference's attention matrix): keeps one problem
# well under a second on a 2-core CPU, and bounds the float64 oracle's memory on a GPU.
RANDOM_MAX_ELEMS: Dict[str, int] = {"cpu": 1 << 20, "cuda": 1 << 24}
RANDOM_MAX_WINDOWS: Dict[str, int] = {"cpu": 64, "cuda": 4096}
RANDOM_LAYOUTS: Tuple[str, ...] = ("contiguous", "packed", "permuted", "sliced", "mixed")
RANDOM_MASKS: Tuple[Optional[str], ...] = (None, "shift", "random", "dead", "neginf")

_DTYPE_BY_NAME: Dict[str, torch.dtype] = {
    "fp16": torch.float16, "bf16": torch.bfloat16, "fp32": torch.float32, "fp64": torch.float64,
}


def _device_type(device) -> str:
    return torch.device(device).type


def random_problem_spec(
    seed: int,
    device: str | torch.device = "cpu",
    *,
    max_elems: Optional[int] = None,
    dtypes: Optional[Sequence[str]] = None,
) -> Dict[str, object]:
    """Every random decision of problem ``seed`` (no tensors). See :func:`build_random_problem`.

    ``max_elems`` caps B_ * H * N * max(N, d) (default per device type: RANDOM_MAX_ELEMS);
    ``dtypes``: names among fp16 / bf16 / fp32 / fp64 (default per device type: RANDOM_DTYPES).
    """
    dev_type = _device_type(device)
    if max_elems is None:
        max_elems = RANDOM_MAX_ELEMS.get(dev_type, RANDOM_MAX_ELEMS["cuda"])
    dtypes = tuple(dtypes) if dtypes else RANDOM_DTYPES.get(dev_type, RANDOM_DTYPES["cuda"])
    max_windows = RANDOM_MAX_WINDOWS.get(dev_type, RANDOM_MAX_WINDOWS["cuda"])
    rng = random.Random(f"flash_window_attn-random-problem-{seed}")

    # head dim: half the draws on a kernel bucket edge, half any multiple of 8 in [16, 128]
    d = rng.choice((16, 32, 64, 128)) if rng.random() < 0.5 else rng.randrange(16, 129, 8)

    def draw_n() -> int:
        r = rng.random()
        if r < 0.35:
            return rng.choice(SWIN_NS)
        if r < 0.6:
            return rng.randrange(1, 64, 2)  # small odd windows
        if r < 0.72:
            return rng.choice(_BOUNDARY_NS)
        return max(1, min(1024, int(round(math.exp(rng.uniform(0.0, math.log(1024.0)))))))

    for _ in range(100):
        N = draw_n()
        if N * max(N, d) <= max_elems:
            break
    else:
        N = max(1, min(1024, int(math.isqrt(max_elems))))

    H = rng.choice((1, 2, 3, 4, 6, 8, 12, 16)) if rng.random() < 0.5 else rng.randint(1, 16)
    nW = rng.choice((1, 1, 2, 3, 4, 8, 16, 64)) if rng.random() < 0.8 else rng.randint(1, 12)
    if rng.random() < 0.01:
        B_ = 0  # empty batch
    else:
        target = int(round(math.exp(rng.uniform(0.0, math.log(max_windows)))))
        B_ = max(nW, target // nW * nW)
    # shrink to the cap: windows first, then heads, then the mask's windows
    cost = lambda b, h: b * h * N * max(N, d)  # noqa: E731
    while B_ > nW and cost(B_, H) > max_elems:
        B_ = max(nW, (B_ // 2) // nW * nW)
    while H > 1 and cost(B_, H) > max_elems:
        H = max(1, H // 2)
    while nW > 1 and cost(B_, H) > max_elems:
        nW = max(1, nW // 2)
        B_ = nW if B_ > 0 else 0

    dtype = rng.choice(dtypes)

    r = rng.random()
    layout = "packed" if r < 0.3 else "contiguous" if r < 0.55 else "permuted" if r < 0.7 else \
        "sliced" if r < 0.87 else "mixed"
    if layout == "mixed":
        tensor_layouts = [rng.choice(("contiguous", "permuted", "sliced")) for _ in range(3)]
    else:
        tensor_layouts = [layout] * 3
    slices = [dict(batch_step=rng.choice((1, 1, 2)), extra_heads=rng.choice((0, 1)),
                   extra_rows=rng.choice((0, 3)), extra_cols=rng.choice((0, 8, 3)),
                   offset=rng.choice((0, 1))) for _ in range(3)]

    qkv_std = 1.0 if rng.random() < 0.85 else rng.choice((0.1, 0.3, 3.0))

    bias_spec = None
    if rng.random() < 0.6:
        bias_spec = dict(
            shape=rng.choice(("hnn", "1hnn")),
            dtype=rng.choice(("fp32", dtype)),
            values=rng.choice(("normal", "normal4", "swinv2")),  # N(0,1), N(0,16), 16*sigmoid(N(0,1))
            transposed=rng.random() < 0.2,                       # a non-contiguous (strided) bias
            requires_grad=rng.random() < 0.8,
        )

    mask_spec = None
    if rng.random() < 0.55:
        mask_spec = dict(kind=rng.choices(RANDOM_MASKS[1:], weights=(0.4, 0.25, 0.15, 0.2))[0],
                         dtype=rng.choice(("fp32", dtype)))
    # (without a mask nW only shaped B_, which stays a multiple of it)

    version = rng.choice(("v1", "v2"))
    scale = None
    ls_spec = None
    if version == "v1":
        if rng.random() < 0.5:
            scale = round(rng.uniform(0.02, 1.5), 4)
    else:
        kinds = [rng.choices(("below", "at", "above"), weights=(0.7, 0.15, 0.15))[0] for _ in range(H)]
        values = []
        for kind in kinds:
            if kind == "below":
                values.append(round(math.log(rng.uniform(1.0, 99.0)), 5) if rng.random() < 0.9 else -1.0)
            elif kind == "at":
                values.append(LN100_F32)
            else:
                values.append(round(LN100_F32 + rng.uniform(0.001, 5.0), 5))
        ls_spec = dict(kinds=kinds, values=values, shape=rng.choice(("h", "h11", "1h11")),
                       dtype=rng.choice(("fp32", "fp32", dtype)), requires_grad=rng.random() < 0.8)

    if layout == "packed":
        rg = [rng.random() < 0.9] * 3
    else:
        rg = [rng.random() < 0.8 for _ in range(3)]
    dout_layout = rng.choices(("contiguous", "out", "sliced"), weights=(0.6, 0.25, 0.15))[0]
    # drawn last, so that the draws above are those of the suite before this option existed
    clustered = None
    if rng.random() < 0.2:
        clustered = dict(spread_qk=rng.choice((0.1, 0.3)), spread_v=rng.choice((0.05, 0.2)))

    return dict(
        seed=seed, device=str(device), max_elems=max_elems, dtypes=list(dtypes),
        B_=B_, H=H, N=N, d=d, nW=nW, dtype=dtype, layout=layout, tensor_layouts=tensor_layouts,
        slices=slices, qkv_std=qkv_std, qkv_requires_grad=rg, bias=bias_spec, mask=mask_spec,
        version=version, scale=scale, logit_scale=ls_spec, dout_layout=dout_layout,
        clustered=clustered,
    )


def _strided_leaf(shape, kind: str, sl: Dict[str, int], g, device, dtype, std: float, rg: bool) -> Tensor:
    """A (B_, H, N, d) leaf tensor with the given memory layout and unit last stride."""
    B_, H, N, d = shape
    if kind == "contiguous":
        t = _randn(shape, g, device, dtype, std=std)
    elif kind == "permuted":
        # stored as (B_, N, H, d), seen as (B_, H, N, d) (the op's own output layout)
        t = _randn((B_, N, H, d), g, device, dtype, std=std).transpose(1, 2)
    elif kind == "sliced":
        # a view into a bigger buffer: larger batch / head / row strides, maybe a storage offset
        bs, eh, er, ec, off = (sl["batch_step"], sl["extra_heads"], sl["extra_rows"],
                               sl["extra_cols"], sl["offset"])
        base = _randn((B_ * bs + off, H + eh, N + er, d + ec), g, device, dtype, std=std)
        t = base[off: off + B_ * bs: bs, eh:, :N, :d] if B_ > 0 else base[:0, eh:, :N, :d]
    else:
        raise ValueError(f"unknown tensor layout {kind!r}")
    assert t.shape == (B_, H, N, d) and (t.numel() == 0 or t.stride(-1) == 1), (kind, t.shape, t.stride())
    return t.detach().requires_grad_(rg)


def build_random_problem(spec: Dict[str, object]) -> Problem:
    """The tensors of a spec from :func:`random_problem_spec` (on ``spec["device"]``)."""
    device = torch.device(spec["device"])
    B_, H, N, d = spec["B_"], spec["H"], spec["N"], spec["d"]
    dtype = _DTYPE_BY_NAME[spec["dtype"]]
    g = _generator(int(spec["seed"]) * 7919 + 17)
    std = spec["qkv_std"]
    rg = spec["qkv_requires_grad"]

    qkv = None
    if spec["layout"] == "packed":
        qkv = _randn((B_, N, 3 * H * d), g, device, dtype, std=std).requires_grad_(rg[0])
        q, k, v = _packed_parts(qkv, H, d)
    else:
        q, k, v = (_strided_leaf((B_, H, N, d), kind, sl, g, device, dtype, std, r)
                   for kind, sl, r in zip(spec["tensor_layouts"], spec["slices"], rg))
    cl = spec.get("clustered")
    if cl is not None:
        _cluster_values_(q.detach(), k.detach(), v.detach(), _generator(int(spec["seed"]) * 7919 + 29),
                         std, cl["spread_qk"], cl["spread_v"])
    if qkv is not None:
        q, k, v = qkv.reshape(B_, N, 3, H, d).permute(2, 0, 3, 1, 4)

    bias_t = None
    bs = spec["bias"]
    if bs is not None:
        bdt = _DTYPE_BY_NAME[bs["dtype"]]
        raw = torch.randn((H, N, N), generator=g)
        if bs["values"] == "normal4":
            raw = raw * 4.0
        elif bs["values"] == "swinv2":
            raw = 16.0 * torch.sigmoid(raw)
        if bs["transposed"]:
            # same values, stored column-major: strides (N*N, 1, N)
            bias_t = raw.to(dtype=bdt).transpose(-1, -2).contiguous().to(device).transpose(-1, -2)
        else:
            bias_t = raw.to(device=device, dtype=bdt)
        if bs["shape"] == "1hnn":
            bias_t = bias_t.unsqueeze(0)
        bias_t = bias_t.detach().requires_grad_(bs["requires_grad"])

    mask_t = None
    ms = spec["mask"]
    nW = spec["nW"]
    if ms is not None:
        kind = ms["kind"]
        mdt = _DTYPE_BY_NAME[ms["dtype"]]
        if kind == "shift":
            wh, ww = window_grid(N)
            rows = 2 if nW % 2 == 0 else 1
            m = swin_shift_mask((rows * wh, (nW // rows) * ww), (wh, ww), (wh // 2, ww // 2))
        else:
            m = torch.randn((nW, N, N), generator=g)
            if kind == "neginf":
                # 0 / -inf: a true exclusion mask, every row keeps its diagonal
                excl = torch.rand((nW, N, N), generator=g) < 0.5
                excl &= ~torch.eye(N, dtype=torch.bool)
                m = torch.zeros((nW, N, N)).masked_fill(excl, float("-inf"))
            else:
                m = torch.where(torch.rand((nW, N, N), generator=g) < 0.2, torch.full_like(m, -100.0), m)
                neg_inf = torch.rand((nW, N, N), generator=g) < 0.1
                if N > 1:
                    neg_inf[..., 0] = False  # every row keeps a finite logit ...
                    m = m.masked_fill(neg_inf, float("-inf"))
                if kind == "dead":
                    # ... except some rows that are entirely -inf (out = 0 there, zero gradients)
                    dead = torch.rand((nW, N), generator=g) < 0.25
                    dead[0, 0] = True
                    m = m.masked_fill(dead[..., None], float("-inf"))
        mask_t = m.to(device=device, dtype=mdt)

    ls_t = None
    ls = spec["logit_scale"]
    if ls is not None:
        shape = {"h": (H,), "h11": (H, 1, 1), "1h11": (1, H, 1, 1)}[ls["shape"]]
        ls_t = torch.tensor(ls["values"], dtype=torch.float64).to(_DTYPE_BY_NAME[ls["dtype"]])
        ls_t = ls_t.reshape(shape).to(device).requires_grad_(ls["requires_grad"])

    dl = spec["dout_layout"]
    if dl == "contiguous":
        dout = _randn((B_, H, N, d), g, device, dtype)
    elif dl == "out":
        dout = _randn((B_, N, H, d), g, device, dtype).transpose(1, 2)
    else:
        dout = _randn((B_, H, N, d + 8), g, device, dtype)[..., :d]

    desc = {k: spec[k] for k in ("seed", "B_", "H", "N", "d", "nW", "dtype", "layout", "version")}
    desc.update(
        tensor_layouts=spec["tensor_layouts"] if spec["layout"] == "mixed" else None,
        bias=None if bs is None else f"{bs['shape']}/{bs['dtype']}/{bs['values']}"
                                     f"{'/strided' if bs['transposed'] else ''}"
                                     f"{'/grad' if bs['requires_grad'] else ''}",
        mask=None if ms is None else f"{ms['kind']}/{ms['dtype']}",
        scale=spec["scale"],
        logit_scale=None if ls is None else f"{ls['shape']}/{ls['dtype']}/{','.join(ls['kinds'])}"
                                            f"{'/grad' if ls['requires_grad'] else ''}",
        qkv_grad=spec["qkv_requires_grad"], qkv_std=spec["qkv_std"], dout=dl,
        clustered=None if cl is None else f"qk{cl['spread_qk']}/v{cl['spread_v']}",
    )
    return Problem(q, k, v, bias_t, mask_t, ls_t, spec["scale"], dout, qkv, desc)


def random_problem(
    seed: int,
    device: str | torch.device = "cpu",
    *,
    max_elems: Optional[int] = None,
    dtypes: Optional[Sequence[str]] = None,
) -> Problem:
    """Random problem ``seed`` on ``device``: ``problem.desc`` describes it, the tensors are in it.

    The draws cover 1 <= N <= 1024 (biased toward Swin's 49, 64, 144, 256, 576, small odd N and
    the kernel tile boundaries), d a multiple of 8 in [16, 128], 1 <= H <= 16, B_ a multiple of nW,
    the device's dtypes, contiguous / packed-qkv / permuted / sliced / mixed layouts, biases
    ((H, N, N) or (1, H, N, N), fp32 or q's dtype, sometimes strided), masks (shift 0 / -100,
    random with -inf entries, rows entirely -inf, 0 / -inf), V1 (scale given or default) and V2
    (per-head logit scales below, at and above ln 100), which inputs require grad, and in a fifth
    of the problems q, k, v clustered around per-head means (see :func:`make_problem`).
    """
    return build_random_problem(random_problem_spec(seed, device, max_elems=max_elems, dtypes=dtypes))


def random_problem_repro(
    seed: int,
    device: str | torch.device = "cpu",
    *,
    max_elems: Optional[int] = None,
    dtypes: Optional[Sequence[str]] = None,
) -> str:
    """The one-line shell command that re-runs (and re-checks) random problem ``seed``."""
    return repro_command("flash_window_attn.testing", seed, device, max_elems, dtypes,
                         RANDOM_MAX_ELEMS, RANDOM_DTYPES)


def repro_command(module: str, seed: int, device: str | torch.device, max_elems: Optional[int],
                  dtypes: Optional[Sequence[str]], default_max_elems: Dict[str, int],
                  default_dtypes: Dict[str, Tuple[str, ...]]) -> str:
    """``python -m <module> --repro SEED --device DEV``, plus --max-elems / --dtypes where they
    differ from the device type's defaults (the random suites' shared reproducer line)."""
    dev_type = _device_type(device)
    cmd = f"python -m {module} --repro {seed} --device {device}"
    if max_elems is not None and max_elems != default_max_elems.get(dev_type):
        cmd += f" --max-elems {max_elems}"
    if dtypes and tuple(dtypes) != default_dtypes.get(dev_type):
        cmd += f" --dtypes {','.join(dtypes)}"
    return cmd


def check_problem(problem: Problem, fn=None) -> Tuple[bool, List[str]]:
    """Run ``fn`` (default: window_attention) forward and backward on ``problem`` and check the
    output and every gradient of an input that requires grad against the float64 reference with
    the tolerance rule, plus the output contract (shape, dtype, (B_, N, H, d) layout, gradient
    shapes and dtypes). Returns (ok, report lines)."""
    if fn is None:
        from .ops import window_attention as fn
    from .reference import reference_float64, reference_outputs_and_grads

    dtype = problem.q.dtype
    ours = run_ours(problem, fn)
    ref64 = reference_float64(*problem.args(), **problem.kwargs(), dout=problem.dout)
    reflp = reference_outputs_and_grads(*problem.args(), **problem.kwargs(), dout=problem.dout)
    mags = reduction_magnitudes(*problem.args(), **problem.kwargs(), dout=problem.dout)
    atol = 1e-9 if dtype == torch.float64 else None
    ok, lines = compare_to_reference(ours, ref64, reflp, dtype, atol=atol, magnitudes=mags)

    out = ours["out"]
    B_, H, N, d = problem.q.shape
    if out.shape != (B_, H, N, d) or out.dtype != dtype or out.device != problem.q.device:
        ok = False
        lines.append(f"out: shape {tuple(out.shape)} dtype {out.dtype} device {out.device}, expected "
                     f"{(B_, H, N, d)} {dtype} {problem.q.device}")
    elif out.numel() and out.stride() != (N * H * d, d, H * d, 1):
        ok = False
        lines.append(f"out: strides {out.stride()}, expected the (B_, N, H, d) layout {(N * H * d, d, H * d, 1)}")
    for g, t in problem.grad_inputs().items():
        x = ours.get(g)
        if x is None or x.shape != t.shape or x.dtype != t.dtype or x.device != t.device:
            ok = False
            lines.append(f"{g}: got {None if x is None else (tuple(x.shape), x.dtype, str(x.device))}, "
                         f"expected {(tuple(t.shape), t.dtype, str(t.device))}")
    return ok, lines


def check_random_problem(
    seed: int,
    device: str | torch.device = "cpu",
    *,
    max_elems: Optional[int] = None,
    dtypes: Optional[Sequence[str]] = None,
    fn=None,
) -> Tuple[bool, str]:
    """Build random problem ``seed`` and :func:`check_problem` it. Returns (ok, report): the report
    starts with the one-line reproducer, then the description and one line per compared tensor.
    An exception from the op is a failure (its traceback ends the report), not a crash."""
    return random_check_report(
        f"random problem seed {seed} on {device}",
        random_problem_repro(seed, device, max_elems=max_elems, dtypes=dtypes),
        lambda: random_problem(seed, device, max_elems=max_elems, dtypes=dtypes),
        lambda problem: check_problem(problem, fn),
    )


def random_check_report(what: str, repro: str, build: Callable, check: Callable) -> Tuple[bool, str]:
    """``check(build())`` as (ok, report) for a seeded random problem of any op family: the report
    is "<what>: reproduce with: <repro>  [ok|MISMATCH]", the problem's ``desc`` and one line per
    compared tensor; an exception from the generator or the op is a failure with its traceback."""
    import traceback

    head = [f"{what}: reproduce with: {repro}"]
    try:
        problem = build()
    except Exception:  # a generator bug: report it the same way
        return False, "\n".join(head + ["building the problem failed:", traceback.format_exc()])
    head.append("  " + ", ".join(f"{k}={v}" for k, v in problem.desc.items()))
    try:
        ok, lines = check(problem)
    except Exception:
        return False, "\n".join(head + ["the op raised:", traceback.format_exc()])
    status = "ok" if ok else "MISMATCH"
    return ok, "\n".join([head[0] + f"  [{status}]", head[1]] + ["  " + ln for ln in lines])


def check_random_seeds(check: Callable, seeds: Sequence[int], device: str, what: str,
                       quiet: bool = True) -> Tuple[List[int], Dict[int, str], str]:
    """Run ``check(seed, device) -> (ok, report)`` over ``seeds``, printing every failing report
    (and, unless ``quiet``, every report) as it comes. Returns (failing seeds, their reports, a
    one-line summary "<ok> / <count> <what> ok on <device> (<seconds> s)[; failing seeds: [...]]")."""
    import time

    failed: List[int] = []
    reports: Dict[int, str] = {}
    t0 = time.time()
    for seed in seeds:
        ok, report = check(seed, device)
        if not ok:
            failed.append(seed)
            reports[seed] = report
        if not ok or not quiet:
            print(report, flush=True)
        if str(device).startswith("cuda") and seed % 100 == 0:
            # the references' float64 intermediates vary in size from seed to seed
            torch.cuda.empty_cache()
    n = len(seeds)
    summary = (f"{n - len(failed)} / {n} {what} ok on {device} ({time.time() - t0:.1f} s)"
               + (f"; failing seeds: {failed}" if failed else ""))
    return failed, reports, summary


def random_suite_on_gpu(check: Callable, repro: Callable[[int, str], str], count_env: str, start_env: str,
                        what: str) -> Tuple[str, Optional[str]]:
    """The GPU run of a random suite: ``$count_env`` seeds (default 1000) from ``$start_env``
    (default 0) through ``check`` on cuda. Returns (the summary line, None) or (the summary line,
    the failure message: how many failed, a reproducer command per failing seed, the first 20
    reports)."""
    import os

    count = int(os.environ.get(count_env, "1000"))
    start = int(os.environ.get(start_env, "0"))
    failed, reports, summary = check_random_seeds(check, range(start, start + count), "cuda", what)
    if not failed:
        return summary, None
    lines = [f"{len(failed)} of {count} random {what} failed on cuda "
             f"(seeds {start}..{start + count - 1}); reproduce each with:"]
    lines += [f"  {repro(seed, 'cuda')}" for seed in failed]
    lines.append("")
    lines += [reports[seed] for seed in failed[:20]]
    return summary, "\n".join(lines)


def random_seeds_main(argv: Optional[Sequence[str]], prog: str, description: str, check: Callable,
                      what: str) -> int:
    """The command line of a random-problem module: ``--repro SEED ...`` / ``--random COUNT``."""
    import argparse

    parser = argparse.ArgumentParser(prog=prog, description=description)
    parser.add_argument("--repro", type=int, nargs="+", metavar="SEED", help="seeds to run")
    parser.add_argument("--random", type=int, metavar="COUNT",
                        help="run COUNT consecutive seeds starting at --start")
    parser.add_argument("--start", type=int, default=0)
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--max-elems", type=int, default=None)
    parser.add_argument("--dtypes", default=None, help="comma-separated: fp16,bf16,fp32,fp64")
    parser.add_argument("--quiet", action="store_true", help="print failing problems only")
    args = parser.parse_args(argv)
    seeds: List[int] = list(args.repro or [])
    if args.random:
        seeds += list(range(args.start, args.start + args.random))
    if not seeds:
        parser.error("give --repro SEED [SEED ...] or --random COUNT")
    dtypes = args.dtypes.split(",") if args.dtypes else None

    import flash_window_attn  # noqa: F401  (loads the ops)

    failed, _, summary = check_random_seeds(
        lambda seed, device: check(seed, device, max_elems=args.max_elems, dtypes=dtypes),
        seeds, args.device, what, quiet=args.quiet)
    print(summary)
    return 1 if failed else 0


def _main(argv: Optional[Sequence[str]] = None) -> int:
    return random_seeds_main(
        argv, "python -m flash_window_attn.testing",
        "Re-run random window-attention problems (flash_window_attn.testing.random_problem) against "
        "the float64 reference.", check_random_problem, "problems")


if __name__ == "__main__":
    raise SystemExit(_main())


# =================================================================================================
# Big problems: the tolerance rule over windows processed in chunks
# =================================================================================================


def compare_to_reference_chunked(
    ours: Dict[str, Optional[Tensor]],
    problem: Problem,
    *,
    chunk_windows: int = 8192,
    windows: Optional[Sequence[Tuple[int, int]]] = None,
    atol: Optional[float] = None,
    factor: float = 2.0,
) -> Tuple[bool, List[str]]:
    """:func:`compare_to_reference` for problems too big for one reference call.

    The float64 and same-precision references (and the error scales of the window-reduced
    gradients) run on chunks of ``chunk_windows`` windows (a multiple of nW), only max-abs
    statistics are kept. ``windows``: optional list of ``(start, stop)`` window ranges to compare
    (rounded out to multiples of nW); then dbias / dlogit_scale, sums over all windows, are not
    compared (a line says so). The rule and the error scales are those of compare_to_reference.
    """
    from .reference import reference_float64, reference_outputs_and_grads

    dtype = problem.q.dtype
    atol = ATOL[dtype] if atol is None else atol
    B_ = problem.q.shape[0]
    nW = problem.mask.shape[0] if problem.mask is not None else 1
    step = max(nW, chunk_windows // nW * nW)
    if windows is None:
        ranges = [(0, B_)]
    else:
        ranges = [(max(0, a // nW * nW), min(B_, -(-b // nW) * nW)) for a, b in windows]
    per_window = [n for n in ("out", "dq", "dk", "dv") if ours.get(n) is not None]
    reduced = [n for n in ("dbias", "dlogit_scale") if ours.get(n) is not None]
    if windows is not None:
        skipped, reduced = reduced, []
    else:
        skipped = []

    # name -> [max|ours - ref64|, max|ref64|, max|reflp - ref64|, ours non-finite where ref64 is finite]
    stats: Dict[str, list] = {n: [0.0, 0.0, 0.0, False] for n in per_window + reduced}
    sums: Dict[str, Dict[str, Tensor]] = {"ref64": {}, "reflp": {}, "mags": {}}

    def acc(store: Dict[str, Tensor], name: str, t: Tensor) -> None:
        t = t.detach().to(torch.float64)
        store[name] = t if name not in store else store[name] + t

    kw = problem.kwargs()
    for lo, hi in ranges:
        for start in range(lo, hi, step):
            sl = slice(start, min(hi, start + step))
            args = (problem.q[sl], problem.k[sl], problem.v[sl], problem.bias, problem.mask)
            dout = problem.dout[sl]
            r64 = reference_float64(*args, **kw, dout=dout)
            rlp = reference_outputs_and_grads(*args, **kw, dout=dout)
            for n in per_window:
                x, r, lp = ours[n][sl].to(torch.float64), r64[n], rlp[n].to(torch.float64)
                s = stats[n]
                if x.numel() == 0:
                    continue
                fin = torch.isfinite(r)
                s[3] |= bool((~torch.isfinite(x) & fin).any())
                s[0] = max(s[0], (x - r)[fin].abs().max().item() if fin.any() else 0.0)
                s[1] = max(s[1], r[fin].abs().max().item() if fin.any() else 0.0)
                lpd = (lp - r)[fin & torch.isfinite(lp)]
                s[2] = max(s[2], lpd.abs().max().item() if lpd.numel() else 0.0)
            if reduced:
                for n in reduced:
                    acc(sums["ref64"], n, r64[n])
                    acc(sums["reflp"], n, rlp[n])
                mags = reduction_magnitudes(*args, **kw, dout=dout)
                for n in reduced:
                    acc(sums["mags"], n, mags[n])
            del r64, rlp
    for n in reduced:
        r = sums["ref64"][n]
        x = ours[n].detach().to(device=r.device, dtype=torch.float64)
        lp = sums["reflp"][n]
        stats[n] = [(x - r).abs().max().item(), r.abs().max().item(),
                    (lp - r).abs().max().item(), bool((~torch.isfinite(x)).any())]

    qkv_max = max([stats[n][1] for n in ("dq", "dk", "dv") if n in stats] + [0.0])
    floors = {"out": 1e-3 * stats["out"][1] if "out" in stats else 0.0,
              "dq": 1e-2 * qkv_max, "dk": 1e-2 * qkv_max, "dv": 1e-2 * qkv_max,
              "dbias": 1e-2 * qkv_max, "dlogit_scale": 1e-2 * qkv_max}
    for n in reduced:
        floors[n] = max(floors[n], 0.1 * sums["mags"][n].abs().max().item())

    ok = True
    lines = []
    for n, (diff, ref_max, lp_diff, nonfinite) in stats.items():
        scale = max(ref_max, floors.get(n, 0.0))
        err = math.inf if nonfinite else (diff / scale if scale > 0 else diff)
        base = lp_diff / scale if scale > 0 else lp_diff
        bound = factor * base + atol
        good = err <= bound
        ok &= good
        lines.append(f"{n:>12}: err {err:.3e}  pytorch-{str(dtype).replace('torch.', '')} err {base:.3e}  "
                     f"bound {bound:.3e}  {'ok' if good else 'FAIL'}")
    for n in skipped:
        lines.append(f"{n:>12}: not compared (a sum over all windows; only a subset was checked)")
    return ok, lines


def logit_grad_term_magnitudes(
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
    """Float64 magnitudes of the terms that dq, dk, dbias and dlogit_scale sum (error scales).

    With T = P o (|dP| + |rowsum(P o dP)|), a bound on the terms of dS = P o (dP - rowsum(P o dP)):
    dq ~ |scale| T |k| (V1) or alpha T |k^| / |q| (V2), dk likewise with T^T, dbias ~ sum over
    windows of T, dlogit_scale ~ alpha sum T o |q^ k^T|. For ill-conditioned problems (V1 logits of
    1e8, where softmax is one-hot and the exact dq / dk / dbias are 0 while each is a difference of
    terms of size |k| |dP|) the error of any finite-precision backward is relative to these terms,
    not to the (vanishing) result. Pass the result as ``magnitudes`` to compare_to_reference.
    """
    from .reference import reference_logits

    f = lambda t: None if t is None else t.detach().to(torch.float64)  # noqa: E731
    q, k, v, bias, mask, ls, dout = map(f, (q, k, v, bias, mask, logit_scale, dout))
    S = reference_logits(q, k, bias, mask, scale=scale, logit_scale=ls)
    dead = torch.isneginf(S).all(-1, keepdim=True)
    P = S.masked_fill(dead, 0.0).softmax(-1).masked_fill(dead, 0.0)
    dP = dout @ v.transpose(-2, -1)
    T = P * (dP.abs() + (P * dP).sum(-1, keepdim=True).abs())
    H = q.shape[1]
    out: Dict[str, Tensor] = {}
    if ls is None:
        s = abs(scale if scale is not None else q.shape[-1] ** -0.5)
        out["dq"] = s * (T @ k.abs())
        out["dk"] = s * (T.transpose(-2, -1) @ q.abs())
    else:
        alpha = torch.clamp(ls.reshape(1, H, 1, 1), max=LN100_F32).exp()
        qn = q.norm(dim=-1, keepdim=True).clamp_min(1e-12)
        kn = k.norm(dim=-1, keepdim=True).clamp_min(1e-12)
        out["dq"] = alpha * (T @ (k / kn).abs()) / qn
        out["dk"] = alpha * (T.transpose(-2, -1) @ (q / qn).abs()) / kn
        C = (q / qn) @ (k / kn).transpose(-2, -1)
        out["dlogit_scale"] = (T * C.abs()).sum((0, 2, 3)) * alpha.reshape(H)
    out["dbias"] = T.sum(0)
    return out
