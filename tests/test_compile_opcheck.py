"""Registration: opcheck for both ops, torch.compile (fullgraph, dynamic, reduce-overhead), gradcheck."""

from __future__ import annotations

import math

import pytest
import torch
import torch._dynamo

from flash_window_attn import window_attention
from flash_window_attn.testing import make_problem

DEVICES = [
    pytest.param("cpu", id="cpu"),
    pytest.param("cuda", id="cuda", marks=pytest.mark.cuda),
]

fwd_op = torch.ops.flash_window_attn.window_attention_fwd.default
bwd_op = torch.ops.flash_window_attn.window_attention_bwd.default


@pytest.fixture(autouse=True)
def _reset_dynamo():
    torch._dynamo.reset()
    yield
    torch._dynamo.reset()


# Representative argument sets: (B_, H, N, d, make_problem kwargs)
OPCHECK_CASES = [
    ("v1_plain", (4, 2, 16, 32), dict(version="v1", bias=None, mask=None)),
    ("v1_bias_mask", (4, 2, 49, 32), dict(version="v1", bias="hnn", mask="shift")),
    ("v2_all_packed", (4, 3, 49, 32), dict(version="v2", bias="1hnn", mask="shift", layout="packed",
                                           logit_scale_shape="h")),
    ("v2_no_bias_dead_rows", (4, 2, 24, 16), dict(version="v2", bias=None, mask="dead")),
]


def _problem(device, shape, kw, dtype):
    B_, H, N, d = shape
    return make_problem(B_, H, N, d, dtype=dtype, device=device, seed=7, **kw)


def _op_scale(p):
    return p.scale if p.scale is not None else (1.0 if p.logit_scale is not None else p.q.shape[-1] ** -0.5)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name,shape,kw", OPCHECK_CASES, ids=[c[0] for c in OPCHECK_CASES])
def test_opcheck_fwd(device, name, shape, kw):
    dtype = torch.float32
    p = _problem(device, shape, kw, dtype)
    args = (p.q, p.k, p.v, p.bias, p.mask, p.logit_scale, _op_scale(p))
    torch.library.opcheck(fwd_op, args)
    # and without any input requiring grad
    args_nograd = tuple(a.detach() if isinstance(a, torch.Tensor) else a for a in args)
    torch.library.opcheck(fwd_op, args_nograd)
    torch.library.opcheck(fwd_op, args + (True,))   # with the inverse norms (V2)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name,shape,kw", OPCHECK_CASES, ids=[c[0] for c in OPCHECK_CASES])
def test_opcheck_bwd(device, name, shape, kw):
    dtype = torch.float32 if device == "cpu" else torch.float16
    p = _problem(device, shape, kw, dtype)
    det = lambda t: None if t is None else t.detach()  # noqa: E731
    q, k, v, bias, ls = map(det, (p.q, p.k, p.v, p.bias, p.logit_scale))
    scale = _op_scale(p)
    out, lse, qk_inv_norm = fwd_op(q, k, v, bias, p.mask, ls, scale, True)
    torch.library.opcheck(bwd_op, (p.dout, q, k, v, out, lse, bias, p.mask, ls, scale))
    # with the forward's inverse norms given back (V2; V1's is the empty tensor)
    torch.library.opcheck(bwd_op, (p.dout, q, k, v, out, lse, bias, p.mask, ls, scale, qk_inv_norm))


@pytest.mark.parametrize("device", DEVICES)
def test_fake_kernels_match_real(device):
    """The fake kernels give the real outputs' shapes, dtypes and strides (packed views included)."""
    from torch._subclasses.fake_tensor import FakeTensorMode

    dtype = torch.float32 if device == "cpu" else torch.float16
    for i, (name, shape, kw) in enumerate(OPCHECK_CASES):
        for bias_dtype in (torch.float32, torch.bfloat16):
            p = make_problem(*shape, dtype=dtype, device=device, seed=i, bias_dtype=bias_dtype, **kw)
            det = lambda t: None if t is None else t.detach()  # noqa: E731
            args = [det(t) for t in (p.q, p.k, p.v, p.bias, p.mask, p.logit_scale)] + [_op_scale(p), True]
            real_f = fwd_op(*args)
            real_b = bwd_op(p.dout, args[0], args[1], args[2], real_f[0], real_f[1], *args[3:-1], real_f[2])
            with FakeTensorMode(allow_non_fake_inputs=False) as mode:
                fargs = [mode.from_tensor(a) if isinstance(a, torch.Tensor) else a for a in args]
                fake_f = fwd_op(*fargs)
                fake_b = bwd_op(mode.from_tensor(p.dout), fargs[0], fargs[1], fargs[2], fake_f[0], fake_f[1],
                                *fargs[3:-1], fake_f[2])
            for r, f in zip(list(real_f) + list(real_b), list(fake_f) + list(fake_b)):
                assert (r.shape, r.dtype, r.stride(), r.device) == (f.shape, f.dtype, f.stride(), f.device), (
                    name, r.shape, f.shape, r.dtype, f.dtype, r.stride(), f.stride())


# ------------------------------------------------------------------------------------------------
# torch.compile
# ------------------------------------------------------------------------------------------------

H, D = 3, 32


def swin_attention(qkv, bias, mask, logit_scale):
    """What a Swin V2 block does around the op: packed qkv in, (B_, N, H*d) out."""
    B_, N, _ = qkv.shape
    q, k, v = qkv.reshape(B_, N, 3, H, D).permute(2, 0, 3, 1, 4)
    out = window_attention(q, k, v, bias, mask, logit_scale=logit_scale)
    return out.transpose(1, 2).reshape(B_, N, H * D)


def swin_v1_attention(q, k, v, bias, mask):
    return window_attention(q, k, v, bias, mask) * 2.0


def _run_block(fn, p, *args):
    out = fn(*args)
    gen = torch.Generator().manual_seed(0)  # the same cotangent for eager and compiled
    g = torch.randn(out.shape, generator=gen, dtype=torch.float32).to(out)
    leaves = [t for t in args if isinstance(t, torch.Tensor) and t.requires_grad]
    grads = torch.autograd.grad(out, leaves, g)
    return [out.detach(), *grads]


def _assert_same(a, b, dtype):
    tol = dict(rtol=1e-5, atol=1e-5) if dtype == torch.float32 else dict(rtol=2e-2, atol=2e-2)
    for x, y in zip(a, b):
        torch.testing.assert_close(x, y, **tol)


@pytest.mark.parametrize("device", DEVICES)
def test_compile_fullgraph(device):
    """fullgraph=True (no graph break), forward and backward equal to eager."""
    dtype = torch.float32 if device == "cpu" else torch.float16
    p = make_problem(8, H, 49, D, dtype=dtype, device=device, layout="packed", mask="shift", seed=1)
    args = (p.qkv, p.bias, p.mask, p.logit_scale)
    eager = _run_block(swin_attention, p, *args)
    compiled = torch.compile(swin_attention, fullgraph=True)
    _assert_same(_run_block(compiled, p, *args), eager, dtype)

    pv = make_problem(8, H, 64, D, dtype=dtype, device=device, version="v1", mask="random", seed=2)
    args = (pv.q, pv.k, pv.v, pv.bias, pv.mask)
    eager = _run_block(swin_v1_attention, pv, *args)
    compiled = torch.compile(swin_v1_attention, fullgraph=True)
    _assert_same(_run_block(compiled, pv, *args), eager, dtype)


@pytest.mark.parametrize("device", DEVICES)
def test_compile_dynamic_no_recompile(device):
    """dynamic=True: one compilation serves other B_, N and nW (no recompile, no graph break)."""
    dtype = torch.float32 if device == "cpu" else torch.float16
    compiled = torch.compile(swin_attention, fullgraph=True, dynamic=True)
    p = make_problem(8, H, 49, D, dtype=dtype, device=device, layout="packed", mask="shift", seed=3)
    args = (p.qkv, p.bias, p.mask, p.logit_scale)
    _assert_same(_run_block(compiled, p, *args), _run_block(swin_attention, p, *args), dtype)
    with torch._dynamo.config.patch(error_on_recompile=True):
        for i, (B_, N, nW) in enumerate([(16, 64, 4), (12, 100, 2), (6, 144, 3)]):
            p = make_problem(B_, H, N, D, dtype=dtype, device=device, layout="packed", mask="shift", nW=nW,
                             seed=4 + i)
            args = (p.qkv, p.bias, p.mask, p.logit_scale)
            _assert_same(_run_block(compiled, p, *args), _run_block(swin_attention, p, *args), dtype)


@pytest.mark.parametrize("device", DEVICES)
def test_compile_dynamic_v1_default_scale(device):
    """The default scale d ** -0.5 traces with symbolic shapes (V1, no mask)."""
    dtype = torch.float32 if device == "cpu" else torch.float16
    compiled = torch.compile(swin_v1_attention, fullgraph=True, dynamic=True)
    for i, (B_, N) in enumerate([(8, 49), (4, 64), (6, 100)]):
        p = make_problem(B_, 2, N, D, dtype=dtype, device=device, version="v1", seed=10 + i)
        args = (p.q, p.k, p.v, p.bias, None)
        ctx = torch._dynamo.config.patch(error_on_recompile=i > 0)
        with ctx:
            _assert_same(_run_block(compiled, p, *args), _run_block(swin_v1_attention, p, *args), dtype)


@pytest.mark.cuda
def test_compile_reduce_overhead():
    """mode="reduce-overhead" (CUDA graphs): replays give eager's results, forward and backward."""
    dtype = torch.float16
    compiled = torch.compile(swin_attention, fullgraph=True, mode="reduce-overhead")
    p = make_problem(64, H, 49, D, dtype=dtype, device="cuda", layout="packed", mask="shift", seed=20)
    args = (p.qkv, p.bias, p.mask, p.logit_scale)
    eager = _run_block(swin_attention, p, *args)
    for _ in range(4):  # warm-up, record, replays
        got = _run_block(compiled, p, *args)
        got = [t.clone() for t in got]
    _assert_same(got, eager, dtype)
    # new values in the same buffers' shapes: the replay must see them
    p2 = make_problem(64, H, 49, D, dtype=dtype, device="cuda", layout="packed", mask="shift", seed=21)
    args2 = (p2.qkv, p2.bias, p2.mask, p2.logit_scale)
    got2 = [t.clone() for t in _run_block(compiled, p2, *args2)]
    _assert_same(got2, _run_block(swin_attention, p2, *args2), dtype)


# ------------------------------------------------------------------------------------------------
# gradcheck (CPU, float64)
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("version", ["v1", "v2"])
def test_gradcheck_float64(version):
    B_, Hh, N, d = 2, 2, 5, 16
    g = torch.Generator().manual_seed(30)
    rnd = lambda *s: torch.randn(*s, generator=g, dtype=torch.float64)  # noqa: E731
    q, k, v = rnd(B_, Hh, N, d), rnd(B_, Hh, N, d), rnd(B_, Hh, N, d)
    bias = rnd(Hh, N, N)
    mask = torch.zeros(2, N, N, dtype=torch.float64)
    mask[1, :, 3:] = -100.0
    mask[0, 1, 2] = float("-inf")
    inputs = [q, k, v, bias]
    if version == "v2":
        ls = torch.tensor([math.log(10.0), math.log(50.0)], dtype=torch.float64)
        inputs.append(ls)
    for t in inputs:
        t.requires_grad_(True)

    if version == "v2":
        fn = lambda q, k, v, b, ls: window_attention(q, k, v, b, mask, logit_scale=ls)  # noqa: E731
    else:
        fn = lambda q, k, v, b: window_attention(q, k, v, b, mask, scale=0.3)  # noqa: E731
    assert torch.autograd.gradcheck(fn, inputs, eps=1e-6, atol=1e-5, rtol=1e-4)
