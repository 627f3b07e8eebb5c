"""The forward ops' last result, ``qk_inv_norm``, and the backward ops' optional argument of that name.

Asked for (``return_inv_norms=True``) and for Swin V2 (``logit_scale`` given), the forward returns the
inverse norms ``1 / max(||x||, 1e-12)`` of q's rows ([0]) and k's rows ([1]) it normalised with,
(2, B_, H, N) float32; otherwise an empty (0,) tensor. The autograd functions ask for it whenever a
backward will follow and hand it back to the backward ops, whose CUDA tiled path (N > 64) then reads
out and dout only in its first kernel instead of q, k, out and dout. Given or not, the gradients
are the same to within the norms' rounding.
"""

from __future__ import annotations

import pytest
import torch

from flash_window_attn.testing import make_problem

DEVICES = [
    pytest.param("cpu", id="cpu"),
    pytest.param("cuda", id="cuda", marks=pytest.mark.cuda),
]

ops = torch.ops.flash_window_attn


def _inv_norms64(x: torch.Tensor) -> torch.Tensor:
    return 1.0 / x.double().norm(dim=-1).clamp_min(1e-12)


def _op_args(p):
    det = lambda t: None if t is None else t.detach()  # noqa: E731
    scale = p.scale if p.scale is not None else (1.0 if p.logit_scale is not None else p.q.shape[-1] ** -0.5)
    return [det(t) for t in (p.q, p.k, p.v, p.bias, p.mask, p.logit_scale)] + [scale]


# (B_, H, N, d): the N <= 64 path, the tiled path (one and several key blocks, a narrow last block)
SHAPES = [(6, 2, 49, 32), (4, 3, 144, 32), (2, 2, 100, 64), (2, 1, 300, 16)]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_forward_returns_inverse_norms(device, shape):
    dtype = torch.float32 if device == "cpu" else torch.bfloat16
    p = make_problem(*shape, dtype=dtype, device=device, mask="shift", seed=11)
    # a few rows far from unit norm, and one zero row of q and of k (the eps clamp)
    with torch.no_grad():
        p.q[0, 0, 3].mul_(40.0)
        p.k[-1, -1, 5].mul_(1e-3)
        p.q[1, 0, 7].zero_()
        p.k[0, 1 % shape[1], 2].zero_()
    args = _op_args(p)
    B_, H, N, _ = shape
    results = {
        "fwd": ops.window_attention_fwd(*args, True)[2],
        "dropout_fwd": ops.window_attention_dropout_fwd(*args, 0.0, True)[3],
    }
    for name, got in results.items():
        assert got.shape == (2, B_, H, N) and got.dtype == torch.float32 and got.device == p.q.device, name
        for i, x in enumerate((p.q, p.k)):
            want = _inv_norms64(x)
            # fp32 sums of squares and (CUDA) rsqrt.approx: a few ulp of float32
            torch.testing.assert_close(got[i].double(), want, rtol=4e-6, atol=0.0, msg=f"{name} [{i}]")
        inv_eps = torch.tensor(1e12).item()   # float32(1 / eps)
        assert got[0, 1, 0, 7].item() == inv_eps and got[1, 0, 1 % shape[1], 2].item() == inv_eps, name


@pytest.mark.parametrize("device", DEVICES)
def test_packed_forward_returns_inverse_norms(device):
    dtype = torch.float32 if device == "cpu" else torch.float16
    p = make_problem(4, 3, 144, 32, dtype=dtype, device=device, mask="shift", layout="packed", seed=3)
    qkv = p.qkv.detach()
    got = ops.window_attention_qkvpacked_fwd(qkv, 3, p.bias.detach(), p.mask, p.logit_scale.detach(), 1.0, 0.0, True)[3]
    assert got.shape == (2, 4, 3, 144)
    torch.testing.assert_close(got[0].double(), _inv_norms64(p.q), rtol=4e-6, atol=0.0)
    torch.testing.assert_close(got[1].double(), _inv_norms64(p.k), rtol=4e-6, atol=0.0)


@pytest.mark.parametrize("device", DEVICES)
def test_v1_returns_empty(device):
    dtype = torch.float32 if device == "cpu" else torch.float16
    p = make_problem(4, 2, 100, 32, dtype=dtype, device=device, version="v1", seed=2)
    args = _op_args(p)
    for got in (ops.window_attention_fwd(*args, True)[2], ops.window_attention_dropout_fwd(*args, 0.0, True)[3]):
        assert got.shape == (0,) and got.dtype == torch.float32


@pytest.mark.parametrize("device", DEVICES)
def test_not_asked_returns_empty(device):
    """Without return_inv_norms the result is empty, also where autograd records a backward (the
    node then keeps the norms for itself)."""
    dtype = torch.float32 if device == "cpu" else torch.float16
    p = make_problem(4, 2, 100, 32, dtype=dtype, device=device, mask="shift", seed=2)
    args = _op_args(p)
    assert ops.window_attention_fwd(*args)[2].shape == (0,)
    assert ops.window_attention_dropout_fwd(*args, 0.0)[3].shape == (0,)
    q, k, v = (t.detach().requires_grad_() for t in args[:3])
    out, lse, norms = ops.window_attention_fwd(q, k, v, *args[3:])
    assert norms.shape == (0,) and out.requires_grad
    out2, _, norms2 = ops.window_attention_fwd(q, k, v, *args[3:], True)
    assert norms2.shape == (2, 4, 2, 100)
    g1 = torch.autograd.grad(out, [q, k, v], p.dout)
    g2 = torch.autograd.grad(out2, [q, k, v], p.dout)
    assert all(torch.equal(a, b) for a, b in zip(g1, g2))


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_backward_with_and_without_given_norms(device, shape):
    """The raw backward op given the forward's norms agrees with the one computing its own."""
    dtype = torch.float32 if device == "cpu" else torch.float16
    p = make_problem(*shape, dtype=dtype, device=device, mask="shift", seed=5)
    args = _op_args(p)
    out, lse, norms = ops.window_attention_fwd(*args, True)
    own = ops.window_attention_bwd(p.dout, *args[:3], out, lse, *args[3:])
    given = ops.window_attention_bwd(p.dout, *args[:3], out, lse, *args[3:], norms)
    for name, a, b in zip(("dq", "dk", "dv", "dbias", "dlogit_scale"), own, given):
        # CPU: bitwise (it recomputes them); CUDA: the norms differ by float32 rounding, which moves
        # the recomputed logits by ~1e-7 of their size (|S| <= ~100): far inside fp16 rounding
        scale = a.float().abs().max().item()
        err = (a.float() - b.float()).abs().max().item()
        if device == "cpu":
            assert err == 0.0, name
        else:
            assert err <= 2e-3 * scale, (name, err, scale)


def test_backward_argument_errors():
    p = make_problem(2, 2, 16, 16, mask=None, seed=1)
    args = _op_args(p)
    out, lse, norms = ops.window_attention_fwd(*args, True)
    bwd = ops.window_attention_bwd
    with pytest.raises(ValueError, match=r"qk_inv_norm must have shape \(2, B_, H, N\) = \(2, 2, 2, 16\)"):
        bwd(p.dout, *args[:3], out, lse, *args[3:], norms[:1])
    with pytest.raises(TypeError, match="qk_inv_norm must have dtype float32"):
        bwd(p.dout, *args[:3], out, lse, *args[3:], norms.double())
    # the empty tensor and None both mean "not given"
    a = bwd(p.dout, *args[:3], out, lse, *args[3:], torch.empty(0))
    b = bwd(p.dout, *args[:3], out, lse, *args[3:], None)
    assert all(torch.equal(x, y) for x, y in zip(a, b))
    v1 = make_problem(2, 2, 16, 16, version="v1", mask=None, seed=1)
    a1 = _op_args(v1)
    o1, l1, n1 = ops.window_attention_fwd(*a1, True)
    with pytest.raises(ValueError, match="qk_inv_norm must be None or empty without logit_scale"):
        bwd(v1.dout, *a1[:3], o1, l1, *a1[3:], norms)
    bwd(v1.dout, *a1[:3], o1, l1, *a1[3:], n1)   # V1's own empty result is accepted


@pytest.mark.cuda
def test_cuda_backward_norms_device_mismatch():
    p = make_problem(2, 2, 100, 32, dtype=torch.float16, device="cuda", seed=4)
    args = _op_args(p)
    out, lse, norms = ops.window_attention_fwd(*args, True)
    with pytest.raises(ValueError, match="qk_inv_norm"):
        ops.window_attention_bwd(p.dout, *args[:3], out, lse, *args[3:], norms.cpu())
