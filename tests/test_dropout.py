"""Attention dropout (``dropout_p``) of window_attention, CPU and CUDA.

The keep mask is a pure function of the op's rng_state (``flash_window_attn.dropout_keep_mask``),
so every output and gradient is checked against the float64 reference run with that same explicit
mask, under the suite's tolerance rule; plus reproducibility under ``torch.manual_seed``, the kept
fraction, p = 0 and p = 1, argument errors, opcheck and torch.compile.
"""

from __future__ import annotations

import math

import pytest
import torch

from flash_window_attn import dropout_keep_mask, window_attention
from flash_window_attn.reference import window_attention_reference
from flash_window_attn.testing import compare_to_reference, make_problem

ops = torch.ops.flash_window_attn

DEVICES = [
    pytest.param("cpu", id="cpu"),
    pytest.param("cuda", id="cuda", marks=pytest.mark.cuda),
]


def _dtypes(device):
    return [torch.float32, torch.float64] if device == "cpu" else [torch.float16, torch.bfloat16]


def _run_dropout(problem, p):
    """Our op (forward + backward) with dropout; returns results and the keep mask it used."""
    q, k, v, bias, mask = problem.args()
    kw = problem.kwargs()
    scale = kw["scale"]
    ls = kw["logit_scale"]
    op_scale = 1.0 if ls is not None else (scale if scale is not None else q.shape[-1] ** -0.5)
    out, lse, rng_state, _ = ops.window_attention_dropout_fwd(q, k, v, bias, mask, ls, op_scale, p)
    res = {"out": out.detach()}
    inputs = problem.grad_inputs()
    grads = torch.autograd.grad(out, list(inputs.values()), problem.dout)
    res.update(zip(inputs.keys(), grads))
    B_, H, N, _ = q.shape
    keep = dropout_keep_mask(rng_state, B_, H, N, p)
    return res, keep


def _reference(problem, keep, p, dtype=None):
    """Reference output and gradients with an explicit keep mask, in `dtype` (None: inputs' own)."""

    def prep(t, grad):
        if t is None:
            return None
        t = t.detach()
        if dtype is not None:
            t = t.to(dtype)
        return t.requires_grad_(grad)

    q, k, v, bias, mask = problem.args()
    kw = problem.kwargs()
    q_, k_, v_ = prep(q, True), prep(k, True), prep(v, True)
    bias_ = prep(bias, bias is not None and bias.requires_grad)
    mask_ = prep(mask, False)
    ls = kw["logit_scale"]
    ls_ = prep(ls, ls is not None and ls.requires_grad)
    out = window_attention_reference(q_, k_, v_, bias_, mask_, scale=kw["scale"], logit_scale=ls_,
                                      dropout_keep=keep, dropout_p=p)
    res = {"out": out.detach()}
    names = {"dq": q_, "dk": k_, "dv": v_, "dbias": bias_, "dlogit_scale": ls_}
    names = {n: t for n, t in names.items() if t is not None and t.requires_grad}
    dout = problem.dout.detach().to(out.dtype)
    grads = torch.autograd.grad(out, list(names.values()), dout)
    res.update(zip(names.keys(), grads))
    return res


@pytest.mark.parametrize("device", DEVICES)
# N = 300: on sm_90a the backward's query side runs in key ranges of 256 keys (the keep bits of
# the second range's keys)
@pytest.mark.parametrize("N", [7, 49, 64, 144, 256, 300])
@pytest.mark.parametrize("version", ["v1", "v2"])
def test_dropout_matches_reference_with_same_mask(device, N, version):
    p = 0.2
    for dtype in _dtypes(device):
        B_, H = (8, 2) if N <= 64 else (4, 2)
        prob = make_problem(B_, H, N, 32, dtype=dtype, device=device, version=version, mask="shift",
                            bias_dtype=dtype if dtype == torch.float64 else None,
                            nW=4, seed=N + (7 if version == "v1" else 0))
        if dtype == torch.float64 and prob.logit_scale is not None:  # its gradient in fp64 too
            prob.logit_scale = prob.logit_scale.detach().double().requires_grad_()
        ours, keep = _run_dropout(prob, p)
        frac = keep.float().mean().item()
        assert 0.6 < frac < 0.95, f"kept fraction {frac} for p={p}"
        ref64 = _reference(prob, keep, p, dtype=torch.float64)
        lowp = _reference(prob, keep, p, dtype=None) if dtype != torch.float64 else None
        ok, lines = compare_to_reference({k: v for k, v in ours.items()}, ref64, lowp, dtype)
        assert ok, f"{device} {dtype} N={N} {version}\n" + "\n".join(lines)


@pytest.mark.parametrize("device", DEVICES)
def test_dropout_reproducible_under_manual_seed(device):
    dtype = torch.float32 if device == "cpu" else torch.float16
    prob = make_problem(8, 2, 49, 32, dtype=dtype, device=device, mask="shift", nW=4, seed=3)
    q, k, v, bias, mask = prob.args()

    def run(seed):
        torch.manual_seed(seed)
        return window_attention(q, k, v, bias, mask, logit_scale=prob.logit_scale, dropout_p=0.3).detach()

    a, b, c = run(11), run(11), run(12)
    assert torch.equal(a, b)
    assert not torch.equal(a, c)
    # consecutive calls draw different masks
    torch.manual_seed(11)
    x = window_attention(q, k, v, bias, mask, logit_scale=prob.logit_scale, dropout_p=0.3)
    y = window_attention(q, k, v, bias, mask, logit_scale=prob.logit_scale, dropout_p=0.3)
    assert not torch.equal(x, y)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("p", [0.1, 0.5, 0.9])
def test_dropout_kept_fraction(device, p):
    dtype = torch.float32 if device == "cpu" else torch.float16
    q = torch.randn(64, 4, 64, 32, device=device, dtype=dtype)
    rng_state = ops.window_attention_dropout_fwd(q, q, q, None, None, None, 0.25, p)[2]
    keep = dropout_keep_mask(rng_state, 64, 4, 64, p)
    n = keep.numel()
    frac = keep.float().mean().item()
    # binomial: 6 standard deviations
    assert abs(frac - (1 - p)) < 6 * math.sqrt(p * (1 - p) / n) + 2.0 ** -16, (frac, p)
    # no visible structure: each row/column position is kept about equally often
    by_col = keep.float().mean(dim=(0, 1, 2))
    assert (by_col - (1 - p)).abs().max().item() < 0.08


@pytest.mark.parametrize("device", DEVICES)
def test_dropout_p0_and_p1(device):
    dtype = torch.float32 if device == "cpu" else torch.float16
    prob = make_problem(8, 2, 64, 32, dtype=dtype, device=device, mask="shift", nW=4, seed=5)
    q, k, v, bias, mask = prob.args()
    ls = prob.logit_scale
    plain = window_attention(q, k, v, bias, mask, logit_scale=ls)
    out0, _, st0, _ = ops.window_attention_dropout_fwd(q, k, v, bias, mask, ls, 1.0, 0.0)
    assert st0.numel() == 0
    assert torch.equal(out0, plain)
    out1 = window_attention(q, k, v, bias, mask, logit_scale=ls, dropout_p=1.0)
    assert torch.count_nonzero(out1) == 0
    g = torch.autograd.grad(out1, [q], prob.dout)[0]
    assert torch.isfinite(g).all()


def test_dropout_argument_errors():
    q = torch.randn(2, 1, 7, 16)
    with pytest.raises(ValueError, match="dropout_p"):
        window_attention(q, q, q, dropout_p=1.5)
    with pytest.raises(ValueError, match="dropout_p"):
        window_attention(q, q, q, dropout_p=-0.1)
    with pytest.raises(TypeError, match="dropout_p"):
        window_attention(q, q, q, dropout_p="0.1")
    out, lse, st, _ = ops.window_attention_dropout_fwd(q, q, q, None, None, None, 0.25, 0.5)
    with pytest.raises(ValueError, match="rng_state"):
        ops.window_attention_dropout_bwd(out, q, q, q, out, lse, None, None, None, 0.25, 0.5, st[:1])


def test_dropout_opcheck():
    prob = make_problem(4, 2, 49, 16, dtype=torch.float32, mask="shift", nW=2, seed=1)
    q, k, v, bias, mask = prob.args()
    # p = 0: every check (the op is deterministic there)
    torch.library.opcheck(ops.window_attention_dropout_fwd.default,
                          (q, k, v, bias, mask, prob.logit_scale, 1.0, 0.0))
    # p > 0: the checks that do not compare two runs' values
    torch.library.opcheck(ops.window_attention_dropout_fwd.default,
                          (q, k, v, bias, mask, prob.logit_scale, 1.0, 0.25),
                          test_utils=("test_schema", "test_faketensor"))


@pytest.mark.parametrize("device", DEVICES)
def test_dropout_compile_fullgraph(device):
    dtype = torch.float32 if device == "cpu" else torch.float16
    prob = make_problem(4, 2, 49, 32, dtype=dtype, device=device, mask="shift", nW=2, seed=2)
    q, k, v, bias, mask = prob.args()
    ls = prob.logit_scale

    def f(q, k, v, bias, mask, ls):
        return window_attention(q, k, v, bias, mask, logit_scale=ls, dropout_p=0.25).sum()

    cf = torch.compile(f, fullgraph=True, backend="aot_eager")
    torch.manual_seed(4)
    eager = f(q, k, v, bias, mask, ls)
    ge = torch.autograd.grad(eager, [q])[0]
    torch.manual_seed(4)
    comp = cf(q, k, v, bias, mask, ls)
    gc = torch.autograd.grad(comp, [q])[0]
    assert torch.equal(eager, comp)
    assert torch.equal(ge, gc)
