"""The drop-in attention modules against the timm / transformers modules they replace (CPU, fp32).

Each original gets random weights (the zero- or constant-initialised ones perturbed), the drop-in
the same weights; with the same inputs, output, input gradient and every parameter gradient agree
within fp32 tolerance, with and without a shift mask, over several window sizes.
"""

from __future__ import annotations

import copy
import math

import pytest
import torch

from flash_window_attn.modules import WindowAttention, WindowAttentionV1

from _swin_helpers import (
    LN100,
    LazyModule,
    assert_autocast_rule,
    assert_same_run,
    autocast_error,
    close,
    op_has_dropout,
    perturb_parameters,
    require_inductor_cpu,
    require_op_dropout,
    window_mask,
)

timm_v2 = LazyModule("timm.models.swin_transformer_v2")
timm_v1 = LazyModule("timm.models.swin_transformer")

TOL = 2e-5       # outputs: relative to the output's max-abs
GRAD_TOL = 1e-4  # gradients: relative to each gradient's max-abs (sums over windows and tokens)

WINDOWS = [(7, 7), (8, 8), (12, 12), (16, 16), (24, 24), (6, 10), (8, 12)]


def _wid(w):
    return f"{w[0]}x{w[1]}"


def _dims(window):
    """(dim, num_heads): head_dim 32, or 16 for the largest window (keeps the test fast)."""
    return (32, 2) if window[0] * window[1] > 300 else (64, 2)


def _x(B_, N, C, seed=0, dtype=torch.float32):
    return torch.randn((B_, N, C), generator=torch.Generator().manual_seed(seed)).to(dtype)


def make_v2_pair(window, *, pretrained=(0, 0), qkv_bias=True, qkv_bias_separate=False, dim=None,
                 heads=None, seed=0):
    d, h = _dims(window)
    dim, heads = dim or d, heads or h
    ref = timm_v2.WindowAttention(dim, window, heads, qkv_bias=qkv_bias,
                                  qkv_bias_separate=qkv_bias_separate,
                                  pretrained_window_size=pretrained)
    perturb_parameters(ref, seed)
    ours = WindowAttention(dim, window, heads, qkv_bias=qkv_bias, qkv_bias_separate=qkv_bias_separate,
                           pretrained_window_size=pretrained)
    ours.load_state_dict(ref.state_dict(), strict=True)
    return ref, ours


def make_v1_pair(window, *, head_dim=None, qkv_bias=True, dim=None, heads=None, seed=0):
    d, h = _dims(window)
    dim, heads = dim or d, heads or h
    ref = timm_v1.WindowAttention(dim, heads, head_dim=head_dim, window_size=window, qkv_bias=qkv_bias)
    ref.fused_attn = False  # timm's own math (its experimental SDPA path is off by default anyway)
    perturb_parameters(ref, seed)
    ours = WindowAttentionV1(dim, heads, head_dim=head_dim, window_size=window, qkv_bias=qkv_bias)
    ours.load_state_dict(ref.state_dict(), strict=True)
    return ref, ours


# ------------------------------------------------------------------------------------------------
# timm Swin V2 WindowAttention
# ------------------------------------------------------------------------------------------------


def test_v2_signature_matches_timm():
    import inspect

    ref = inspect.signature(timm_v2.WindowAttention.__init__)
    ours = inspect.signature(WindowAttention.__init__)
    assert [(p.name, p.default) for p in ours.parameters.values()] == \
        [(p.name, p.default) for p in ref.parameters.values()]
    assert list(inspect.signature(WindowAttention.forward).parameters) == \
        list(inspect.signature(timm_v2.WindowAttention.forward).parameters)


@pytest.mark.parametrize("mask", [None, "shift"])
@pytest.mark.parametrize("window", WINDOWS, ids=_wid)
def test_v2_matches_timm(window, mask):
    ref, ours = make_v2_pair(window, seed=window[0] + window[1])
    N = window[0] * window[1]
    m = window_mask(window, mask)
    x = _x(8, N, ref.dim, seed=1)
    assert_same_run(ref, ours, (x, m), tol=TOL, grad_tol=GRAD_TOL)


@pytest.mark.parametrize("window,pretrained", [((8, 8), (6, 6)), ((12, 12), (8, 8)),
                                               ((16, 16), (8, 8)), ((8, 12), (6, 8))])
def test_v2_pretrained_window_size(window, pretrained):
    ref, ours = make_v2_pair(window, pretrained=pretrained, seed=3)
    assert torch.equal(ref.relative_coords_table, ours.relative_coords_table)
    N = window[0] * window[1]
    assert_same_run(ref, ours, (_x(8, N, ref.dim, seed=2), window_mask(window, "shift")),
                    tol=TOL, grad_tol=GRAD_TOL)


@pytest.mark.parametrize("qkv_bias,separate", [(False, False), (True, True)])
def test_v2_qkv_bias_variants(qkv_bias, separate):
    ref, ours = make_v2_pair((8, 8), qkv_bias=qkv_bias, qkv_bias_separate=separate, seed=4)
    assert_same_run(ref, ours, (_x(8, 64, ref.dim, seed=3), window_mask((8, 8), "random")),
                    tol=TOL, grad_tol=GRAD_TOL)


def test_v2_state_dict_round_trip_and_layout():
    ref, ours = make_v2_pair((8, 8), pretrained=(6, 6))
    # same names, shapes, order; non-persistent buffers stay out of the state dict
    assert list(ref.state_dict()) == list(ours.state_dict())
    assert [(n, p.shape) for n, p in ref.named_parameters()] == \
        [(n, p.shape) for n, p in ours.named_parameters()]
    assert [(n, b.shape, b.dtype) for n, b in ref.named_buffers()] == \
        [(n, b.shape, b.dtype) for n, b in ours.named_buffers()]
    assert "k_bias" not in ours.state_dict() and "relative_coords_table" not in ours.state_dict()
    assert [n for n, _ in ref.named_modules()] == [n for n, _ in ours.named_modules()]
    # ours -> a fresh timm module, strict
    perturb_parameters(ours, seed=9)
    back = timm_v2.WindowAttention(64, (8, 8), 2, pretrained_window_size=(6, 6))
    back.load_state_dict(ours.state_dict(), strict=True)
    x = _x(4, 64, 64, seed=5)
    with torch.no_grad():
        close(ours(x), back(x), TOL)


def test_v2_from_timm_shares_state_and_mode():
    ref, _ = make_v2_pair((8, 8))
    ref.eval()
    ref.cpb_mlp[2].weight.requires_grad_(False)
    keep = copy.deepcopy(ref)
    ours = WindowAttention.from_timm(ref)
    assert type(ours) is WindowAttention and not ours.training
    assert all(a is b for a, b in zip(ours.parameters(), ref.parameters()))
    assert all(a is b for a, b in zip(ours.buffers(), ref.buffers()))
    assert not ours.cpb_mlp[2].weight.requires_grad
    assert ours.window_size == ref.window_size and ours.num_heads == ref.num_heads
    x = _x(8, 64, 64, seed=6)
    m = window_mask((8, 8), "shift")
    with torch.no_grad():
        close(ours(x, m), keep(x, m), TOL)
    assert WindowAttention.from_timm(ours) is ours
    with pytest.raises(TypeError, match="WindowAttention"):
        WindowAttention.from_timm(torch.nn.Linear(2, 2))


@pytest.mark.parametrize("new_window", [(12, 12), (8, 12)])
def test_v2_set_window_size(new_window):
    ref, ours = make_v2_pair((8, 8), pretrained=(8, 8), seed=5)
    ours.eval()
    ref.eval()
    with torch.no_grad():
        ours(_x(4, 64, 64))  # fills the bias cache at the old window size
    ref.set_window_size(new_window)
    ours.set_window_size(new_window)
    assert ours.window_size == ref.window_size
    assert torch.equal(ref.relative_coords_table, ours.relative_coords_table)
    assert torch.equal(ref.relative_position_index, ours.relative_position_index)
    N = new_window[0] * new_window[1]
    x = _x(8, N, 64, seed=7)
    m = window_mask(new_window, "shift")
    with torch.no_grad():
        close(ours(x, m), ref(x, m), TOL)
    ours.train()
    ref.train()
    assert_same_run(ref, ours, (x, m), tol=TOL, grad_tol=GRAD_TOL)


def test_v2_unsupported_head_dim_falls_back_to_timm_math():
    ref, ours = make_v2_pair((7, 7), dim=60, heads=3)  # head_dim 20: not a multiple of 8
    assert_same_run(ref, ours, (_x(8, 49, 60), window_mask((7, 7), "shift")), tol=TOL, grad_tol=GRAD_TOL)


def test_v2_float64():
    ref, ours = make_v2_pair((8, 8), seed=11)
    ref.double()
    ours.double()
    # The op clamps the logit scale at float32(ln 100) (its contract), timm in float64 at the
    # float64 ln 100: keep every head below the clamp for a float64-tight comparison.
    with torch.no_grad():
        for m in (ref, ours):
            m.logit_scale.clamp_(max=LN100 - 0.1)
    x = _x(8, 64, 64, seed=8, dtype=torch.float64)
    assert_same_run(ref, ours, (x, window_mask((8, 8), "shift").double()), tol=1e-10, grad_tol=1e-9)


def test_v2_cpu_autocast_bf16():
    """Under CPU autocast (bf16) the error against the fp32 original is within 2x timm's own
    autocast error (plus a small atol)."""
    ref, ours = make_v2_pair((8, 8), seed=12)
    x = _x(8, 64, 64, seed=9)
    m = window_mask((8, 8), "shift")
    with torch.no_grad():
        exact = ref(x, m)
        with torch.autocast("cpu", dtype=torch.bfloat16):
            base = autocast_error(ref(x, m), exact)
            err = autocast_error(ours(x, m), exact)
    assert err <= 2 * base + 5e-3, (err, base)


# ------------------------------------------------------------------------------------------------
# the eval-mode bias cache (V2)
# ------------------------------------------------------------------------------------------------


def test_v2_bias_cache_reuse_and_invalidation():
    ref, ours = make_v2_pair((8, 8), seed=13)
    x = _x(8, 64, 64, seed=10)
    m = window_mask((8, 8), "shift")

    # training with grad: never cached, gradient reaches the CPB MLP
    ours.train()
    ours(x, m).sum().backward()
    assert ours.cpb_mlp[0].weight.grad is not None
    assert "_fwa_bias_cache" not in ours.__dict__

    # eval mode with grad enabled and parameters requiring grad: still not cached
    ours.eval()
    ref.eval()
    b1 = ours.relative_position_bias()
    assert b1.requires_grad and "_fwa_bias_cache" not in ours.__dict__

    # no_grad: cached and reused
    with torch.no_grad():
        b1 = ours.relative_position_bias()
        b2 = ours.relative_position_bias()
        assert b2 is b1
        close(ours(x, m), ref(x, m), TOL)

    # an optimizer step on the CPB MLP (in place: bumps the version counter) invalidates it
    ours.zero_grad()
    ref.zero_grad()
    opt = torch.optim.SGD(ours.cpb_mlp.parameters(), lr=0.5)
    ref_opt = torch.optim.SGD(ref.cpb_mlp.parameters(), lr=0.5)
    ours.train()
    ref.train()
    ours(x, m).square().sum().backward()
    ref(x, m).square().sum().backward()
    opt.step()
    ref_opt.step()
    ours.eval()
    ref.eval()
    with torch.no_grad():
        b3 = ours.relative_position_bias()
        assert b3 is not b1 and not torch.equal(b3, b1)
        close(ours(x, m), ref(x, m), TOL)

    # load_state_dict invalidates it
    fresh = timm_v2.WindowAttention(64, (8, 8), 2)
    perturb_parameters(fresh, seed=99)
    fresh.eval()
    ours.load_state_dict(fresh.state_dict())
    with torch.no_grad():
        assert ours.relative_position_bias() is not b3
        close(ours(x, m), fresh(x, m), TOL)

    # frozen CPB in eval mode with grad enabled: cached, and the input still gets its gradient
    ours.cpb_mlp.requires_grad_(False)
    xg = x.clone().requires_grad_(True)
    ours(xg, m).sum().backward()
    assert "_fwa_bias_cache" in ours.__dict__ and xg.grad is not None


def test_v2_bias_cache_dtype_autocast_inference_mode():
    _, ours = make_v2_pair((8, 8), seed=14)
    ours.eval()
    x = _x(8, 64, 64, seed=11)
    with torch.inference_mode():
        y_inf = ours(x)
    with torch.no_grad():  # an inference-mode bias must not leak out of inference mode
        b = ours.relative_position_bias()
        assert not b.is_inference()
        close(ours(x), y_inf, TOL)
        with torch.autocast("cpu", dtype=torch.bfloat16):
            # the CPB MLP runs outside autocast, in its parameters' dtype (modules.py)
            assert ours.relative_position_bias().dtype == torch.float32
        assert ours.relative_position_bias().dtype == torch.float32
    xg = x.clone().requires_grad_(True)
    ours.requires_grad_(False)
    ours(xg).sum().backward()  # cached bias from no_grad used with autograd: fine
    assert xg.grad is not None
    ours.double()
    with torch.no_grad():
        assert ours.relative_position_bias().dtype == torch.float64


@pytest.mark.parametrize("cpb_op", [True, False], ids=["cpb_op", "cpb_plain"])
def test_v2_compile_fullgraph(cpb_op, monkeypatch):
    """torch.compile(fullgraph=True) of the module: no graph break (the cache is bypassed while
    compiling), forward and backward equal to eager; with the position-bias MLP as the
    swin_cpb_bias op in the graph (the default) and as plain ops (FWA_CPB_OP_UNDER_COMPILE=0)."""
    require_inductor_cpu()
    import torch._dynamo

    from flash_window_attn import _swin_common

    monkeypatch.setattr(_swin_common, "CPB_OP_UNDER_COMPILE", cpb_op)
    torch._dynamo.reset()
    ref, ours = make_v2_pair((8, 8), seed=15)
    compiled = torch.compile(ours, fullgraph=True)
    x = _x(8, 64, 64, seed=12)
    m = window_mask((8, 8), "shift")
    assert_same_run(ref, compiled, (x, m), tol=TOL, grad_tol=GRAD_TOL)
    ours.eval()
    ref.eval()
    with torch.no_grad():
        close(compiled(x, m), ref(x, m), TOL)
    torch._dynamo.reset()


@pytest.mark.parametrize("cpb_op", [True, False], ids=["cpb_op", "cpb_plain"])
def test_v2_compiled_graph_holds_cpb_op(cpb_op, monkeypatch):
    """Which form of the position-bias MLP torch.compile traces: the swin_cpb_bias op by default,
    the MLP's own linear layers with CPB_OP_UNDER_COMPILE off."""
    import torch._dynamo
    from torch._dynamo.testing import EagerAndRecordGraphs

    from flash_window_attn import _swin_common

    monkeypatch.setattr(_swin_common, "CPB_OP_UNDER_COMPILE", cpb_op)
    torch._dynamo.reset()
    _, ours = make_v2_pair((8, 8), seed=16)
    backend = EagerAndRecordGraphs()
    torch.compile(ours, backend=backend, fullgraph=True)(_x(2, 64, 64, seed=13), None).sum().backward()
    code = "\n".join(g.code for g in backend.graphs)
    assert ("swin_cpb_bias" in code) == cpb_op, code
    torch._dynamo.reset()


# ------------------------------------------------------------------------------------------------
# timm Swin V1 WindowAttention
# ------------------------------------------------------------------------------------------------


def test_v1_signature_matches_timm():
    import inspect

    ref = inspect.signature(timm_v1.WindowAttention.__init__)
    ours = inspect.signature(WindowAttentionV1.__init__)
    assert [(p.name, p.default) for p in ours.parameters.values()] == \
        [(p.name, p.default) for p in ref.parameters.values()]
    assert list(inspect.signature(WindowAttentionV1.forward).parameters) == \
        list(inspect.signature(timm_v1.WindowAttention.forward).parameters)


@pytest.mark.parametrize("mask", [None, "shift"])
@pytest.mark.parametrize("window", WINDOWS, ids=_wid)
def test_v1_matches_timm(window, mask):
    ref, ours = make_v1_pair(window, seed=window[0] * window[1])
    N = window[0] * window[1]
    x = _x(8, N, ref.dim, seed=13)
    assert_same_run(ref, ours, (x, window_mask(window, mask)), tol=TOL, grad_tol=GRAD_TOL)


def test_v1_head_dim_and_no_bias():
    ref, ours = make_v1_pair((7, 7), head_dim=16, dim=48, heads=4, qkv_bias=False, seed=3)
    assert ours.scale == ref.scale == 16 ** -0.5
    assert_same_run(ref, ours, (_x(8, 49, 48, seed=14), window_mask((7, 7), "random")),
                    tol=TOL, grad_tol=GRAD_TOL)


def test_v1_timm_sdpa_path_equivalent():
    """timm's (experimental) SDPA path computes the same function."""
    ref, ours = make_v1_pair((7, 7), seed=4)
    ref.fused_attn = True
    assert_same_run(ref, ours, (_x(8, 49, 64, seed=15), window_mask((7, 7), "shift")),
                    tol=TOL, grad_tol=GRAD_TOL)


def test_v1_state_dict_round_trip_and_from_timm():
    ref, ours = make_v1_pair((7, 7))
    assert list(ref.state_dict()) == list(ours.state_dict())
    assert [(n, p.shape) for n, p in ref.named_parameters()] == \
        [(n, p.shape) for n, p in ours.named_parameters()]
    assert [(n, b.shape) for n, b in ref.named_buffers()] == [(n, b.shape) for n, b in ours.named_buffers()]
    perturb_parameters(ours, seed=5)
    back = timm_v1.WindowAttention(64, 2, window_size=7)
    back.load_state_dict(ours.state_dict(), strict=True)
    x = _x(4, 49, 64, seed=16)
    with torch.no_grad():
        close(ours(x), back(x), TOL)
    keep = copy.deepcopy(back)
    back.eval()
    dropin = WindowAttentionV1.from_timm(back)
    assert not dropin.training and dropin.scale == back.scale
    assert all(a is b for a, b in zip(dropin.parameters(), back.parameters()))
    with torch.no_grad():
        close(dropin(x), keep(x), TOL)


@pytest.mark.filterwarnings("ignore::UserWarning")  # timm's table interpolation warns (torch 2.11)
def test_v1_set_window_size():
    ref, ours = make_v1_pair((7, 7), seed=6)
    ref.set_window_size(12)
    ours.set_window_size(12)
    assert ours.window_size == ref.window_size == (12, 12) and ours.window_area == 144
    close(ours.relative_position_bias_table, ref.relative_position_bias_table, 1e-6)
    assert torch.equal(ours.relative_position_index, ref.relative_position_index)
    assert_same_run(ref, ours, (_x(8, 144, 64, seed=17), window_mask((12, 12), "shift")),
                    tol=TOL, grad_tol=GRAD_TOL)


def test_v1_unsupported_window_falls_back():
    ref, ours = make_v1_pair((33, 33), dim=32, heads=2)  # N = 1089 > 1024
    assert_same_run(ref, ours, (_x(1, 1089, 32, seed=18), None), tol=TOL, grad_tol=GRAD_TOL)


# ------------------------------------------------------------------------------------------------
# attention dropout (skipped until the op has dropout_p)
# ------------------------------------------------------------------------------------------------


def test_dropout_module_without_op_support_runs_timm_math():
    """Before the op has dropout, attn_drop > 0 in training runs timm's math (same RNG use)."""
    if op_has_dropout():
        pytest.skip("op has dropout: covered by the tests below")
    ref = timm_v2.WindowAttention(64, (8, 8), 2, attn_drop=0.3)
    perturb_parameters(ref, seed=1)
    ours = WindowAttention(64, (8, 8), 2, attn_drop=0.3)
    ours.load_state_dict(ref.state_dict())
    x = _x(8, 64, 64, seed=19)
    torch.manual_seed(5)
    a = ref(x)
    torch.manual_seed(5)
    b = ours(x)
    close(b, a, TOL)


def _dropout_module(p, seed=0):
    m = WindowAttention(64, (8, 8), 2, attn_drop=p)
    perturb_parameters(m, seed=seed)
    return m


def test_dropout_reproducible_under_seed():
    require_op_dropout()
    m = _dropout_module(0.2)
    x = _x(8, 64, 64, seed=20).requires_grad_(True)
    outs = []
    for _ in range(2):
        torch.manual_seed(1234)
        y = m(x)
        gx, = torch.autograd.grad(y.square().sum(), x)
        outs.append((y.detach(), gx))
    torch.testing.assert_close(outs[0][0], outs[1][0], rtol=0, atol=0)
    torch.testing.assert_close(outs[0][1], outs[1][1], rtol=0, atol=0)
    torch.manual_seed(4321)
    assert not torch.equal(m(x).detach(), outs[0][0])


def test_dropout_eval_mode_is_off():
    require_op_dropout()
    m = _dropout_module(0.5)
    m_nodrop = copy.deepcopy(m)
    m_nodrop.attn_drop.p = 0.0
    m.eval()
    m_nodrop.eval()
    x = _x(8, 64, 64, seed=21)
    with torch.no_grad():
        torch.testing.assert_close(m(x), m_nodrop(x), rtol=0, atol=0)
    m.train()
    with torch.no_grad():
        assert not torch.equal(m(x), m_nodrop(x))  # and it is on in training


def _dropout_dropin(kind, p):
    """(drop-in with attention dropout p, input, output function) for each family."""
    if kind == "timm_v2":
        return WindowAttention(64, (8, 8), 2, attn_drop=p), lambda o: o
    if kind == "timm_v1":
        return WindowAttentionV1(64, 2, window_size=8, attn_drop=p), lambda o: o
    hf, Swinv2Config, _, SwinConfig, _ = _hf()
    if kind == "hf_v2":
        cfg = Swinv2Config(attention_probs_dropout_prob=p)
        return hf.FlashSwinv2SelfAttention(cfg, 64, 2, 8), lambda o: o[0]
    cfg = SwinConfig(attention_probs_dropout_prob=p, window_size=8)
    return hf.FlashSwinAttention(cfg, 64, 2, 8), lambda o: o[0]


@pytest.mark.parametrize("kind", ["timm_v2", "timm_v1", "hf_v2", "hf_v1"])
def test_dropout_every_dropin(kind):
    """Training: the op's dropout (reproducible under torch.manual_seed, forward and backward);
    eval: none."""
    require_op_dropout()
    m, out = _dropout_dropin(kind, 0.3)
    perturb_parameters(m, seed=2)
    x = _x(8, 64, 64, seed=23).requires_grad_(True)
    mask = window_mask((8, 8), "shift")
    runs = []
    for seed in (11, 11, 12):
        torch.manual_seed(seed)
        y = out(m(x, mask))
        gx, = torch.autograd.grad(y.square().sum(), x)
        runs.append((y.detach(), gx))
    torch.testing.assert_close(runs[0], runs[1], rtol=0, atol=0)
    assert not torch.equal(runs[0][0], runs[2][0])
    m.eval()
    with torch.no_grad():
        a = out(m(x, mask))
        for mod in m.modules():
            if isinstance(mod, torch.nn.Dropout):
                mod.p = 0.0
        if hasattr(m, "attention_dropout"):
            m.attention_dropout = 0.0
        torch.testing.assert_close(a, out(m(x, mask)), rtol=0, atol=0)


@pytest.mark.parametrize("p", [0.1, 0.5])
def test_dropout_kept_fraction(p):
    """With uniform attention (q = k = 0) and v = identity, out[b, h, i, j] = keep_ij / (N (1-p)):
    the kept fraction is the fraction of non-zero entries, ≈ 1 - p (binomial bounds, 6 sigma)."""
    require_op_dropout()
    from flash_window_attn import window_attention

    B_, H, N = 32, 2, 64
    q = torch.zeros(B_, H, N, N)
    v = torch.eye(N).expand(B_, H, N, N).contiguous()
    torch.manual_seed(0)
    out = window_attention(q, q, v, dropout_p=p)
    kept = out != 0
    frac = kept.double().mean().item()
    n = kept.numel()
    assert abs(frac - (1 - p)) <= 6 * math.sqrt(p * (1 - p) / n), frac
    # kept entries are scaled by 1 / (1 - p)
    torch.testing.assert_close(out[kept], torch.full_like(out[kept], 1.0 / (N * (1 - p))))


# ------------------------------------------------------------------------------------------------
# CUDA: fp16 / bf16 under autocast against the fp32 original
# ------------------------------------------------------------------------------------------------


@pytest.mark.cuda
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
@pytest.mark.parametrize("version", ["v1", "v2"])
@pytest.mark.parametrize("window", [(7, 7), (8, 8), (12, 12), (16, 16), (24, 24), (8, 12)], ids=_wid)
def test_cuda_autocast_matches_timm(version, window, dtype):
    make = make_v2_pair if version == "v2" else make_v1_pair
    ref, ours = make(window, seed=7)
    ref.cuda()
    ours.cuda()
    N = window[0] * window[1]
    x = _x(64, N, ref.dim, seed=22).cuda()
    m = window_mask(window, "shift").cuda()
    dout = torch.randn(x.shape, generator=torch.Generator().manual_seed(1)).cuda()

    def run(module, amp):
        xx = x.clone().requires_grad_(True)
        module.zero_grad(set_to_none=True)
        with torch.autocast("cuda", dtype=dtype, enabled=amp):
            y = module(xx, m)
        y.backward(dout.to(y.dtype))
        res = {n: p.grad.float() for n, p in module.named_parameters()}
        res["input"] = xx.grad.float()
        res["output"] = y.detach().float()
        return res

    ref32, ref_lp, ours_lp = run(ref, False), run(ref, True), run(ours, True)
    assert_autocast_rule(ours_lp, ref_lp, ref32, atol=1e-3 if dtype == torch.float16 else 5e-3)


@pytest.mark.cuda
def test_cuda_compile_reduce_overhead_v2():
    """torch.compile(mode="reduce-overhead") (CUDA graphs) of the V2 drop-in, bf16 autocast,
    forward and backward: the position-bias op is in the graph, and its backward reads the CSR
    inverse of the index that the eager runs before the recording cached (no sort in the graph);
    replays, also with new input values, give the eager module's output and gradients."""
    import torch._dynamo

    torch._dynamo.reset()
    _, ours = make_v2_pair((8, 8), seed=17)
    ours.cuda()
    m = window_mask((8, 8), "shift").cuda()
    dout = torch.randn(64, 64, ours.dim, generator=torch.Generator().manual_seed(3)).cuda()

    def run(fn, seed):
        x = _x(64, 64, ours.dim, seed=seed).cuda().requires_grad_(True)
        ours.zero_grad(set_to_none=True)
        with torch.autocast("cuda", dtype=torch.bfloat16):
            y = fn(x, m)
        y.backward(dout.to(y.dtype))
        res = {n: p.grad.float().clone() for n, p in ours.named_parameters()}
        res["input"] = x.grad.float().clone()
        res["output"] = y.detach().float().clone()
        return res

    eager = {seed: run(ours, seed) for seed in (30, 31)}
    compiled = torch.compile(ours, fullgraph=True, mode="reduce-overhead")
    for seed in (30, 30, 30, 31):   # warm-up, record, replay, a replay with new input values
        got = run(compiled, seed)
        for name, want in eager[seed].items():
            # the same op kernels in both; inductor fuses the surrounding bf16 ops differently
            torch.testing.assert_close(got[name], want, rtol=2e-2, atol=2e-2 * want.abs().max().item(),
                                       msg=lambda msg, name=name: f"{name}: {msg}")
    torch._dynamo.reset()


@pytest.mark.cuda
def test_cuda_fp32_dropout_runs_original_math():
    """The op's dropout does not take float32 CUDA inputs: the module falls back to timm's math."""
    ref = timm_v2.WindowAttention(64, (8, 8), 2, attn_drop=0.3)
    perturb_parameters(ref, seed=1)
    ref = ref.cuda()
    ours = WindowAttention(64, (8, 8), 2, attn_drop=0.3).cuda()
    ours.load_state_dict(ref.state_dict())
    x = _x(8, 64, 64, seed=19).cuda()
    torch.manual_seed(5)
    a = ref(x)
    torch.manual_seed(5)
    b = ours(x)
    close(b, a, TOL)
    b.sum().backward()


# ------------------------------------------------------------------------------------------------
# transformers: Swinv2SelfAttention and SwinAttention (Swin V1)
# ------------------------------------------------------------------------------------------------


def _hf():
    pytest.importorskip("transformers")
    from transformers import SwinConfig, Swinv2Config
    from transformers.models.swin.modeling_swin import SwinAttention
    from transformers.models.swinv2.modeling_swinv2 import Swinv2SelfAttention

    from flash_window_attn import hf

    return hf, Swinv2Config, Swinv2SelfAttention, SwinConfig, SwinAttention


def make_hf_v2_pair(window, *, dim=64, heads=2, pretrained=(0, 0), qkv_bias=True, seed=0, **cfg):
    hf, Swinv2Config, Swinv2SelfAttention, _, _ = _hf()
    config = Swinv2Config(qkv_bias=qkv_bias, **cfg)
    ref = Swinv2SelfAttention(config, dim, heads, window, pretrained_window_size=list(pretrained))
    perturb_parameters(ref, seed)
    ours = hf.FlashSwinv2SelfAttention(config, dim, heads, window, pretrained_window_size=list(pretrained))
    ours.load_state_dict(ref.state_dict(), strict=True)
    return ref, ours


def make_hf_v1_pair(window, *, dim=64, heads=2, seed=0, attn_implementation="eager", **cfg):
    hf, _, _, SwinConfig, SwinAttention = _hf()
    config = SwinConfig(window_size=window, **cfg)
    config._attn_implementation = attn_implementation
    ref = SwinAttention(config, dim, heads, window)
    perturb_parameters(ref, seed)
    ours = hf.FlashSwinAttention(config, dim, heads, window)
    ours.load_state_dict(ref.state_dict(), strict=True)
    return ref, ours


def test_hf_swinv2_mask_added_twice_in_installed_transformers():
    """transformers 5.x adds the shift mask twice in Swinv2SelfAttention.forward; the drop-in
    detects that from the installed source."""
    hf = _hf()[0]
    import transformers

    if transformers.__version__.startswith("5."):
        assert hf.swinv2_mask_repeats() == 2
    # numerically: a mask m in the original acts like 2 m added once
    ref, _ = make_hf_v2_pair(7, seed=1)
    x = _x(4, 49, 64, seed=30)
    m = window_mask((7, 7), "random")
    with torch.no_grad():
        from flash_window_attn.reference import window_attention_reference

        H, d = 2, 32
        q = ref.query(x).view(4, 49, H, d).transpose(1, 2)
        k = ref.key(x).view(4, 49, H, d).transpose(1, 2)
        v = ref.value(x).view(4, 49, H, d).transpose(1, 2)
        table = ref.continuous_position_bias_mlp(ref.relative_coords_table).view(-1, H)
        bias = (16 * torch.sigmoid(table))[ref.relative_position_index.view(-1)].view(49, 49, H).permute(2, 0, 1)
        want = window_attention_reference(q, k, v, bias, hf.swinv2_mask_repeats() * m,
                                          logit_scale=ref.logit_scale)
        close(ref(x, m)[0], want.transpose(1, 2).reshape(4, 49, 64), TOL)


@pytest.mark.parametrize("mask", [None, "shift"])
@pytest.mark.parametrize("window", [7, 8, 12, (6, 10)], ids=str)
def test_hf_swinv2_matches(window, mask):
    w2 = window if isinstance(window, tuple) else (window, window)
    ref, ours = make_hf_v2_pair(window, seed=w2[0] + 1)
    N = w2[0] * w2[1]
    x = _x(8, N, 64, seed=31)
    assert_same_run(ref, ours, (x, window_mask(w2, mask)), tol=TOL, grad_tol=GRAD_TOL,
                    out_fn=lambda o: o[0])
    with torch.no_grad():
        res = ours(x, window_mask(w2, mask))
    assert isinstance(res, tuple) and len(res) == 1


def test_hf_swinv2_pretrained_and_no_bias():
    ref, ours = make_hf_v2_pair(8, pretrained=(6, 6), qkv_bias=False, seed=3)
    assert torch.equal(ref.relative_coords_table, ours.relative_coords_table)
    assert_same_run(ref, ours, (_x(8, 64, 64, seed=32), window_mask((8, 8), "shift")),
                    tol=TOL, grad_tol=GRAD_TOL, out_fn=lambda o: o[0])


def test_hf_swinv2_output_attentions_falls_back():
    ref, ours = make_hf_v2_pair(8, seed=4)
    x = _x(8, 64, 64, seed=33)
    m = window_mask((8, 8), "shift")
    with torch.no_grad():
        a = ref(x, m, output_attentions=True)
        b = ours(x, m, output_attentions=True)
    assert len(a) == len(b) == 2
    close(b[0], a[0], TOL)
    close(b[1], a[1], TOL)


def test_hf_swinv2_state_and_from_hf():
    hf = _hf()[0]
    ref, ours = make_hf_v2_pair(8, seed=5)
    assert list(ref.state_dict()) == list(ours.state_dict())
    assert [n for n, _ in ref.named_parameters()] == [n for n, _ in ours.named_parameters()]
    assert [n for n, _ in ref.named_buffers()] == [n for n, _ in ours.named_buffers()]
    keep = copy.deepcopy(ref)
    ref.eval()
    dropin = hf.FlashSwinv2SelfAttention.from_hf(ref)
    assert isinstance(dropin, type(keep)) and not dropin.training
    assert all(a is b for a, b in zip(dropin.parameters(), ref.parameters()))
    x = _x(8, 64, 64, seed=34)
    with torch.no_grad():
        close(dropin(x)[0], keep(x)[0], TOL)
        b1 = dropin.relative_position_bias()
        assert dropin.relative_position_bias() is b1  # eval-mode cache


@pytest.mark.parametrize("impl", ["eager", "sdpa"])
@pytest.mark.parametrize("mask", [None, "shift"])
@pytest.mark.parametrize("window", [7, 8, 12], ids=str)
def test_hf_swin_v1_matches(window, mask, impl):
    ref, ours = make_hf_v1_pair(window, seed=window, attn_implementation=impl)
    N = window * window
    x = _x(8, N, 64, seed=35)
    assert_same_run(ref, ours, (x, window_mask((window, window), mask)), tol=TOL, grad_tol=GRAD_TOL,
                    out_fn=lambda o: o[0])
    with torch.no_grad():
        out, weights = ours(x, None)
    assert weights is None


def test_hf_swin_v1_output_attentions_falls_back():
    ref, ours = make_hf_v1_pair(7, seed=6, attn_implementation="eager")
    x = _x(8, 49, 64, seed=36)
    m = window_mask((7, 7), "shift")
    with torch.no_grad():
        a_out, a_w = ref(x, m, output_attentions=True)
        b_out, b_w = ours(x, m, output_attentions=True)
    close(b_out, a_out, TOL)
    assert b_w is not None
    close(b_w, a_w, TOL)


def test_hf_swin_v1_state_and_from_hf():
    hf = _hf()[0]
    ref, ours = make_hf_v1_pair(7, seed=7)
    assert list(ref.state_dict()) == list(ours.state_dict())
    assert [n for n, _ in ref.named_parameters()] == [n for n, _ in ours.named_parameters()]
    keep = copy.deepcopy(ref)
    dropin = hf.FlashSwinAttention.from_hf(ref)
    assert all(a is b for a, b in zip(dropin.parameters(), ref.parameters()))
    x = _x(8, 49, 64, seed=37)
    with torch.no_grad():
        close(dropin(x)[0], keep(x)[0], TOL)


@pytest.mark.cuda
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
@pytest.mark.parametrize("version", ["v1", "v2"])
def test_cuda_autocast_matches_hf(version, dtype):
    make = make_hf_v2_pair if version == "v2" else make_hf_v1_pair
    ref, ours = make(8, seed=8)
    ref.cuda()
    ours.cuda()
    x = _x(64, 64, 64, seed=38).cuda()
    m = window_mask((8, 8), "shift").cuda()
    dout = torch.randn(x.shape, generator=torch.Generator().manual_seed(2)).cuda()

    def run(module, amp):
        xx = x.clone().requires_grad_(True)
        module.zero_grad(set_to_none=True)
        with torch.autocast("cuda", dtype=dtype, enabled=amp):
            y = module(xx, m)[0]
        y.backward(dout.to(y.dtype))
        res = {n: p.grad.float() for n, p in module.named_parameters()}
        res["input"] = xx.grad.float()
        res["output"] = y.detach().float()
        return res

    ref32, ref_lp, ours_lp = run(ref, False), run(ref, True), run(ours, True)
    assert_autocast_rule(ours_lp, ref_lp, ref32, atol=1e-3 if dtype == torch.float16 else 5e-3)
