"""Every bad argument raises the right exception type with a message naming the argument.

Shapes, sizes, strides and devices: ValueError; dtypes and non-tensor arguments: TypeError.
"""

from __future__ import annotations

import math
import os
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
    out, lse, _ = torch.ops.flash_window_attn.window_attention_fwd(q, k, v, None, None, None, 0.25)
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


# ================================================================================================
# More bad arguments: every remaining check, integer / complex / float8 dtypes, bad strides,
# the backward op's own arguments, empty tensors. (Reliability, issue 5.)
# ================================================================================================

BAD_MORE = [
    ("q 0-d", _with(q=torch.tensor(1.0)), ValueError, "q"),
    ("q expanded last dim (stride 0)", _with(q=lambda a: a["q"][..., :1].expand(B_, H, N, D)), ValueError, "q"),
    ("v stride(-1) = 3", _with(v=lambda a: torch.randn(B_, H, N, 3 * D)[..., ::3]), ValueError, "v"),
    ("k not a tensor", _with(k=lambda a: a["k"].tolist()), TypeError, "k"),
    ("v is None", _with(v=None), TypeError, "v"),
    ("q is None", _with(q=None), TypeError, "q"),
    ("v other head dim", _with(v=lambda a: torch.randn(B_, H, N, D + 8)), ValueError, "v"),
    ("q fp32, k and v fp16", _with(k=lambda a: a["k"].half(), v=lambda a: a["v"].half()), TypeError, "k"),
    ("mask nW = 0", _with(mask=torch.zeros(0, N, N)), ValueError, "mask"),
    ("mask nW > B_", _with(mask=torch.zeros(2 * B_, N, N)), ValueError, "nW"),
    ("mask (nW, N+1, N)", _with(mask=torch.zeros(NW, N + 1, N)), ValueError, "mask"),
    ("mask int32", _with(mask=torch.zeros(NW, N, N, dtype=torch.int32)), TypeError, "mask"),
    ("mask uint8", _with(mask=torch.zeros(NW, N, N, dtype=torch.uint8)), TypeError, "mask"),
    ("mask complex", _with(mask=torch.zeros(NW, N, N, dtype=torch.complex64)), TypeError, "mask"),
    ("bias bool", _with(bias=torch.zeros(H, N, N, dtype=torch.bool)), TypeError, "bias"),
    ("bias complex", _with(bias=torch.zeros(H, N, N, dtype=torch.complex64)), TypeError, "bias"),
    ("bias (1, H, N, N, 1)", _with(bias=torch.zeros(1, H, N, N, 1)), ValueError, "bias"),
    ("bias 0-d", _with(bias=torch.tensor(0.0)), ValueError, "bias"),
    ("logit_scale bool", _with(logit_scale=torch.zeros(H, dtype=torch.bool)), TypeError, "logit_scale"),
    ("logit_scale complex", _with(logit_scale=torch.zeros(H, dtype=torch.complex64)), TypeError, "logit_scale"),
    ("logit_scale (H, 1)", _with(logit_scale=torch.zeros(H, 1)), ValueError, "logit_scale"),
    ("logit_scale (1, H, 1, 2)", _with(logit_scale=torch.zeros(1, H, 1, 2)), ValueError, "logit_scale"),
    ("logit_scale 0-d", _with(logit_scale=torch.tensor(1.0)), ValueError, "logit_scale"),
    ("logit_scale empty", _with(logit_scale=torch.zeros(0)), ValueError, "logit_scale"),
    ("mask requires grad (V1)", _with(mask=torch.zeros(NW, N, N, requires_grad=True), logit_scale=None),
     ValueError, "mask"),
]


@pytest.mark.parametrize("desc,mutate,exc,arg", BAD_MORE, ids=[b[0] for b in BAD_MORE])
def test_bad_argument_more(desc, mutate, exc, arg):
    with pytest.raises(exc, match=names(arg)):
        call(mutate(good()))


@pytest.mark.parametrize("dtype", [torch.int8, torch.uint8, torch.int16, torch.int64, torch.complex64,
                                   torch.float8_e4m3fn], ids=str)
def test_unsupported_qkv_dtypes(dtype):
    q, k, v = qkv()
    with pytest.raises(TypeError, match=names("q")):
        window_attention(*(t.to(dtype) for t in (q, k, v)))
    # only k of another dtype: k is named
    with pytest.raises(TypeError, match=names("k")):
        window_attention(q, k.to(dtype), v)


@pytest.mark.parametrize("d", [1, 12, 130, 256])
def test_unsupported_head_dim_more(d):
    q, k, v = qkv(shape=(2, H, N, d))
    with pytest.raises(ValueError, match=r"head dim|(?<![A-Za-z_])d(?![A-Za-z_])"):
        window_attention(q, k, v)


@pytest.mark.parametrize("n", [1025, 2048])
def test_unsupported_window_length_with_bias_and_mask(n):
    """N > 1024 is reported as N (not as a bias or mask shape problem)."""
    q, k, v = qkv(shape=(2, 1, n, 16))
    with pytest.raises(ValueError, match=names("N")):
        window_attention(q, k, v, torch.zeros(1, n, n), torch.zeros(1, n, n))


@pytest.mark.parametrize("scale", [float("inf"), float("-inf"), 10 ** 400],
                         ids=["inf", "-inf", "int-too-large-for-float"])
def test_scale_must_be_finite_more(scale):
    q, k, v = qkv()
    with pytest.raises(ValueError, match=names("scale")):
        window_attention(q, k, v, scale=scale)


@pytest.mark.parametrize("scale", [1j, b"0.5", None.__class__], ids=["complex", "bytes", "type"])
def test_bad_scale_type_more(scale):
    q, k, v = qkv()
    with pytest.raises(TypeError, match=names("scale")):
        window_attention(q, k, v, scale=scale)


def test_mask_requiring_grad_is_rejected_under_no_grad_too():
    """The mask check does not depend on grad mode (the mask would silently get no gradient)."""
    a = good()
    a["mask"] = torch.zeros(NW, N, N, requires_grad=True)
    with torch.no_grad(), pytest.raises(ValueError, match=names("mask")):
        call(a)


def _fwd_for_bwd(dtype=torch.float32, device="cpu"):
    q, k, v = qkv(dtype, device)
    out, lse, _ = torch.ops.flash_window_attn.window_attention_fwd(q, k, v, None, None, None, 0.25)
    dout = torch.randn(B_, H, N, D, device=device).to(dtype)
    return dout, q, k, v, out, lse


BWD_BAD = [
    ("dout rank 3", lambda a: {**a, "dout": a["dout"][0]}, ValueError, "dout"),
    ("dout on other N", lambda a: {**a, "dout": a["dout"][:, :, :-1]}, ValueError, "dout"),
    ("out shape", lambda a: {**a, "out": a["out"][:, :, :-1]}, ValueError, "out"),
    ("out rank 3", lambda a: {**a, "out": a["out"][0]}, ValueError, "out"),
    ("out dtype", lambda a: {**a, "out": a["out"].double()}, TypeError, "out"),
    ("lse dtype float64", lambda a: {**a, "lse": a["lse"].double()}, TypeError, "lse"),
    ("lse dtype float16", lambda a: {**a, "lse": a["lse"].half()}, TypeError, "lse"),
    ("lse rank 4", lambda a: {**a, "lse": a["lse"][..., None]}, ValueError, "lse"),
    ("lse other H", lambda a: {**a, "lse": a["lse"][:, :1]}, ValueError, "lse"),
    ("bwd bias shape", lambda a: {**a, "bias": torch.randn(H, N, N + 1)}, ValueError, "bias"),
    ("bwd mask B_ % nW", lambda a: {**a, "mask": torch.zeros(3, N, N)}, ValueError, "nW"),
    ("bwd logit_scale shape", lambda a: {**a, "logit_scale": torch.zeros(H + 1)}, ValueError, "logit_scale"),
    ("bwd scale nan", lambda a: {**a, "scale": float("nan")}, ValueError, "scale"),
    ("bwd k dtype", lambda a: {**a, "k": a["k"].double()}, TypeError, "k"),
]


@pytest.mark.parametrize("desc,mutate,exc,arg", BWD_BAD, ids=[b[0] for b in BWD_BAD])
def test_bwd_op_bad_argument(desc, mutate, exc, arg):
    dout, q, k, v, out, lse = _fwd_for_bwd()
    a = dict(dout=dout, q=q, k=k, v=v, out=out, lse=lse, bias=None, mask=None, logit_scale=None, scale=0.25)
    a = mutate(a)
    with pytest.raises(exc, match=names(arg)):
        torch.ops.flash_window_attn.window_attention_bwd(
            a["dout"], a["q"], a["k"], a["v"], a["out"], a["lse"], a["bias"], a["mask"], a["logit_scale"],
            a["scale"])


# ------------------------------------------------------------------------------------------------
# Empty tensors: B_ = 0 (and H = 0) return empty results of the right shape, forward and backward
# ------------------------------------------------------------------------------------------------


def _zero_window_case(device, dtype, layout, version, bias_shape, ls_shape):
    g = torch.Generator().manual_seed(1)
    if layout == "packed":
        qkv_t = torch.randn(0, N, 3 * H * D, generator=g).to(device=device, dtype=dtype).requires_grad_(True)
        q, k, v = qkv_t.reshape(0, N, 3, H, D).permute(2, 0, 3, 1, 4)
        leaves = [qkv_t]
    else:
        q, k, v = (torch.randn(0, H, N, D, generator=g).to(device=device, dtype=dtype).requires_grad_(True)
                   for _ in range(3))
        leaves = [q, k, v]
    bias = torch.randn(bias_shape, generator=g).to(device).requires_grad_(True)
    mask = torch.zeros(NW, N, N, device=device)
    ls = None
    if version == "v2":
        ls = torch.full(ls_shape, math.log(10.0), device=device).requires_grad_(True)
    return q, k, v, bias, mask, ls, leaves


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16, torch.float16], ids=str)
@pytest.mark.parametrize("layout", ["contiguous", "packed"])
@pytest.mark.parametrize("version", ["v1", "v2"])
def test_zero_windows_variants(dtype, layout, version):
    """B_ = 0 on the CPU for every dtype and layout: out is (0, H, N, d) in q's dtype; the backward
    gives empty q/k/v gradients and zero dbias / dlogit_scale of the inputs' shapes and dtypes."""
    q, k, v, bias, mask, ls, leaves = _zero_window_case("cpu", dtype, layout, version, (1, H, N, N), (1, H, 1, 1))
    out = window_attention(q, k, v, bias, mask, logit_scale=ls)
    assert out.shape == (0, H, N, D) and out.dtype == dtype and out.device == q.device
    wrt = [q, k, v, bias] + ([ls] if ls is not None else [])
    grads = torch.autograd.grad(out, wrt, torch.zeros_like(out), retain_graph=True)
    for g_, t in zip(grads, wrt):
        assert g_.shape == t.shape and g_.dtype == t.dtype, (g_.shape, t.shape, g_.dtype, t.dtype)
    assert torch.equal(grads[3], torch.zeros_like(bias))
    if ls is not None:
        assert torch.equal(grads[4], torch.zeros_like(ls))
    out.sum().backward()  # through .sum(): an expanded (stride 0) empty gradient
    for leaf in leaves:
        assert leaf.grad is not None and leaf.grad.shape == leaf.shape


def test_zero_windows_bwd_op():
    """The backward op on its own with B_ = 0."""
    q, k, v = qkv(shape=(0, H, N, D))
    bias, ls = torch.randn(H, N, N), torch.zeros(H)
    out, lse, _ = torch.ops.flash_window_attn.window_attention_fwd(q, k, v, bias, None, ls, 1.0)
    assert out.shape == (0, H, N, D) and lse.shape == (0, H, N) and lse.dtype == torch.float32
    dq, dk, dv, dbias, dls = torch.ops.flash_window_attn.window_attention_bwd(
        torch.empty_like(q), q, k, v, out, lse, bias, None, ls, 1.0)
    assert dq.shape == dk.shape == dv.shape == (0, H, N, D)
    assert torch.equal(dbias, torch.zeros_like(bias)) and torch.equal(dls, torch.zeros_like(ls))


def _zero_heads(device):
    """H = 0 (an empty tensor too): an empty result, or a ValueError naming H. Never a crash."""
    q, k, v = (torch.randn(B_, 0, N, D, device=device).requires_grad_(True) for _ in range(3))
    bias = torch.randn(0, N, N, device=device, requires_grad=True)
    ls = torch.zeros(0, device=device, requires_grad=True)
    try:
        out = window_attention(q, k, v, bias, torch.zeros(NW, N, N, device=device), logit_scale=ls)
    except ValueError as e:
        assert re.search(names("H"), str(e)), str(e)
        return "rejected"
    assert out.shape == (B_, 0, N, D)
    grads = torch.autograd.grad(out, [q, k, v, bias, ls], torch.zeros_like(out))
    assert [tuple(g_.shape) for g_ in grads] == [tuple(t.shape) for t in (q, k, v, bias, ls)]
    return "empty"


def test_zero_heads_cpu():
    _zero_heads("cpu")


# ------------------------------------------------------------------------------------------------
# CUDA: more device mixes, strides, empty tensors
# ------------------------------------------------------------------------------------------------


@pytest.mark.cuda
@pytest.mark.parametrize("arg", ["dout", "out", "lse"])
def test_cuda_bwd_op_device_mismatch(arg):
    dout, q, k, v, out, lse = _fwd_for_bwd(torch.float16, "cuda")
    a = dict(dout=dout, out=out, lse=lse)
    a[arg] = a[arg].cpu()
    with pytest.raises(ValueError, match=names(arg)):
        torch.ops.flash_window_attn.window_attention_bwd(a["dout"], q, k, v, a["out"], a["lse"],
                                                          None, None, None, 0.25)


@pytest.mark.cuda
@pytest.mark.parametrize("arg", ["q", "k", "v"])
def test_cuda_non_unit_last_stride(arg):
    a = good("cuda", torch.float16)
    a[arg] = torch.randn(B_, H, N, 2 * D, device="cuda", dtype=torch.float16)[..., ::2]
    with pytest.raises(ValueError, match=names(arg)):
        call(a)


@pytest.mark.cuda
@pytest.mark.parametrize("dtype", [torch.float16, torch.float32], ids=str)
@pytest.mark.parametrize("n", [16, 100])
def test_cuda_bwd_op_unusual_out_and_lse_strides(dtype, n):
    """The raw backward op given an `out` with a non-unit last stride or a non-contiguous `lse`
    (same values as the forward returned) must either give the same gradients or raise a ValueError
    naming the argument: never read them as if they were dense."""
    g = torch.Generator(device="cpu").manual_seed(3)
    q, k, v, dout = (torch.randn(B_, H, n, D, generator=g).to("cuda", dtype) for _ in range(4))
    fwd, bwd = torch.ops.flash_window_attn.window_attention_fwd, torch.ops.flash_window_attn.window_attention_bwd
    out, lse, _ = fwd(q, k, v, None, None, None, 0.25)
    expected = bwd(dout, q, k, v, out, lse, None, None, None, 0.25)
    out_strided = torch.zeros(B_, H, n, 2 * D, device="cuda", dtype=dtype)[..., ::2]
    out_strided.copy_(out)
    lse_strided = torch.zeros(B_, n, H, device="cuda").transpose(1, 2)
    lse_strided.copy_(lse)
    for name, o, l_ in (("out", out_strided, lse), ("lse", out, lse_strided)):
        try:
            got = bwd(dout, q, k, v, o, l_, None, None, None, 0.25)
        except ValueError as e:
            assert re.search(names(name), str(e)), str(e)
            continue
        for x, y, gname in zip(expected[:3], got[:3], ("dq", "dk", "dv")):
            assert torch.equal(x, y), f"{gname} differs with a strided {name}"


@pytest.mark.cuda
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32], ids=str)
@pytest.mark.parametrize("version", ["v1", "v2"])
def test_cuda_zero_windows_variants(dtype, version):
    q, k, v, bias, mask, ls, leaves = _zero_window_case("cuda", dtype, "packed", version, (H, N, N), (H,))
    out = window_attention(q, k, v, bias, mask, logit_scale=ls)
    assert out.shape == (0, H, N, D) and out.dtype == dtype and out.is_cuda
    wrt = [q, k, v, bias] + ([ls] if ls is not None else [])
    grads = torch.autograd.grad(out.sum(), wrt)
    torch.cuda.synchronize()
    for g_, t in zip(grads, wrt):
        assert g_.shape == t.shape and g_.dtype == t.dtype and g_.is_cuda
    assert torch.equal(grads[3], torch.zeros_like(bias))
    if ls is not None:
        assert torch.equal(grads[4], torch.zeros_like(ls))


@pytest.mark.cuda
def test_cuda_zero_heads_in_subprocess():
    """H = 0 on CUDA: an empty result or a ValueError naming H, never a crash (run in a child
    process so that a crash, e.g. a division by zero in grid planning, fails this test only)."""
    import subprocess
    import sys

    code = (
        "import sys, torch; sys.path.insert(0, {tests!r}); import test_errors as t\n"
        "for dt in (torch.float16, torch.bfloat16, torch.float32):\n"
        "    torch.set_default_dtype(torch.float32)\n"
        "    q, k, v = (torch.randn(t.B_, 0, t.N, t.D, device='cuda', dtype=dt, requires_grad=True) for _ in range(3))\n"
        "    try:\n"
        "        out = t.window_attention(q, k, v, torch.randn(0, t.N, t.N, device='cuda', requires_grad=True),\n"
        "                                 logit_scale=torch.zeros(0, device='cuda', requires_grad=True))\n"
        "    except ValueError as e:\n"
        "        assert 'H' in str(e), str(e); print(dt, 'rejected'); continue\n"
        "    assert out.shape == (t.B_, 0, t.N, t.D), out.shape\n"
        "    out.sum().backward(); torch.cuda.synchronize(); print(dt, 'empty')\n"
    ).format(tests=os.path.dirname(os.path.abspath(__file__)))
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, (f"H = 0 on CUDA: exit code {res.returncode}\n"
                                 f"stdout:\n{res.stdout}\nstderr:\n{res.stderr[-4000:]}")


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available() or torch.cuda.device_count() < 2,
                    reason="needs 2 CUDA devices")
@pytest.mark.parametrize("arg", ["k", "v", "bias", "mask", "logit_scale"])
def test_cuda_second_device_mismatch(arg):
    a = good("cuda:0", torch.float16)
    a[arg] = a[arg].to("cuda:1")
    with pytest.raises(ValueError, match=names(arg)):
        call(a)
