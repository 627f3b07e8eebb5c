"""The fused Swin V2 continuous-position-bias op (``swin_cpb_bias``, csrc/ops/swin_cpb.cpp) against
the plain formula ``16 * sigmoid(mlp(coords))[index].permute(2, 0, 1)``: values, the gradients of
the MLP's parameters (and gradcheck in float64), determinism, errors, opcheck, and its use by the
drop-in modules (with the plain path where the MLP has hooks)."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from flash_window_attn import _swin_common as common

OP = torch.ops.flash_window_attn.swin_cpb_bias
BWD = torch.ops.flash_window_attn.swin_cpb_bias_backward

DEVICES = [pytest.param("cpu", id="cpu"), pytest.param("cuda", id="cuda", marks=pytest.mark.cuda)]


def _coords_index(wh, ww, device, dtype):
    from flash_window_attn.modules import _relative_position_index

    rh = torch.arange(-(wh - 1), wh, dtype=torch.float32)
    rw = torch.arange(-(ww - 1), ww, dtype=torch.float32)
    table = torch.stack(torch.meshgrid(rh, rw, indexing="ij")).permute(1, 2, 0).unsqueeze(0)
    table = table / torch.tensor([max(wh - 1, 1), max(ww - 1, 1)]) * 8
    table = torch.sign(table) * torch.log2(table.abs() + 1.0) / 3
    return table.to(device, dtype), _relative_position_index(wh, ww).to(device)


def _mlp(H, hidden, device, dtype, seed=0, bias=True):
    torch.manual_seed(seed)
    return nn.Sequential(nn.Linear(2, hidden, bias=bias), nn.ReLU(inplace=True),
                         nn.Linear(hidden, H, bias=False)).to(device, dtype)


def _plain(mlp, coords, index, H):
    n = index.shape[0]
    table = 16 * torch.sigmoid(mlp(coords).view(-1, H))
    return table[index.reshape(-1)].view(n, n, H).permute(2, 0, 1)


def _skip(device):
    if device == "cuda" and not torch.cuda.is_available():
        pytest.skip("CUDA GPU not available")


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("window,H,with_b1", [((7, 7), 3, True), ((8, 8), 4, True), ((12, 16), 6, True),
                                               ((4, 6), 2, False)])
def test_matches_plain_formula(device, window, H, with_b1):
    _skip(device)
    dtype = torch.float32
    coords, index = _coords_index(*window, device, dtype)
    mlp = _mlp(H, 64, device, dtype, bias=with_b1)
    g = torch.randn(H, index.shape[0], index.shape[0], device=device, dtype=dtype)
    got = OP(coords, mlp[0].weight, mlp[0].bias, mlp[2].weight, index)
    params = [p for p in mlp.parameters()]
    gg = torch.autograd.grad(got, params, g)
    want = _plain(mlp, coords, index, H)
    gw = torch.autograd.grad(want, params, g)
    assert got.shape == want.shape and got.is_contiguous()
    torch.testing.assert_close(got, want, rtol=1e-6, atol=1e-6)
    for a, b in zip(gg, gw):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-5)
    again = torch.autograd.grad(OP(coords, mlp[0].weight, mlp[0].bias, mlp[2].weight, index), params, g)
    for a, b in zip(gg, again):
        assert torch.equal(a, b), "backward not bitwise deterministic"


def test_gradcheck_float64():
    coords, index = _coords_index(3, 4, "cpu", torch.float64)
    mlp = _mlp(2, 8, "cpu", torch.float64, seed=3)
    w1, b1, w2 = (p.detach().clone().requires_grad_(True) for p in (mlp[0].weight, mlp[0].bias, mlp[2].weight))
    assert torch.autograd.gradcheck(lambda a, b, c: OP(coords, a, b, c, index), (w1, b1, w2))


def test_opcheck():
    coords, index = _coords_index(3, 3, "cpu", torch.float32)
    mlp = _mlp(2, 16, "cpu", torch.float32)
    args = (coords, mlp[0].weight, mlp[0].bias, mlp[2].weight, index)
    torch.library.opcheck(OP.default, args)
    g = torch.randn(2, 9, 9)
    c = coords.reshape(-1, 2)
    h = torch.relu(c @ mlp[0].weight.t() + mlp[0].bias).detach()
    sig = torch.sigmoid(h @ mlp[2].weight.t()).detach()
    torch.library.opcheck(BWD.default, (g,) + tuple(a.detach() for a in args) + (h, sig))
    torch.library.opcheck(torch.ops.flash_window_attn.swin_cpb_bias_forward.default,
                          tuple(a.detach() for a in args))


def test_errors_name_the_argument():
    coords, index = _coords_index(3, 3, "cpu", torch.float32)
    mlp = _mlp(2, 16, "cpu", torch.float32)
    w1, b1, w2 = mlp[0].weight, mlp[0].bias, mlp[2].weight
    with pytest.raises(ValueError, match="coords must have a last dimension of size 2"):
        OP(coords[..., :1], w1, b1, w2, index)
    with pytest.raises(ValueError, match="w2 must have shape"):
        OP(coords, w1, b1, w2[:, :3], index)
    with pytest.raises(TypeError, match="index must be int64"):
        OP(coords, w1, b1, w2, index.int())
    with pytest.raises(TypeError, match="coords has dtype"):
        OP(coords.double(), w1, b1, w2, index)


def test_module_uses_op_and_hooked_mlp_falls_back():
    """The drop-in computes its bias with the op; with a forward hook on the MLP it takes the plain
    path (the hook runs) and the values are the same."""
    from flash_window_attn.modules import WindowAttention

    torch.manual_seed(0)
    m = WindowAttention(64, (8, 8), 4)
    calls = []
    orig = torch.ops.flash_window_attn.swin_cpb_bias
    b_op = m._compute_relative_position_bias()
    assert common._standard_cpb_mlp(m.cpb_mlp, m.relative_coords_table, 4)
    h = m.cpb_mlp.register_forward_hook(lambda *a: calls.append(1))
    assert not common._standard_cpb_mlp(m.cpb_mlp, m.relative_coords_table, 4)
    b_plain = m._compute_relative_position_bias()
    h.remove()
    assert calls == [1]
    torch.testing.assert_close(b_op, b_plain, rtol=1e-6, atol=1e-6)
    assert orig is torch.ops.flash_window_attn.swin_cpb_bias


@pytest.mark.parametrize("device", DEVICES)
def test_autocast_runs_in_parameter_dtype(device):
    _skip(device)
    coords, index = _coords_index(8, 8, device, torch.float32)
    mlp = _mlp(3, 32, device, torch.float32)
    with torch.autocast(device, dtype=torch.bfloat16):
        b = common.cpb_bias(mlp, coords, index, 3, 64)
    assert b.dtype == torch.float32
    torch.testing.assert_close(b, _plain(mlp, coords, index, 3), rtol=1e-6, atol=1e-6)
