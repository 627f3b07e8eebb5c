"""Every bad argument raises the right exception type with a message naming the argument.

Shapes, sizes, strides and devices: ValueError; dtypes and non-tensor arguments: TypeError.
"""

from __future__ import annotations

import math
import re

import pytest
import torch

from flash_window_attn import window_attention

B_, H, N, D = 4, 2, 16, 32
NW = 2


def qkv(dtype=torch.float32, device="cpu", shape=(B_, H, N, D)):
    g = torch.Generator().manual_seed(0)
    return [torch.randn(shape, generator=g, dtype=torch.float32).to(device=device, dtype=dtype)
            for _ in range(3)]


def good(device="cpu", dtype=torch.float32):
    q, k, v = qkv(dtype, device)
    return dict(
        q=q, k=k, v=v,
        bias=torch.randn(H, N, N, device=device),
        mask=torch.zeros(NW, N, N, device=device),
        logit_scale=torch.full((H, 1, 1), math.log(10.0), device=device),
    )


def call(a):
    a = dict(a)
    return window_attention(a.pop("q"), a.pop("k"), a.pop("v"), a.pop("bias", None), a.pop("mask", None), **a)


def names(arg: str) -> str:
    """Regex: the argument's name as a word (so 'q' does not match inside 'sequence')."""
    return rf"(?<![A-Za-z_]){re.escape(arg)}(?![A-Za-z_])"


def test_good_arguments_run():
    out = call(good())
    assert out.shape == (B_, H, N, D)


# (description, mutate(args) -> args, exception, argument named in the message)
def _with(**changes):
    def mutate(a):
        a = dict(a)
        for key, fn in changes.items():
            a[key] = fn(a) if callable(fn) else fn
        return a
    return mutate


BAD = [
    ("q rank 3", _with(q=lambda a: a["q"][0]), ValueError, "q"),
    ("q rank 5", _with(q=lambda a: a["q"][None]), ValueError, "q"),
    ("k rank 3", _with(k=lambda a: a["k"][0]), ValueError, "k"),
    ("k shape", _with(k=lambda a: a["k"][:, :, :-1]), ValueError, "k"),
    ("v shape", _with(v=lambda a: a["v"][:-1]), ValueError, "v"),
    ("v heads", _with(v=lambda a: a["v"][:, :1]), ValueError, "v"),
    ("k dtype", _with(k=lambda a: a["k"].double()), TypeError, "k"),
    ("v dtype", _with(v=lambda a: a["v"].bfloat16()), TypeError, "v"),
    ("int q", _with(q=lambda a: a["q"].int(), k=lambda a: a["k"].int(), v=lambda a: a["v"].int()), TypeError, "q"),
    ("bool q", _with(q=lambda a: a["q"] > 0, k=lambda a: a["k"] > 0, v=lambda a: a["v"] > 0), TypeError, "q"),
    ("q stride(-1) != 1", _with(q=lambda a: a["q"].transpose(-1, -2).contiguous().transpose(-1, -2)), ValueError, "q"),
    ("k stride(-1) != 1", _with(k=lambda a: a["k"].transpose(-1, -2).contiguous().transpose(-1, -2)), ValueError, "k"),
    ("v stride(-1) != 1", _with(v=lambda a: torch.randn(B_, H, N, 2 * D)[..., ::2]), ValueError, "v"),
    ("bias (H, N, N+1)", _with(bias=torch.randn(H, N, N + 1)), ValueError, "bias"),
    ("bias (H+1, N, N)", _with(bias=torch.randn(H + 1, N, N)), ValueError, "bias"),
    ("bias (2, H, N, N)", _with(bias=torch.randn(2, H, N, N)), ValueError, "bias"),
    ("bias (N, N)", _with(bias=torch.randn(N, N)), ValueError, "bias"),
    ("bias int", _with(bias=torch.ones(H, N, N, dtype=torch.int32)), TypeError, "bias"),
    ("mask (nW, N, N+1)", _with(mask=torch.zeros(NW, N, N + 1)), ValueError, "mask"),
    ("mask (N, N)", _with(mask=torch.zeros(N, N)), ValueError, "mask"),
    ("mask (1, nW, N, N)", _with(mask=torch.zeros(1, NW, N, N)), ValueError, "mask"),
    ("mask bool", _with(mask=torch.zeros(NW, N, N, dtype=torch.bool)), TypeError, "mask"),
    ("B_ % nW", _with(mask=torch.zeros(3, N, N)), ValueError, "nW"),
    ("logit_scale (H+1,)", _with(logit_scale=torch.zeros(H + 1)), ValueError, "logit_scale"),
    ("logit_scale (H, 2)", _with(logit_scale=torch.zeros(H, 2)), ValueError, "logit_scale"),
    ("logit_scale (1,)", _with(logit_scale=torch.zeros(1)), ValueError, "logit_scale"),
    ("logit_scale int", _with(logit_scale=torch.zeros(H, dtype=torch.int64)), TypeError, "logit_scale"),
    ("scale and logit_scale", _with(scale=0.5), ValueError, "scale"),
    ("mask requires grad", _with(mask=torch.zeros(NW, N, N, requires_grad=True)), ValueError, "mask"),
    ("q not a tensor", _with(q=lambda a: a["q"].tolist()), TypeError, "q"),
    ("bias not a tensor", _with(bias=1.0), TypeError, "bias"),
    ("mask not a tensor", _with(mask="shift"), TypeError, "mask"),
    ("logit_scale not a tensor", _with(logit_scale=4.6), TypeError, "logit_scale"),
]


@pytest.mark.parametrize("desc,mutate,exc,arg", BAD, ids=[b[0] for b in BAD])
def test_bad_argument(desc, mutate, exc, arg):
    with pytest.raises(exc, match=names(arg)):
        call(mutate(good()))


@pytest.mark.parametrize("d", [8, 20, 136, 0])
def test_unsupported_head_dim(d):
    q, k, v = qkv(shape=(B_, H, N, d))
    with pytest.raises(ValueError, match=r"head dim|(?<![A-Za-z_])d(?![A-Za-z_])"):
        window_attention(q, k, v)


@pytest.mark.parametrize("n", [0, 1025])
def test_unsupported_window_length(n):
    q, k, v = qkv(shape=(B_, H, n, D))
    with pytest.raises(ValueError, match=names("N")):
        window_attention(q, k, v)


@pytest.mark.parametrize("scale", ["0.5", torch.tensor(0.5), True, [0.5]])
def test_bad_scale_type(scale):
    q, k, v = qkv()
    with pytest.raises(TypeError, match=names("scale")):
        window_attention(q, k, v, scale=scale)


def test_scale_must_be_finite():
    q, k, v = qkv()
    with pytest.raises(ValueError, match=names("scale")):
        window_attention(q, k, v, scale=float("nan"))


def test_accepted_variants():
    """Boundary shapes that must be accepted: (1, H, N, N) bias, every logit_scale shape, numpy and
    int scales, N = 1, d = 16 and 128, packed views."""
    a = good()
    call(_with(bias=torch.randn(1, H, N, N))(a))
    for shape in ((H,), (H, 1, 1), (1, H, 1, 1)):
        call(_with(logit_scale=torch.zeros(shape))(a))
    q, k, v = a["q"], a["k"], a["v"]
    window_attention(q, k, v, scale=1)
    np = pytest.importorskip("numpy")
    window_attention(q, k, v, scale=np.float32(0.25))
    for n, d in ((1, 16), (7, 128)):
        q1, k1, v1 = qkv(shape=(2, 1, n, d))
        window_attention(q1, k1, v1)
    qkv_packed = torch.randn(B_, N, 3 * H * D)
    qp, kp, vp = qkv_packed.reshape(B_, N, 3, H, D).permute(2, 0, 3, 1, 4)
    window_attention(qp, kp, vp, a["bias"], a["mask"])


@pytest.mark.parametrize("with_grad", [False, True])
def test_zero_windows(with_grad):
    """B_ = 0 returns an empty (0, H, N, d) result; its backward gives empty dq/dk/dv and zero
    dbias / dlogit_scale (a sum over no windows)."""
    q, k, v = qkv(shape=(0, H, N, D))
    bias = torch.randn(H, N, N)
    ls = torch.full((H,), math.log(10.0))
    mask = torch.zeros(NW, N, N)
    if with_grad:
        for t in (q, k, v, bias, ls):
            t.requires_grad_(True)
    out = window_attention(q, k, v, bias, mask, logit_scale=ls)
    assert out.shape == (0, H, N, D) and out.dtype == q.dtype
    out_v1 = window_attention(q, k, v, bias)
    assert out_v1.shape == (0, H, N, D)
    if with_grad:
        out.sum().backward()
        assert q.grad.shape == q.shape and k.grad.shape == k.shape and v.grad.shape == v.shape
        assert bias.grad.shape == bias.shape and torch.equal(bias.grad, torch.zeros_like(bias))
        assert ls.grad.shape == ls.shape and torch.equal(ls.grad, torch.zeros_like(ls))


def test_bwd_op_checks_dout():
    """The backward op validates its own inputs (dout shape, dtype and stride)."""
    a = good()
    q, k, v = a["q"], a["k"], a["v"]
    out, lse = torch.ops.flash_window_attn.window_attention_fwd(q, k, v, None, None, None, 0.25)
    bwd = torch.ops.flash_window_attn.window_attention_bwd
    with pytest.raises(ValueError, match=names("dout")):
        bwd(torch.randn(B_, H, N, D + 8), q, k, v, out, lse, None, None, None, 0.25)
    with pytest.raises(TypeError, match=names("dout")):
        bwd(torch.randn(B_, H, N, D, dtype=torch.float64), q, k, v, out, lse, None, None, None, 0.25)
    with pytest.raises(ValueError, match=names("dout")):
        bwd(torch.randn(B_, H, D, N).transpose(-1, -2), q, k, v, out, lse, None, None, None, 0.25)
    with pytest.raises(ValueError, match=names("lse")):
        bwd(torch.randn(B_, H, N, D), q, k, v, out, lse[:, :, :-1], None, None, None, 0.25)


# ------------------------------------------------------------------------------------------------
# CUDA: device mismatches and fp64
# ------------------------------------------------------------------------------------------------

DEVICE_BAD = [
    ("k on cpu", "k"),
    ("v on cpu", "v"),
    ("bias on cpu", "bias"),
    ("mask on cpu", "mask"),
    ("logit_scale on cpu", "logit_scale"),
]


@pytest.mark.cuda
@pytest.mark.parametrize("desc,arg", DEVICE_BAD, ids=[b[0] for b in DEVICE_BAD])
def test_device_mismatch(desc, arg):
    a = good("cuda", torch.float16)
    a[arg] = a[arg].cpu()
    with pytest.raises(ValueError, match=names(arg)):
        call(a)


@pytest.mark.cuda
def test_cuda_q_on_cpu_rest_on_cuda():
    a = good("cuda", torch.float16)
    a["q"] = a["q"].cpu()
    with pytest.raises(ValueError, match=names("k")):  # k is checked against q's device
        call(a)


@pytest.mark.cuda
def test_cuda_float64_rejected():
    q, k, v = qkv(torch.float64, "cuda")
    with pytest.raises(TypeError, match=names("q")):
        window_attention(q, k, v)


@pytest.mark.cuda
def test_cuda_zero_windows():
    q, k, v = qkv(torch.float16, "cuda", shape=(0, H, N, D))
    for t in (q, k, v):
        t.requires_grad_(True)
    bias = torch.randn(H, N, N, device="cuda", requires_grad=True)
    out = window_attention(q, k, v, bias)
    assert out.shape == (0, H, N, D)
    out.sum().backward()
    assert torch.equal(bias.grad, torch.zeros_like(bias))
