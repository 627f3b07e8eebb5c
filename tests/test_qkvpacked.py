"""The packed-qkv op (``window_attention_qkvpacked``, ops ``window_attention_qkvpacked_fwd/_bwd``).

It runs the same kernels as ``window_attention`` on the q, k, v views of one (B_, N, 3 * H * d)
tensor and returns the gradient of that tensor in its own layout. So its output and every gradient
must equal, bitwise, ``window_attention`` on the views (whose numerics against the float64 reference
are tested in test_window_attention.py / test_random_problems.py); plus: dqkv's layout, strided qkv,
dropout with the same generator draws, the argument errors, opcheck and torch.compile.
"""

from __future__ import annotations

import pytest
import torch

from flash_window_attn import window_attention, window_attention_qkvpacked
from flash_window_attn.reference import window_attention_reference

DEVICES = [
    pytest.param("cpu", id="cpu"),
    pytest.param("cuda", id="cuda", marks=pytest.mark.cuda),
]
DTYPES = {"cpu": [torch.float32, torch.float64], "cuda": [torch.float16, torch.bfloat16, torch.float32]}

CASES = [  # (B_, H, N, d, version, bias, nW)
    (8, 3, 49, 32, "v2", True, 4),
    (4, 2, 64, 16, "v1", True, None),
    (6, 4, 100, 32, "v2", False, 2),
    (2, 2, 144, 64, "v1", False, None),
    (3, 1, 7, 24, "v2", True, 1),
]


def _inputs(B_, H, N, d, version, with_bias, nW, dtype, device, seed=0, row_pad=0):
    g = torch.Generator().manual_seed(seed)
    c3 = 3 * H * d
    base = torch.randn(B_, N, c3 + row_pad, generator=g, dtype=torch.float64)
    qkv = base.to(device=device, dtype=dtype)[..., :c3].detach().requires_grad_(True)
    bias = torch.randn(H, N, N, generator=g).to(device).requires_grad_(True) if with_bias else None
    mask = None
    if nW:
        mask = torch.where(torch.rand(nW, N, N, generator=g) < 0.3, -100.0, 0.0).to(device)
    kw = {}
    if version == "v2":
        kw["logit_scale"] = (torch.rand(H, 1, 1, generator=g) + 1.5).to(device).requires_grad_(True)
    else:
        kw["scale"] = d ** -0.5
    dout = torch.randn(B_, H, N, d, generator=g, dtype=torch.float64).to(device=device, dtype=dtype)
    return qkv, bias, mask, kw, dout


def _views(qkv, H):
    B_, N, c3 = qkv.shape
    return qkv.reshape(B_, N, 3, H, c3 // (3 * H)).permute(2, 0, 3, 1, 4).unbind(0)


def _grads(out, dout, leaves):
    leaves = [t for t in leaves if t is not None and t.requires_grad]
    return torch.autograd.grad(out, leaves, dout)


def _skip_unsupported(device, dtype):
    if device == "cuda" and not torch.cuda.is_available():
        pytest.skip("CUDA GPU not available")


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("case", CASES, ids=[f"B{c[0]}-H{c[1]}-N{c[2]}-d{c[3]}-{c[4]}" for c in CASES])
@pytest.mark.parametrize("row_pad", [0, 8], ids=["contiguous", "strided"])
def test_equals_window_attention_on_views(device, case, row_pad):
    """Output, dqkv, dbias, dlogit_scale: bitwise those of window_attention on the q, k, v views."""
    B_, H, N, d, version, with_bias, nW = case
    for dtype in DTYPES[device]:
        _skip_unsupported(device, dtype)
        qkv, bias, mask, kw, dout = _inputs(B_, H, N, d, version, with_bias, nW, dtype, device, row_pad=row_pad)
        out = window_attention_qkvpacked(qkv, H, bias, mask, **kw)
        leaves = [qkv, bias, kw.get("logit_scale")]
        grads = _grads(out, dout, leaves)

        qkv2 = qkv.detach().clone().requires_grad_(True) if row_pad == 0 else qkv.detach().requires_grad_(True)
        ref_out = window_attention(*_views(qkv2, H), bias, mask, **kw)
        ref_grads = _grads(ref_out, dout, [qkv2, bias, kw.get("logit_scale")])

        assert out.shape == (B_, H, N, d) and out.dtype == dtype
        assert out.transpose(1, 2).is_contiguous(), "out must be laid out (B_, N, H, d)"
        assert torch.equal(out, ref_out), f"{dtype}: out differs"
        dqkv = grads[0]
        assert dqkv.shape == qkv.shape and dqkv.dtype == dtype and dqkv.is_contiguous()
        for i, (a, b) in enumerate(zip(grads, ref_grads)):
            assert a.dtype == b.dtype and torch.equal(a, b), f"{dtype}: gradient {i} differs"


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("version", ["v1", "v2"])
def test_inference_calls_and_offset_views(device, version):
    """Calls with nothing to differentiate (under no_grad, or no input requiring grad) skip the
    autograd node: the same output bits as a differentiable call, no grad_fn. And a qkv view that
    starts inside its storage (nonzero storage offset, strided rows) reads the right thirds: its
    output and gradients equal window_attention on the q, k, v views, bitwise."""
    B_, H, N, d, nW = 6, 3, 100, 32, 3
    for dtype in DTYPES[device]:
        _skip_unsupported(device, dtype)
        qkv, bias, mask, kw, dout = _inputs(B_, H, N, d, version, True, nW, dtype, device, seed=5)
        g = torch.Generator().manual_seed(6)
        base = torch.randn(B_, N, 3 * H * d + 24, generator=g).to(device=device, dtype=dtype)
        off = base[..., 16:16 + 3 * H * d]
        assert off.storage_offset() == 16
        with torch.no_grad():
            y_nograd = window_attention_qkvpacked(off, H, bias, mask, **kw)
            y_views_nograd = window_attention(*_views(off, H), bias, mask, **kw)
        assert y_nograd.grad_fn is None and not y_nograd.requires_grad
        # grad mode on, nothing requires grad: no node either
        kw_detached = {k: (v.detach() if torch.is_tensor(v) else v) for k, v in kw.items()}
        y_plain = window_attention_qkvpacked(off, H, bias.detach(), mask, **kw_detached)
        assert y_plain.grad_fn is None and not y_plain.requires_grad
        # the differentiable call on the same view
        leaf = off.detach().requires_grad_(True)
        y = window_attention_qkvpacked(leaf, H, bias, mask, **kw)
        assert y.grad_fn is not None
        assert torch.equal(y, y_nograd) and torch.equal(y, y_plain) and torch.equal(y, y_views_nograd)
        grads = _grads(y, dout, [leaf, bias, kw.get("logit_scale")])
        leaf2 = off.detach().requires_grad_(True)
        ref = window_attention(*_views(leaf2, H), bias, mask, **kw)
        ref_grads = _grads(ref, dout, [leaf2, bias, kw.get("logit_scale")])
        assert torch.equal(y, ref)
        for i, (a, b) in enumerate(zip(grads, ref_grads)):
            assert torch.equal(a, b), f"{dtype}: gradient {i} differs"


@pytest.mark.parametrize("device", DEVICES)
def test_matches_float64_reference(device):
    """A direct check against the plain-PyTorch formula too (not only against the unpacked op)."""
    _skip_unsupported(device, None)
    B_, H, N, d = 4, 3, 49, 32
    dtype = torch.float32
    qkv, bias, mask, kw, dout = _inputs(B_, H, N, d, "v2", True, 2, dtype, device, seed=3)
    out = window_attention_qkvpacked(qkv, H, bias, mask, **kw)
    dqkv, dbias, dls = _grads(out, dout, [qkv, bias, kw["logit_scale"]])

    q64 = qkv.detach().double().cpu().requires_grad_(True)
    b64 = bias.detach().double().cpu().requires_grad_(True)
    ls64 = kw["logit_scale"].detach().double().cpu().requires_grad_(True)
    ref = window_attention_reference(*_views(q64, H), b64, mask.double().cpu(), logit_scale=ls64)
    rq, rb, rls = torch.autograd.grad(ref, [q64, b64, ls64], dout.double().cpu())
    tol = dict(rtol=1e-4, atol=1e-4)
    torch.testing.assert_close(out.double().cpu(), ref, **tol)
    torch.testing.assert_close(dqkv.double().cpu(), rq, **tol)
    torch.testing.assert_close(dbias.double().cpu(), rb, rtol=1e-4, atol=1e-3)
    torch.testing.assert_close(dls.double().cpu(), rls, rtol=1e-4, atol=1e-3)


@pytest.mark.parametrize("device", DEVICES)
def test_dropout_same_draws_as_window_attention(device):
    """With dropout, the packed op draws its mask like window_attention: the same seed gives
    bitwise the same output and gradients."""
    _skip_unsupported(device, None)
    dtype = torch.float32 if device == "cpu" else torch.bfloat16
    B_, H, N, d = 4, 2, 64, 32
    qkv, bias, mask, kw, dout = _inputs(B_, H, N, d, "v2", True, 2, dtype, device, seed=5)
    torch.manual_seed(123)
    out = window_attention_qkvpacked(qkv, H, bias, mask, dropout_p=0.3, **kw)
    g = _grads(out, dout, [qkv, bias, kw["logit_scale"]])
    qkv2 = qkv.detach().clone().requires_grad_(True)
    torch.manual_seed(123)
    ref = window_attention(*_views(qkv2, H), bias, mask, dropout_p=0.3, **kw)
    rg = _grads(ref, dout, [qkv2, bias, kw["logit_scale"]])
    assert torch.equal(out, ref)
    for a, b in zip(g, rg):
        assert torch.equal(a, b)
    torch.manual_seed(124)
    other = window_attention_qkvpacked(qkv, H, bias, mask, dropout_p=0.3, **kw)
    assert not torch.equal(out, other), "a different seed must draw a different mask"


def test_errors_name_the_argument():
    qkv = torch.randn(2, 49, 3 * 2 * 32)
    with pytest.raises(ValueError, match="qkv must be a 3-D tensor"):
        window_attention_qkvpacked(qkv.unsqueeze(0), 2)
    with pytest.raises(ValueError, match=r"not divisible by 3 \* num_heads = 15"):
        window_attention_qkvpacked(qkv, 5)
    with pytest.raises(ValueError, match="num_heads must be >= 1"):
        window_attention_qkvpacked(qkv, 0)
    with pytest.raises(TypeError, match="num_heads must be an int"):
        window_attention_qkvpacked(qkv, 2.0)
    with pytest.raises(TypeError, match="qkv must be a torch.Tensor"):
        window_attention_qkvpacked(qkv.numpy(), 2)
    with pytest.raises(ValueError, match="qkv must have a unit stride in its last dimension"):
        window_attention_qkvpacked(torch.randn(2, 49, 2 * 3 * 2 * 32)[..., ::2], 2)
    with pytest.raises(ValueError, match="give either scale"):
        window_attention_qkvpacked(qkv, 2, scale=0.1, logit_scale=torch.ones(2))
    with pytest.raises((TypeError, ValueError), match="dtype"):
        window_attention_qkvpacked(qkv.to(torch.int32), 2)
    with pytest.raises(ValueError, match="head dim|head_dim|d ="):
        window_attention_qkvpacked(torch.randn(2, 49, 3 * 2 * 12), 2)   # d = 12: not a multiple of 8


def test_opcheck():
    B_, H, N, d = 2, 2, 16, 16
    qkv, bias, mask, kw, dout = _inputs(B_, H, N, d, "v2", True, 2, torch.float32, "cpu")
    args = (qkv, H, bias, mask, kw["logit_scale"], 1.0, 0.0)
    torch.library.opcheck(torch.ops.flash_window_attn.window_attention_qkvpacked_fwd.default, args)
    torch.library.opcheck(torch.ops.flash_window_attn.window_attention_qkvpacked_fwd.default, args + (True,))
    out, lse, rng, qk_inv_norm = torch.ops.flash_window_attn.window_attention_qkvpacked_fwd(*args, True)
    assert qk_inv_norm.shape == (2, B_, H, N) and qk_inv_norm.dtype == torch.float32
    bargs = (dout, qkv.detach(), out.detach(), lse.detach(), bias.detach(), mask, kw["logit_scale"].detach(), 1.0, H,
             0.0, rng)
    torch.library.opcheck(torch.ops.flash_window_attn.window_attention_qkvpacked_bwd.default, bargs)
    torch.library.opcheck(torch.ops.flash_window_attn.window_attention_qkvpacked_bwd.default, bargs + (qk_inv_norm,))


@pytest.mark.parametrize("dynamic", [False, True], ids=["static", "dynamic"])
def test_compile_fullgraph(dynamic):
    torch._dynamo.reset()
    H = 2

    def f(qkv, bias, mask, ls):
        return window_attention_qkvpacked(qkv, H, bias, mask, logit_scale=ls).sum()

    cf = torch.compile(f, fullgraph=True, dynamic=dynamic, backend="aot_eager")
    for B_ in (4, 6):
        qkv, bias, mask, kw, _ = _inputs(B_, H, 49, 16, "v2", True, 2, torch.float32, "cpu", seed=B_)
        got = cf(qkv, bias, mask, kw["logit_scale"])
        g = torch.autograd.grad(got, [qkv, bias, kw["logit_scale"]])
        want = f(qkv, bias, mask, kw["logit_scale"])
        w = torch.autograd.grad(want, [qkv, bias, kw["logit_scale"]])
        torch.testing.assert_close(got, want)
        for a, b in zip(g, w):
            torch.testing.assert_close(a, b)


def test_compile_dynamic_no_recompile_over_n():
    """dynamic=True: one graph serves other B_ and N. The C++ autograd's backward may look at
    dout's last stride only: reading all its strides (Tensor::stride) specialised the graph on N."""
    torch._dynamo.reset()
    H = 2

    def f(qkv, bias, mask, ls):
        return window_attention_qkvpacked(qkv, H, bias, mask, logit_scale=ls)

    cf = torch.compile(f, fullgraph=True, dynamic=True, backend="aot_eager")
    for i, (B_, N) in enumerate([(4, 49), (6, 64), (4, 100)]):
        qkv, bias, mask, kw, dout = _inputs(B_, H, N, 16, "v2", True, 2, torch.float32, "cpu", seed=B_ + N)
        leaves = [qkv, bias, kw["logit_scale"]]
        with torch._dynamo.config.patch(error_on_recompile=i > 0):
            got = cf(qkv, bias, mask, kw["logit_scale"])
            g = _grads(got, dout, leaves)
        want = f(qkv, bias, mask, kw["logit_scale"])
        torch.testing.assert_close(got, want)
        for a, b in zip(g, _grads(want, dout, leaves)):
            torch.testing.assert_close(a, b)


def _autograd_node_names(t):
    seen, stack = set(), [t.grad_fn]
    while stack:
        f = stack.pop()
        if f is None or f in seen:
            continue
        seen.add(f)
        stack.extend(g for g, _ in f.next_functions)
    return {f.name() for f in seen}


@pytest.mark.parametrize("version", ["v2", "v1"])
def test_dropin_graph_has_no_qkv_stack_or_bias_chain(version):
    """The timm drop-ins' backward graph: the packed op (no UnbindBackward / stack of dq, dk, dv,
    no copy back into the projection's layout) and, for V2, the one-node CPB op (no per-op chain)."""
    from flash_window_attn.modules import WindowAttention, WindowAttentionV1

    torch.manual_seed(0)
    m = WindowAttention(64, (8, 8), 2) if version == "v2" else WindowAttentionV1(64, 2, window_size=8)
    x = torch.randn(4, 64, 64, requires_grad=True)
    names = _autograd_node_names(m(x, torch.zeros(2, 64, 64)))
    assert any("QkvPackedFunction" in n for n in names), names
    assert not any(n.startswith(("UnbindBackward", "StackBackward", "CloneBackward"))
                   for n in names), names
    if version == "v2":
        assert any("CpbBiasFunction" in n for n in names), names
        assert not any(n.startswith(("SigmoidBackward", "IndexBackward", "ReluBackward")) for n in names), names
