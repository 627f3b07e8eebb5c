"""The fused Swin V2 continuous-position-bias op (``swin_cpb_bias``, csrc/ops/swin_cpb.cpp) against
the plain formula ``16 * sigmoid(mlp(coords))[index].permute(2, 0, 1)``: values, the gradients of
the MLP's parameters (and gradcheck in float64), determinism, errors, opcheck, and its use by the
drop-in modules (with the plain path where the MLP has hooks)."""

from __future__ import annotations

import copy
import os
import sys

import pytest
import torch
from torch import nn

from flash_window_attn import _swin_common as common

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "benchmarks"))
import _bench_common  # noqa: E402  (the benchmarks' CUDA-graph capture)

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
        if device == "cpu":   # the same ATen operations, but their sums of ~N^2 terms are split
            # by thread count (16 threads: ~6e-7 of the largest gradient at 12 x 16, 0 at 2 threads)
            torch.testing.assert_close(a, b, rtol=0, atol=1e-5 * b.abs().max().item())
        else:   # the fused kernels sum in another order than cuBLAS: both within float32 rounding of
            # sums with cancellation (test_cuda_fp32_vs_float64 holds the fused ones to float64)
            torch.testing.assert_close(a, b, rtol=0, atol=1e-4 * b.abs().max().item())
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


BATCH_FWD = torch.ops.flash_window_attn.swin_cpb_bias_batch_forward
BATCH_BWD = torch.ops.flash_window_attn.swin_cpb_bias_batch_backward
# (window, heads) of a batch's layers: timm swinv2_tiny_window16's four stages and base_window12's,
# a non-square window, and a layer past 32 heads (the MLP backward's other CTA shape)
BATCH_LAYERS = [((16, 16), 3), ((16, 16), 6), ((8, 8), 24), ((12, 12), 16), ((6, 6), 32), ((4, 6), 5),
                ((12, 12), 48)]


def _batch_case(device, layers, seed=0, permute=()):
    """Per-layer (coords, w1, b1, w2, index) and dbias grads (every third one a strided view)."""
    args, grads = [], []
    for i, (window, H) in enumerate(layers):
        coords, index = _coords_index(*window, device, torch.float32)
        if i in permute:   # an index that is not Swin's formula: the backward's CSR walk
            perm = torch.randperm(index.numel(), generator=torch.Generator().manual_seed(i)).to(device)
            index = index.reshape(-1)[perm].view_as(index).contiguous()
        mlp = _mlp(H, 64 if i % 2 else 512, device, torch.float32, seed=seed + i)
        args.append((coords, mlp[0].weight.detach(), mlp[0].bias.detach(), mlp[2].weight.detach(), index))
        n = index.shape[0]
        g = torch.randn(H, n, n, generator=torch.Generator().manual_seed(100 + i)).to(device)
        grads.append(g.transpose(1, 2) if i % 3 == 2 else g)
    return args, grads


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("form", ["windows", "one-permuted", "many-layers", "many-of-one-class"])
def test_batch_ops_are_the_one_layer_ops(device, form):
    """swin_cpb_bias_batch_forward / _backward give each layer bitwise what the one-layer ops give
    it: on CUDA batched launches for all layers (Swin window indices; the MLP backward grouped by
    head-count class; more layers than one launch takes, in all or in one class: several
    launches), or layer by layer where one layer's index needs the CSR walk; on the CPU layer by
    layer."""
    _skip(device)
    layers = {"many-layers": BATCH_LAYERS * 3,
              "many-of-one-class": [((8, 8), 12)] * 18 + [((4, 4), 3)]}.get(form, BATCH_LAYERS)
    args, grads = _batch_case(device, layers, permute=(1,) if form == "one-permuted" else ())
    lists = [list(a) for a in zip(*args)]
    bias, h, sig = BATCH_FWD(*lists)
    dw1, db1, dw2 = BATCH_BWD(grads, *lists, h, sig)
    for i, (a, g) in enumerate(zip(args, grads)):
        b1_, h1, s1 = torch.ops.flash_window_attn.swin_cpb_bias_forward(*a)
        for name, x, y in (("bias", bias[i], b1_), ("h", h[i], h1), ("sig", sig[i], s1)):
            assert torch.equal(x, y), f"layer {i}: {name} differs"
        want = BWD(g, *a, h1, s1)
        for name, x, y in (("dw1", dw1[i], want[0]), ("db1", db1[i], want[1]), ("dw2", dw2[i], want[2])):
            assert x.shape == y.shape and torch.equal(x, y), f"layer {i}: {name} differs"
        assert torch.isfinite(dw2[i]).all() and dw2[i].abs().max() > 0


def test_batch_ops_errors_and_opcheck():
    args, grads = _batch_case("cpu", [((3, 3), 2), ((2, 4), 3)])
    lists = [list(a) for a in zip(*args)]
    with pytest.raises(ValueError, match="w1 has 1 entries but coords has 2"):
        BATCH_FWD(lists[0], lists[1][:1], lists[2], lists[3], lists[4])
    bias, h, sig = BATCH_FWD(*lists)
    with pytest.raises(ValueError, match="sig has 1 entries but grad has 2"):
        BATCH_BWD(grads, *lists, h, sig[:1])
    torch.library.opcheck(BATCH_FWD.default, tuple(lists))
    torch.library.opcheck(BATCH_BWD.default, (grads, *lists, h, sig))


@pytest.mark.cuda
def test_cuda_batch_ops_reject_layers_on_other_devices():
    args, grads = _batch_case("cuda", [((3, 3), 2), ((2, 4), 3)])
    moved = [a.cpu() for a in args[1]]
    lists = [list(a) for a in zip(args[0], moved)]
    with pytest.raises(ValueError, match="layer 1's w1 is on device cpu but layer 0's is on device cuda"):
        BATCH_FWD(*lists)
    lists = [list(a) for a in zip(*args)]
    bias, h, sig = BATCH_FWD(*lists)
    with pytest.raises(ValueError, match="grad is on device cpu but w1 is on device cuda"):
        BATCH_BWD([grads[0], grads[1].cpu()], *lists, h, sig)


def test_cpu_backward_bitwise_deterministic_at_any_thread_count():
    """The CPU backward's gather-reduction adds each table row's positions in index order (rows in
    parallel): at 1, 2 and 16 threads two runs give bitwise the same gradients (an accumulating
    index_put_ varied from run to run at 16 threads), and every thread count the same values to
    float32 rounding (the MLP's matmuls split their sums by thread count)."""
    coords, index = _coords_index(12, 16, "cpu", torch.float32)
    mlp = _mlp(6, 64, "cpu", torch.float32, seed=5)
    params = list(mlp.parameters())
    g = torch.randn(6, 192, 192, generator=torch.Generator().manual_seed(6))
    before = torch.get_num_threads()
    grads = {}
    try:
        for n in (1, 2, 16):
            torch.set_num_threads(n)
            grads[n] = [torch.autograd.grad(OP(coords, mlp[0].weight, mlp[0].bias, mlp[2].weight, index), params, g)
                        for _ in range(3)]
    finally:
        torch.set_num_threads(before)
    for n, runs in grads.items():
        for got in runs[1:]:
            for a, b in zip(got, runs[0]):
                assert torch.equal(a, b), f"{n} threads: not bitwise deterministic"
        for a, b in zip(runs[0], grads[1][0]):
            torch.testing.assert_close(a, b, rtol=0, atol=1e-5 * b.abs().max().item())


def test_cpu_backward_index_outside_the_table():
    """The backward op called with an index value outside the table raises IndexError naming it."""
    coords, index = _coords_index(3, 3, "cpu", torch.float32)
    mlp = _mlp(2, 16, "cpu", torch.float32)
    w1, b1, w2 = (p.detach() for p in (mlp[0].weight, mlp[0].bias, mlp[2].weight))
    h = torch.relu(coords.reshape(-1, 2) @ w1.t() + b1)
    sig = torch.sigmoid(h @ w2.t())
    bad = index.clone()
    bad[1, 2] = coords.numel() // 2
    with pytest.raises(IndexError, match="index holds 25 at position 11, outside the table of 25 rows"):
        BWD(torch.randn(2, 9, 9), coords, w1, b1, w2, bad, h, sig)


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
    grad = torch.randn(3, 64, 64, device=device)
    params = list(mlp.parameters())
    ref = _plain(mlp, coords, index, 3)
    ref_grads = torch.autograd.grad(ref, params, grad)
    l1, _, l2 = mlp._modules.values()
    with torch.autocast(device, dtype=torch.bfloat16):
        b = common.cpb_bias(mlp, coords, index, 3, 64)
        # the op itself, with no Python context around it, computes outside autocast (C++ guard)
        b_op = torch.ops.flash_window_attn.swin_cpb_bias(coords, l1.weight, l1.bias, l2.weight, index)
        grads = torch.autograd.grad(b_op, params, grad)
    for t in (b, b_op):
        assert t.dtype == torch.float32
        torch.testing.assert_close(t, ref, rtol=1e-6, atol=1e-6)
    for g, r in zip(grads, ref_grads):
        assert g.dtype == torch.float32
        torch.testing.assert_close(g, r, rtol=1e-5, atol=1e-5)


# ------------------------------------------------------------------------------------------------
# CUDA float32: the fused kernels (csrc/kernels/swin_cpb.cu), against a float64 evaluation of the
# same formula, over head counts on both sides of each register-tile size (8, 16, 32, 64) and
# above the largest (the ATen path), with timm's hidden width 512.
# ------------------------------------------------------------------------------------------------

def _f64_reference(mlp, coords, index, grad):
    """bias and the gradients of the MLP's parameters (in ``mlp.parameters()`` order) of the plain
    formula, in float64 on the CPU."""
    m64 = copy.deepcopy(mlp).double().cpu()
    bias = _plain(m64, coords.double().cpu(), index.cpu(), grad.shape[0])
    return bias.detach(), torch.autograd.grad(bias, list(m64.parameters()), grad.double().cpu())


@pytest.mark.cuda
@pytest.mark.parametrize("window,H", [((16, 16), 3), ((16, 16), 8), ((16, 16), 9), ((12, 12), 16),
                                      ((8, 8), 24), ((12, 12), 32), ((7, 7), 33), ((24, 24), 48),
                                      ((8, 8), 64), ((8, 8), 65), ((6, 10), 5), ((2, 8), 5), ((8, 2), 6),
                                      ((1, 1), 3)])
@pytest.mark.parametrize("with_b1", [True, False], ids=["b1", "no_b1"])
def test_cuda_fp32_vs_float64(window, H, with_b1):
    _check_cuda_vs_float64(window, H, 512, with_b1)


@pytest.mark.cuda
@pytest.mark.parametrize("hidden,window,H", [(40, (8, 8), 6), (1000, (8, 8), 6), (1000, (7, 7), 33),
                                             (544, (12, 12), 9)])
def test_cuda_fp32_other_hidden_widths(hidden, window, H):
    """Hidden widths other than timm's 512: below it with a partial lane chunk, and above 16 per
    lane, where the forward kernel recomputes h per head instead of holding it in registers."""
    _check_cuda_vs_float64(window, H, hidden, True)


def _check_cuda_vs_float64(window, H, hidden, with_b1):
    coords, index = _coords_index(*window, "cuda", torch.float32)
    mlp = _mlp(H, hidden, "cuda", torch.float32, seed=H, bias=with_b1)
    n = index.shape[0]
    grad = torch.randn(H, n, n, device="cuda")
    w1, b1, w2 = mlp[0].weight, mlp[0].bias, mlp[2].weight
    params = [p for p in (w1, b1, w2) if p is not None]
    got = OP(coords, w1, b1, w2, index)
    gg = torch.autograd.grad(got, params, grad)
    want, gw = _f64_reference(mlp, coords, index, grad)
    # float32 evaluation of a hidden-term dot product, then sigmoid: a few ulp of the values
    tol = 2e-6 * max(1.0, hidden / 512)
    torch.testing.assert_close(got.double().cpu(), want, rtol=tol, atol=tol)
    for name, a, b in zip(["dw1", "db1", "dw2"] if with_b1 else ["dw1", "dw2"], gg, gw):
        # sums of ~N^2 (dtable) then ~T (weights) float32 terms of both signs: relative to the largest
        scale = b.abs().max().item()
        torch.testing.assert_close(a.double().cpu(), b, rtol=0, atol=2e-5 * scale, msg=name)
    again = torch.autograd.grad(OP(coords, w1, b1, w2, index), params, grad)
    for a, b in zip(gg, again):
        assert torch.equal(a, b), "backward not bitwise deterministic"


@pytest.mark.cuda
def test_cuda_csr_walk_for_window_indices_in_subprocess():
    """Where index is Swin's relative position index of its window, the backward reads dbias along
    the window's diagonals (one check of index against the formula when the index is first seen);
    FWA_CPB_WINDOW_DTABLE=0 makes it walk the CSR inverse of index instead, as it does for any other
    index. That form, in a child process with the switch set, against float64 at window shapes
    (square, non-square, both orders of one (N, T) pair) and head counts on both sides of the
    register-tile sizes."""
    from _child_process import run_in_child

    code = (
        "import sys\n"
        f"sys.path.insert(0, {os.path.dirname(os.path.abspath(__file__))!r})\n"
        "import test_cpb as t\n"
        "cases = [((16, 16), 3), ((16, 16), 12), ((12, 12), 16), ((8, 8), 24), ((6, 10), 5), ((2, 8), 5),\n"
        "         ((8, 2), 6), ((24, 24), 48)]\n"
        "for (window, H) in cases:\n"
        "    t._check_cuda_vs_float64(window, H, 512, True)\n"
        "print('ok', len(cases))\n"
    )
    run_in_child(code, {"FWA_CPB_WINDOW_DTABLE": "0"}, "CPB backward through the CSR", timeout=300)


@pytest.mark.cuda
def test_cuda_strided_grad_and_coords():
    """A non-contiguous dbias (a transposed view) and a non-contiguous coordinate table give the
    same results as their contiguous copies."""
    coords, index = _coords_index(8, 8, "cuda", torch.float32)
    mlp = _mlp(6, 512, "cuda", torch.float32, seed=1)
    w1, b1, w2 = mlp[0].weight, mlp[0].bias, mlp[2].weight
    g = torch.randn(6, 64, 64, device="cuda").transpose(1, 2)
    coords_nc = coords.reshape(-1, 2).t().contiguous().t()   # (T, 2) with strides (1, T)
    assert not coords_nc.is_contiguous()
    out_nc = OP(coords_nc, w1, b1, w2, index)
    out = OP(coords, w1, b1, w2, index)
    assert torch.equal(out, out_nc)
    a = torch.autograd.grad(out_nc, [w1, b1, w2], g)
    b = torch.autograd.grad(out, [w1, b1, w2], g.contiguous())
    for x, y in zip(a, b):
        assert torch.equal(x, y)


@pytest.mark.cuda
def test_cuda_index_written_in_place_is_seen():
    """The backward's CSR inverse of index is cached per index tensor and version: an in-place
    write to index (a version bump) gives the gradients of the new index."""
    coords, index = _coords_index(8, 8, "cuda", torch.float32)
    mlp = _mlp(4, 64, "cuda", torch.float32, seed=2)
    w1, b1, w2 = mlp[0].weight, mlp[0].bias, mlp[2].weight
    g = torch.randn(4, 64, 64, device="cuda")
    torch.autograd.grad(OP(coords, w1, b1, w2, index), [w1, b1, w2], g)   # fills the cache
    perm = torch.randperm(index.numel(), generator=torch.Generator().manual_seed(0)).to("cuda")
    index.copy_(index.reshape(-1)[perm].view_as(index))
    got = torch.autograd.grad(OP(coords, w1, b1, w2, index), [w1, b1, w2], g)
    want = torch.autograd.grad(_plain(mlp, coords, index, 4), [w1, b1, w2], g)
    for a, b in zip(got, want):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-5)


@pytest.mark.cuda
@pytest.mark.parametrize("kind", ["window", "permuted"])
def test_cuda_graph_capture_reads_the_cached_csr(kind):
    """A CUDA graph captured after an eager call reads what that call cached for index: the CSR
    inverse of index ("permuted": an index that is not Swin's formula; no sort in the graph), or
    that index is the window's formula ("window": the diagonal reduction). The cached CSR tensors
    outlive the cache entry, so replays stay right after the entry is dropped (index written in
    place, a new entry computed, memory reused). Replays are bitwise the eager gradients. An index
    seen first inside the capture gets its CSR computed there and walked (the formula is not
    checked during a capture: that needs a sync), bitwise the eager gradients for "permuted", equal
    to rounding for "window"."""
    coords, index = _coords_index(8, 8, "cuda", torch.float32)
    if kind == "permuted":
        perm = torch.randperm(index.numel(), generator=torch.Generator().manual_seed(1)).to("cuda")
        index = index.reshape(-1)[perm].view_as(index).contiguous()
    mlp = _mlp(4, 64, "cuda", torch.float32, seed=4)
    w1, b1, w2 = mlp[0].weight, mlp[0].bias, mlp[2].weight
    g = torch.randn(4, 64, 64, device="cuda")
    want = torch.autograd.grad(OP(coords, w1, b1, w2, index), [w1, b1, w2], g)   # fills the cache
    # captured after a warm-up call on a side stream; grads are rewritten at every replay
    graph, grads = _bench_common.cuda_graph_capture(
        lambda: torch.autograd.grad(OP(coords, w1, b1, w2, index), [w1, b1, w2], g), warmup=1)
    for gr in grads:
        gr.fill_(float("nan"))
    graph.replay()
    for a, b in zip(grads, want):
        assert torch.equal(a, b)
    # drop the entry the graph read: a version bump (same values), then an eager call caches anew;
    # then reuse freed memory with garbage of every size the CSR had
    index.add_(0)
    torch.autograd.grad(OP(coords, w1, b1, w2, index), [w1, b1, w2], g)
    junk = [torch.full((n,), 7, dtype=torch.int64, device="cuda") for n in (index.numel(), 15 * 15 + 1) * 8]
    for gr in grads:
        gr.fill_(float("nan"))
    graph.replay()
    for a, b in zip(grads, want):
        assert torch.equal(a, b)
    del junk
    # an index tensor the cache has never seen: its CSR is computed inside the capture and walked
    fresh = index.clone()
    torch.cuda.synchronize()
    graph2 = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph2):
        grads2 = torch.autograd.grad(OP(coords, w1, b1, w2, fresh), [w1, b1, w2], g)
    graph2.replay()
    for a, b in zip(grads2, want):
        if kind == "permuted":
            assert torch.equal(a, b)
        else:   # the CSR walk against the diagonal reduction: the same sums in another order
            torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-5 * b.abs().max().item())


@pytest.mark.cuda
def test_cuda_stale_or_bad_index_poisons():
    """A write to index that its version counter does not see (through ``.data``) leaves the cached
    CSR stale: the kernels detect it and the gradients are NaN, never silently wrong. An index value
    outside the table gives NaN bias entries (the ATen path would raise a device-side assert)."""
    coords, index = _coords_index(8, 8, "cuda", torch.float32)
    mlp = _mlp(4, 64, "cuda", torch.float32, seed=3)
    w1, b1, w2 = mlp[0].weight, mlp[0].bias, mlp[2].weight
    g = torch.randn(4, 64, 64, device="cuda")
    torch.autograd.grad(OP(coords, w1, b1, w2, index), [w1, b1, w2], g)
    index.data.copy_(index.flip(0))
    dw1, db1, dw2 = torch.autograd.grad(OP(coords, w1, b1, w2, index), [w1, b1, w2], g)
    # the table rows whose CSR slice no longer matches get NaN; through the MLP's backward that
    # reaches every entry of dw2 and (where relu passes) dw1 and db1
    assert torch.isnan(dw2).all() and torch.isnan(dw1).any() and torch.isnan(db1).any()
    bad = index.clone()
    bad[3, 5] = coords.numel() // 2   # one past the table
    bias = OP(coords, w1, b1, w2, bad)
    assert torch.isnan(bias[:, 3, 5]).all()
    finite = torch.ones_like(bias, dtype=torch.bool)
    finite[:, 3, 5] = False
    assert torch.isfinite(bias[finite]).all()
