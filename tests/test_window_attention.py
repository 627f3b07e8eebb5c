"""Numerics of window_attention: forward and every gradient against the float64 reference.

Rule (FlashAttention style, flash_window_attn.testing): for out, dq, dk, dv, dbias, dlogit_scale,
    err(ours vs float64) <= 2 * err(reference formula in the same precision vs float64) + atol,
errors being max-abs differences normalised by the float64 reference's max-abs.

The grid (N x d x V1/V2 x bias x mask x layout x dtype x bias dtype) is covered pairwise (every pair
of values of any two factors occurs in some case) plus N x d x dtype x V1/V2 in full, which keeps the
CPU suite fast without a full cross-product.
"""

from __future__ import annotations

import itertools
import math
import random

import pytest
import torch

from flash_window_attn import window_attention
from flash_window_attn.reference import (
    LN100_F32,
    reference_float64,
    reference_outputs_and_grads,
)
from flash_window_attn.testing import (
    all_pairs,
    compare_to_reference,
    make_problem,
    normalized_error,
    poison_cuda_allocator,
    reduction_magnitudes,
    run_ours,
)

from _child_process import run_in_child

DEVICES = [
    pytest.param("cpu", id="cpu"),
    pytest.param("cuda", id="cuda", marks=pytest.mark.cuda),
]
DTYPES = {"fp16": torch.float16, "bf16": torch.bfloat16, "fp32": torch.float32, "fp64": torch.float64}
NS = [1, 7, 49, 64, 100, 144, 192, 256, 576]
DS = [16, 24, 32, 64, 128]


def sizes_for(N: int):
    """(B_, H): small problems for big windows keep the CPU grid fast."""
    if N <= 64:
        return 8, 2
    if N <= 256:
        return 4, 2
    return 2, 1


def _poisoned(fn, device):
    """fn with the CUDA caching allocator filled with NaN before each call (no-op on CPU)."""
    if torch.device(device).type != "cuda":
        return fn

    def wrapped(q, k, v, bias=None, mask=None, **kw):
        B_, H, N, d = q.shape
        poison_cuda_allocator(8 * B_ * H * N * d * q.element_size() + (64 << 20), q.device)
        return fn(q, k, v, bias, mask, **kw)

    return wrapped


def run_and_check(problem, dtype, device, *, atol=None, factor=2.0):
    """Run ours (poisoned on CUDA), the float64 and the same-precision references; assert the rule."""
    fn = _poisoned(window_attention, device)
    if torch.device(device).type == "cuda":
        # poison before the backward too: its outputs are allocated inside autograd.grad
        out = fn(*problem.args(), **problem.kwargs())
        inputs = problem.grad_inputs()
        B_, H, N, d = problem.q.shape
        poison_cuda_allocator(8 * B_ * H * N * d * problem.q.element_size() + (64 << 20))
        grads = torch.autograd.grad(out, list(inputs.values()), problem.dout) if inputs else ()
        ours = {"out": out.detach(), **dict(zip(inputs.keys(), grads))}
    else:
        ours = run_ours(problem, fn)
    ref64 = reference_float64(*problem.args(), **problem.kwargs(), dout=problem.dout)
    # the same formula in the inputs' dtypes (for fp64 q this still rounds dbias / dlogit_scale to
    # their fp32 dtypes, which is the baseline for ours)
    reflp = reference_outputs_and_grads(*problem.args(), **problem.kwargs(), dout=problem.dout)
    mags = reduction_magnitudes(*problem.args(), **problem.kwargs(), dout=problem.dout)
    ok, lines = compare_to_reference(ours, ref64, reflp, dtype, atol=atol, factor=factor, magnitudes=mags)
    assert ok, f"{problem.desc}\n" + "\n".join(lines)

    # layout and dtype contract of the outputs
    out = ours["out"]
    B_, H, N, d = problem.q.shape
    assert out.shape == (B_, H, N, d) and out.dtype == problem.q.dtype
    if out.numel():
        assert out.stride() == (N * H * d, d, H * d, 1), out.stride()
    for g, name in (("dbias", "bias"), ("dlogit_scale", "logit_scale")):
        if ours.get(g) is not None:
            inp = getattr(problem, name)
            assert ours[g].shape == inp.shape and ours[g].dtype == inp.dtype, (g, ours[g].shape, ours[g].dtype)
    return ours, ref64


# ------------------------------------------------------------------------------------------------
# The grid, covered pairwise
# ------------------------------------------------------------------------------------------------


OTHER_FACTORS = {
    "bias": [None, "hnn", "1hnn"],
    "mask": [None, "shift", "random"],
    "layout": ["contiguous", "packed"],
    "bias_dtype": ["fp32", "same"],
}


def _grid(ns, dtypes, device_mark=None):
    """Every pair of factor values (all_pairs), plus N x d x dtype x V1/V2 in full with the other
    factors drawn at random (seeded)."""
    cases = all_pairs({"N": ns, "d": DS, "dtype": dtypes, "version": ["v1", "v2"], **OTHER_FACTORS})
    rng = random.Random(0)
    for N, d, dt, ver in itertools.product(ns, DS, dtypes, ["v1", "v2"]):
        cases.append({"N": N, "d": d, "dtype": dt, "version": ver,
                      **{name: rng.choice(vals) for name, vals in OTHER_FACTORS.items()}})
    params = []
    for i, c in enumerate(cases):
        cid = "-".join(
            [f"N{c['N']}", f"d{c['d']}", c["dtype"], c["version"], f"bias_{c['bias']}_{c['bias_dtype']}",
             f"mask_{c['mask']}", c["layout"], f"case{i}"]
        )
        marks = [device_mark] if device_mark is not None else []
        params.append(pytest.param(c, i, id=cid, marks=marks))
    return params


CPU_GRID = _grid(NS, ["fp32", "bf16"])
CUDA_GRID = _grid(NS + [1024], ["fp16", "bf16", "fp32"], pytest.mark.cuda)


def _run_grid_case(case, seed, device):
    N, d = case["N"], case["d"]
    B_, H = sizes_for(N)
    dtype = DTYPES[case["dtype"]]
    problem = make_problem(
        B_, H, N, d, dtype=dtype, device=device, version=case["version"], bias=case["bias"],
        bias_dtype=dtype if case["bias_dtype"] == "same" else torch.float32, mask=case["mask"],
        layout=case["layout"], seed=1000 + seed,
    )
    run_and_check(problem, dtype, device)


@pytest.mark.parametrize("case,seed", CPU_GRID)
def test_grid_cpu(case, seed):
    _run_grid_case(case, seed, "cpu")


@pytest.mark.parametrize("case,seed", CUDA_GRID)
def test_grid_cuda(case, seed):
    _run_grid_case(case, seed, "cuda")


# ------------------------------------------------------------------------------------------------
# Focused cases
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("N", [49, 144])
def test_full_featured_every_dtype(device, N):
    """V2 + bias + shift mask + packed qkv, every dtype the device supports."""
    dtypes = [torch.float32, torch.bfloat16, torch.float64] if device == "cpu" else [
        torch.float16, torch.bfloat16, torch.float32]
    for i, dtype in enumerate(dtypes):
        problem = make_problem(8, 3, N, 32, dtype=dtype, device=device, version="v2", bias="hnn",
                               mask="shift", layout="packed", seed=i)
        run_and_check(problem, dtype, device)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("version", ["v1", "v2"])
def test_clustered_values_every_dtype(device, version):
    """q, k around a shared direction and v close to its mean (make_problem(values="clustered")):
    the backward's dP_ij - D_i cancels heavily there; every dtype of the device, small (N = 64) and
    tiled (N = 144) windows."""
    dtypes = [torch.float32, torch.bfloat16] if device == "cpu" else [torch.float16, torch.bfloat16, torch.float32]
    for i, dtype in enumerate(dtypes):
        for N in (64, 144):
            problem = make_problem(8, 2, N, 32, dtype=dtype, device=device, version=version,
                                   bias="hnn", mask="shift", layout="packed", values="clustered",
                                   seed=40 + i)
            run_and_check(problem, dtype, device)


@pytest.mark.parametrize("device", DEVICES)
def test_logit_scale_clamp(device):
    """Heads below, exactly at (float32(ln 100)) and above the clamp: the gradient flows at and below
    the bound and is exactly 0 above it (torch.clamp semantics)."""
    ln100 = torch.tensor(math.log(100), dtype=torch.float32).item()
    assert ln100 == LN100_F32
    values = [math.log(100) - 0.7, ln100, math.log(100) + 0.5]
    dtypes = [torch.float32, torch.bfloat16] if device == "cpu" else [torch.float16, torch.bfloat16, torch.float32]
    for i, dtype in enumerate(dtypes):
        for shape in ("h", "h11", "1h11"):
            problem = make_problem(8, 3, 49, 32, dtype=dtype, device=device, version="v2", bias="hnn",
                                   mask="shift", logit_scale=values, logit_scale_shape=shape, seed=10 + i)
            ours, ref64 = run_and_check(problem, dtype, device)
            dls = ours["dlogit_scale"].reshape(3)
            assert dls[2].item() == 0.0, f"gradient above the clamp must be exactly 0, got {dls.tolist()}"
            assert dls[0].item() != 0.0 and dls[1].item() != 0.0, (
                f"gradient must flow below and at the clamp, got {dls.tolist()}")
            assert ref64["dlogit_scale"].reshape(3)[1].item() != 0.0  # the oracle agrees at the bound


@pytest.mark.parametrize("device", DEVICES)
def test_shift_mask_is_not_skipped(device):
    """Swin's 0 / -100 mask with logits up to +-100 (clamped logit scale) and a bias up to 16:
    "masked" logits can be positive and must be added as numbers, not skipped."""
    N, H = 49, 2
    dtype = torch.float32
    problem = make_problem(8, H, N, 32, dtype=dtype, device=device, version="v2", bias="hnn",
                           bias_std=8.0, mask="shift", logit_scale=[LN100_F32, LN100_F32 - 1.0], seed=3)
    # Per window, tokens in token 0's region get sign +1, the others -1; q_i = s_i u, k_j = -s_j u
    # (plus noise). Same-region (unmasked) pairs then have cosine -1 (logit -100), cross-region
    # ("masked", -100) pairs cosine +1 (logit +100 - 100 = 0): the masked keys dominate the softmax.
    nW = problem.mask.shape[0]
    same_as_0 = (problem.mask[:, 0, :] == 0).to(dtype)  # (nW, N)
    sign = (2 * same_as_0 - 1).repeat(8 // nW, 1)[:, None, :, None].to(device)  # (B_, 1, N, 1)
    u = torch.randn(32, device=device)
    with torch.no_grad():
        problem.q.copy_(sign * u + 0.1 * torch.randn_like(problem.q))
        problem.k.copy_(-sign * u + 0.1 * torch.randn_like(problem.k))
    ours, ref64 = run_and_check(problem, dtype, device)
    # sanity: the oracle would differ if the -100 entries were treated as excluded keys
    mask_inf = problem.mask.masked_fill(problem.mask != 0, float("-inf"))
    ref_inf = reference_float64(problem.q, problem.k, problem.v, problem.bias, mask_inf,
                                logit_scale=problem.logit_scale)
    assert normalized_error(ref_inf["out"], ref64["out"]) > 0.1


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("version", ["v1", "v2"])
def test_all_masked_rows(device, version):
    """Rows whose logits are all -inf give out == 0 exactly and finite (zero) gradients."""
    dtypes = [torch.float32, torch.bfloat16] if device == "cpu" else [torch.float16, torch.bfloat16, torch.float32]
    for i, dtype in enumerate(dtypes):
        problem = make_problem(8, 2, 64, 32, dtype=dtype, device=device, version=version, bias="hnn",
                               mask="dead", seed=20 + i)
        ours, _ = run_and_check(problem, dtype, device)
        nW = problem.mask.shape[0]
        dead = torch.isneginf(problem.mask).all(-1)  # (nW, N)
        dead_b = dead.repeat(8 // nW, 1)[:, None, :].expand(8, 2, 64)  # (B_, H, N)
        assert dead_b.any()
        assert (ours["out"][dead_b] == 0).all(), "all -inf rows must give exactly 0"
        for name, g in ours.items():
            assert torch.isfinite(g).all(), f"{name} has non-finite values"


@pytest.mark.parametrize("device", DEVICES)
def test_mask_and_bias_dtypes_and_shapes(device):
    """Any floating dtype for bias / mask / logit_scale; dbias and dlogit_scale come back in the
    input's shape and dtype."""
    dtype = torch.float32 if device == "cpu" else torch.float16
    combos = [
        dict(bias="1hnn", bias_dtype=torch.float16, mask_dtype=torch.bfloat16, logit_scale_shape="1h11"),
        dict(bias="hnn", bias_dtype=torch.bfloat16, mask_dtype=torch.float16, logit_scale_shape="h"),
        dict(bias="hnn", bias_dtype=torch.float64 if device == "cpu" else torch.float32,
             mask_dtype=torch.float64 if device == "cpu" else torch.float32, logit_scale_shape="h11"),
    ]
    for i, c in enumerate(combos):
        problem = make_problem(8, 2, 49, 32, dtype=dtype, device=device, version="v2", mask="shift",
                               seed=30 + i, **c)
        run_and_check(problem, dtype, device)


@pytest.mark.parametrize("device", DEVICES)
def test_v1_custom_scale_and_nW_cycles(device):
    """scale given explicitly; B_ = 4 * nW so that window b uses mask[b % nW] repeatedly."""
    dtype = torch.float32
    problem = make_problem(16, 2, 64, 32, dtype=dtype, device=device, version="v1", scale=0.37,
                           bias="hnn", mask="random", nW=4, seed=40)
    run_and_check(problem, dtype, device)


@pytest.mark.parametrize("device", DEVICES)
def test_partial_requires_grad(device):
    """Only some inputs need grad: the others get None; bias not requiring grad gets no gradient."""
    problem = make_problem(4, 2, 49, 32, device=device, version="v2", bias="hnn", mask="shift",
                           requires_grad=False, seed=50)
    problem.v.requires_grad_(True)
    problem.logit_scale.requires_grad_(True)
    out = window_attention(*problem.args(), **problem.kwargs())
    out.backward(problem.dout)
    assert problem.q.grad is None and problem.k.grad is None and problem.bias.grad is None
    ref = reference_float64(*problem.args(), **problem.kwargs(), dout=problem.dout)
    assert normalized_error(problem.v.grad, ref["dv"]) < 1e-5
    assert normalized_error(problem.logit_scale.grad, ref["dlogit_scale"]) < 1e-4

    # no input requires grad: plain inference
    with torch.no_grad():
        out2 = window_attention(problem.q, problem.k, problem.v.detach(), problem.bias, problem.mask,
                                logit_scale=problem.logit_scale.detach())
    assert not out2.requires_grad
    assert torch.equal(out2, out.detach())


def test_autograd_nodes_are_cpp():
    """The forward ops' autograd kernels are C++ (csrc/ops/window_attention_autograd.cpp): a Python
    register_autograd wrapper cost ~100 us of host time per forward and as much per backward, which
    small problems waited for on the GPU. The graph node of the plain and the dropout op is the C++
    Function's (a Python registration's node is a generated Python class)."""
    problem = make_problem(4, 2, 49, 32, version="v2", bias="hnn", mask="shift", seed=51)
    out = window_attention(*problem.args(), **problem.kwargs())
    assert "WindowAttnFunction" in out.grad_fn.name(), out.grad_fn.name()
    out_d = window_attention(*problem.args(), **problem.kwargs(), dropout_p=0.25)
    assert "DropoutWindowAttnFunction" in out_d.grad_fn.name(), out_d.grad_fn.name()


@pytest.mark.parametrize("device", DEVICES)
def test_non_contiguous_grad_output(device):
    """out.sum() hands backward an expanded (zero-stride) gradient; a transposed consumer hands it a
    non-contiguous one. Both must work and match."""
    problem = make_problem(8, 2, 49, 32, device=device, version="v2", bias="hnn", mask="shift", seed=60)
    inputs = problem.grad_inputs()
    out = window_attention(*problem.args(), **problem.kwargs())
    g_sum = torch.autograd.grad(out.sum(), list(inputs.values()))
    dout_ones = torch.ones_like(problem.q)
    g_ones = torch.autograd.grad(window_attention(*problem.args(), **problem.kwargs()),
                                 list(inputs.values()), dout_ones)
    for a, b in zip(g_sum, g_ones):
        torch.testing.assert_close(a, b, rtol=0, atol=0)

    # a consumer that reads out as (B_, N, H*d): free view, gradient arrives in that layout
    B_, H, N, d = problem.q.shape
    out = window_attention(*problem.args(), **problem.kwargs())
    flat = out.transpose(1, 2).reshape(B_, N, H * d)
    assert flat.data_ptr() == out.data_ptr(), "out.transpose(1, 2).reshape(B_, N, H*d) must be a view"
    w = torch.randn(H * d, 5, device=device)
    g_view = torch.autograd.grad((flat @ w).square().sum(), list(inputs.values()))
    out_ref = window_attention(*problem.args(), **problem.kwargs())
    dout = torch.autograd.grad((out_ref.transpose(1, 2).reshape(B_, N, H * d) @ w).square().sum(), out_ref)[0]
    g_ref = torch.autograd.grad(window_attention(*problem.args(), **problem.kwargs()),
                                list(inputs.values()), dout.contiguous())
    for a, b in zip(g_view, g_ref):
        torch.testing.assert_close(a, b, rtol=1e-6, atol=1e-6)


def _bitwise_equal(a: torch.Tensor, b: torch.Tensor) -> bool:
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    ai = a.detach().contiguous().view(torch.uint8)
    bi = b.detach().contiguous().view(torch.uint8)
    return torch.equal(ai, bi)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("N", [49, 256])
def test_deterministic(device, N):
    """Two forward+backward runs are bitwise equal: out, dq, dk, dv, dbias, dlogit_scale."""
    dtypes = [torch.float32, torch.bfloat16] if device == "cpu" else [torch.float16, torch.bfloat16]
    B_ = 64 if device == "cpu" else 512
    if device == "cpu" and N > 64:
        B_ = 8
    for i, dtype in enumerate(dtypes):
        problem = make_problem(B_, 3, N, 32, dtype=dtype, device=device, version="v2", bias="hnn",
                               mask="shift", layout="packed", seed=70 + i)
        fn = _poisoned(window_attention, device)
        r1 = run_ours(problem, fn)
        r2 = run_ours(problem, fn)
        for name in r1:
            assert _bitwise_equal(r1[name], r2[name]), f"{name} differs between two runs ({dtype})"


@pytest.mark.parametrize("device", DEVICES)
def test_float64_cpu_and_d_bounds(device):
    """float64 on CPU (tight); on CUDA, d = 16 and d = 128 with N = 64 in fp32."""
    if device == "cpu":
        problem = make_problem(4, 2, 49, 24, dtype=torch.float64, device="cpu", version="v2",
                               bias="hnn", bias_dtype=torch.float64, mask="shift", seed=80)
        run_and_check(problem, torch.float64, "cpu", atol=1e-9)
    else:
        for i, d in enumerate((16, 128)):
            problem = make_problem(4, 2, 64, d, dtype=torch.float32, device=device, version="v2",
                                   bias="hnn", mask="shift", seed=81 + i)
            run_and_check(problem, torch.float32, device)


# ------------------------------------------------------------------------------------------------
# CUDA only: big windows, many windows, memory
# ------------------------------------------------------------------------------------------------


@pytest.mark.cuda
@pytest.mark.parametrize("dtype", ["fp16", "bf16", "fp32"])
@pytest.mark.parametrize("d", [32, 64, 128])
def test_cuda_n1024(dtype, d):
    dt = DTYPES[dtype]
    problem = make_problem(2, 2, 1024, d, dtype=dt, device="cuda", version="v2", bias="hnn",
                           mask="shift", nW=2, layout="packed", seed=90 + d)
    run_and_check(problem, dt, "cuda")


@pytest.mark.cuda
@pytest.mark.parametrize("dtype", ["fp16", "bf16"])
@pytest.mark.parametrize("N,d", [(49, 32), (100, 64), (144, 32), (256, 32), (576, 32), (1024, 16), (300, 128)])
def test_cuda_many_windows_per_cta(dtype, N, d):
    """Enough windows that every CTA walks several of them (and several key tiles each): catches
    pipeline stages reused before a window is done, which one window per CTA never exercises."""
    dt = DTYPES[dtype]
    nW = 4
    B_ = max(64, 8 * 132 // max(1, (N + 63) // 64)) // nW * nW
    B_ = min(B_, 4 * 1024 * 1024 // (N * d)) // nW * nW or nW
    problem = make_problem(B_, 2, N, d, dtype=dt, device="cuda", version="v2", bias="hnn",
                           mask="shift", nW=nW, layout="packed", seed=7 * N + d)
    run_and_check(problem, dt, "cuda")


@pytest.mark.cuda
@pytest.mark.parametrize("dtype", ["fp16", "bf16"])
@pytest.mark.parametrize("version", ["v1", "v2"])
@pytest.mark.parametrize("N,d,mask", [(144, 32, "shift"), (256, 32, None), (256, 16, "shift"),
                                      (576, 64, None), (100, 128, "shift")])
def test_cuda_clustered_values(dtype, version, N, d, mask):
    """q and k around a shared direction, v close to its mean (as in trained Swin V2 layers): dP_ij
    - D_i cancels heavily, so D = sum_j P_ij dP_ij must be exact in the tiled backward. With D taken
    from the 16-bit output (rowsum(dout * out)) its rounding error, common to a whole row, added up
    in dq to 5-10x PyTorch's own low-precision error."""
    dt = DTYPES[dtype]
    problem = make_problem(16, 2, N, d, dtype=dt, device="cuda", version=version, bias="hnn",
                           mask=mask, nW=4 if mask else None, layout="packed", values="clustered",
                           seed=11 * N + d)
    run_and_check(problem, dt, "cuda")


@pytest.mark.cuda
@pytest.mark.parametrize("dtype", ["fp16", "bf16"])
@pytest.mark.parametrize("N,d", [(1023, 112), (256, 32)])
def test_cuda_clustered_values_large_logits(dtype, N, d):
    """Tightly clustered q, k (spread 0.1) and v (0.05) with logits around 50 (V1, scale 0.47): dq_i
    = sum_j dS_ij k_j keeps only the small part of k_j off its mean, and (sum_j dS_ij) * mean(k),
    zero in exact arithmetic, is what remains of any per-row inconsistency between the P of the
    query-side kernel and the P with which the key-side kernel summed D. The two kernels compute P
    with the same operations; with lse * log2(e) rounded in one of them only (a per-row relative
    error of ~4e-6 at these logits) dq missed the rule by 2x (random problem 929)."""
    dt = DTYPES[dtype]
    problem = make_problem(16, 1, N, d, dtype=dt, device="cuda", version="v1", scale=0.47, bias=None,
                           mask="random", nW=16, layout="contiguous", values="clustered",
                           cluster_spread=(0.1, 0.05), seed=929 + N)
    run_and_check(problem, dt, "cuda")


def _child_problem_loop(cases, seed0: int) -> str:
    """Child-process source: ``cases`` ((B_, H, N, d, torch dtype name, version, mask, values) each)
    as a loop binding ``pr`` to problem i (packed if i is odd, seeded seed0 + i) on CUDA; the
    caller appends the loop body, indented by 4."""
    return (
        "import torch\n"
        "from flash_window_attn.testing import make_problem\n"
        f"cases = {list(cases)!r}\n"
        "for i, (B_, H, N, d, dt, ver, mask, values) in enumerate(cases):\n"
        "    pr = make_problem(B_, H, N, d, dtype=getattr(torch, dt), device='cuda', version=ver, bias='hnn',\n"
        "                      mask=mask, nW=4 if mask else 1, layout='packed' if i % 2 else 'contiguous',\n"
        f"                      values=values, seed={seed0} + i)\n"
    )


def _check_problems_in_child(cases, seed0: int, env: dict, what: str) -> None:
    """check_problem over ``cases`` (_child_problem_loop) in a child process with ``env`` added: the
    kernels' testing switches are environment variables read once per process."""
    code = (
        "from flash_window_attn.testing import check_problem\n"
        "bad = []\n"
        + _child_problem_loop(cases, seed0) +
        "    ok, lines = check_problem(pr)\n"
        "    if not ok: bad.append('\\n'.join([str(pr.desc)] + lines))\n"
        "assert not bad, '\\n'.join(bad)\n"
        "print('ok', len(cases))\n"
    )
    run_in_child(code, env, what, timeout=600)


@pytest.mark.cuda
def test_cuda_tiled_backward_for_small_windows_in_subprocess():
    """N <= 64 runs the tiled backward where the one-CTA-per-window kernel's shared memory does not
    fit (d > 64 on sm_80). FWA_BWD_FORCE_TILED=1 selects that path on any GPU: every gradient must
    pass the float64 check there too."""
    cases = [(64, 2, 49, 32, "float16", "v2", "shift", "normal"), (32, 3, 64, 64, "bfloat16", "v2", "shift", "normal"),
             (16, 2, 49, 128, "float16", "v1", "shift", "normal"), (16, 2, 1, 32, "bfloat16", "v2", None, "normal"),
             (8, 2, 17, 96, "bfloat16", "v1", None, "normal"), (32, 2, 64, 128, "float16", "v2", "dead", "normal"),
             (32, 3, 64, 16, "float16", "v2", None, "clustered"),
             (64, 3, 49, 32, "bfloat16", "v1", "shift", "clustered")]
    _check_problems_in_child(cases, 300, {"FWA_BWD_FORCE_TILED": "1"}, "tiled backward at N <= 64")


@pytest.mark.cuda
@pytest.mark.parametrize("config", ["2,2", "1,2,1", "1,2,2", "1,2,3", "1,3,3"])
def test_cuda_forward_placements_in_subprocess(config):
    """The forward's launcher picks the bias+mask placement (a 64x64 tile per pipeline stage, or the
    CTA's 64-row strip), the groups of 4 warps per CTA that share the strip, and the pipeline depth
    by occupancy. FWA_FWD_CONFIG="mode,stages,groups" (mode 1 strip, 2 tiles) forces one where it
    fits, so placements the default does not pick at these sizes are checked too; the first case
    gives each group several windows of the same bias+mask slice (the chunk's windows g, g + groups,
    ...), the others partial tiles, d < 32, d = 64 and a bias without a mask; the last N <= 64 at d = 32,
    where the default is the one-group kernel's 3-CTA (kWide) instantiation with the strip, so the
    placements also run the grouped kernel and the kWide kernel with per-stage tiles there.
    FWA_WINDOW_WGMMA=0: on sm_90a the N > 64, d <= 32 cases would otherwise run the wgmma forward
    (test_cuda_wgmma_forward_in_subprocess), which has no such placements."""
    cases = [(1024, 1, 144, 32, "bfloat16", "v2", "shift", "normal"), (52, 3, 100, 32, "float16", "v1", "shift", "normal"),
             (44, 2, 256, 16, "bfloat16", "v2", "shift", "clustered"), (36, 2, 144, 64, "float16", "v2", "shift", "normal"),
             (30, 2, 200, 48, "bfloat16", "v2", None, "normal"), (64, 3, 49, 32, "bfloat16", "v2", "shift", "normal")]
    _check_problems_in_child(cases, 500, {"FWA_FWD_CONFIG": config, "FWA_WINDOW_WGMMA": "0"},
                             f"forward placement {config}")


# N <= 256 at d <= 32: every Npad (64, 128, 192, 256) with partial last query blocks (at most 16
# rows at N = 65, 80, 129 and 144, the row tail's, and at 196, 200, 208) and key blocks
# (the last key block's width, fwd_wgmma_tail_keys: 16 at N = 1, 7, 65, 129, 144, 200; 32 at N = 20,
# 90, 160; 48 at N = 33, 100, 230; 64 elsewhere), d < 32 (zero-filled columns), V1 / V2, with and
# without bias+mask, a mask with fully masked (-inf) rows, clustered values, both dtypes, packed
# (strided) and contiguous layouts; at Npad 64 (double-buffered tiles) enough windows that each
# warpgroup walks several, and N = 1. The last ten: head dims 33..64 at N <= 128 (the kernel's
# 128-byte-row form), every last-block width, d < 64, a last query block of 1 and 16 rows.
_WGMMA_FWD_CASES = [(40, 3, 256, 32, "bfloat16", "v2", "shift", "normal"), (24, 2, 144, 32, "float16", "v2", "shift", "normal"),
                    (256, 3, 49, 32, "bfloat16", "v2", "shift", "normal"), (128, 2, 64, 32, "float16", "v1", "shift", "clustered"),
                    (16, 2, 1, 32, "bfloat16", "v2", None, "normal"), (96, 2, 7, 16, "float16", "v1", None, "normal"),
                    (64, 2, 64, 24, "bfloat16", "v2", "dead", "normal"), (200, 3, 33, 32, "float16", "v2", "shift", "clustered"),
                    (24, 2, 100, 24, "bfloat16", "v1", "shift", "normal"), (16, 3, 65, 32, "float16", "v2", None, "normal"),
                    (20, 2, 192, 16, "bfloat16", "v1", None, "clustered"), (16, 2, 200, 32, "float16", "v2", "dead", "normal"),
                    (12, 2, 255, 32, "bfloat16", "v2", "shift", "clustered"), (16, 2, 129, 32, "float16", "v1", "shift", "normal"),
                    (8, 4, 128, 32, "bfloat16", "v2", None, "normal"), (36, 1, 256, 24, "float16", "v1", "shift", "clustered"),
                    (20, 2, 160, 32, "bfloat16", "v2", "shift", "normal"), (24, 2, 90, 32, "float16", "v2", None, "clustered"),
                    (12, 2, 230, 32, "bfloat16", "v1", "shift", "normal"), (64, 2, 20, 32, "float16", "v2", "dead", "normal"),
                    (16, 2, 196, 32, "bfloat16", "v2", "dead", "normal"), (48, 3, 80, 32, "float16", "v1", "shift", "clustered"),
                    (24, 2, 208, 24, "bfloat16", "v2", "shift", "normal"),
                    (192, 2, 64, 64, "bfloat16", "v2", "shift", "normal"), (96, 3, 49, 64, "float16", "v1", "shift", "clustered"),
                    (64, 2, 20, 48, "bfloat16", "v2", "dead", "normal"), (40, 2, 7, 40, "float16", "v2", None, "clustered"),
                    (48, 2, 33, 64, "bfloat16", "v1", None, "normal"), (8, 2, 1, 64, "float16", "v2", "shift", "normal"),
                    (32, 2, 100, 64, "bfloat16", "v2", "shift", "normal"), (24, 2, 128, 48, "float16", "v1", "shift", "clustered"),
                    (16, 3, 65, 64, "bfloat16", "v2", None, "normal"), (20, 2, 80, 56, "float16", "v2", "dead", "normal")]


@pytest.mark.cuda
@pytest.mark.parametrize("groups", ["plan", "1", "2", "3", "4"])
def test_cuda_wgmma_forward_in_subprocess(groups):
    """On sm_90a the forward at N <= 256 and d <= 32 (no dropout) runs on warpgroup MMA with an
    online softmax over 64-key blocks (fwd_wgmma_kernel.cuh); its launcher picks 1 to 4 warpgroups per CTA
    sharing the bias+mask strip, and FWA_FWD_WG forces each, so every form is checked (forward and
    the backward that reads its lse) against float64. Elsewhere these problems run the mma.sync
    forward and the test checks that."""
    env = {} if groups == "plan" else {"FWA_FWD_WG": groups}
    _check_problems_in_child(_WGMMA_FWD_CASES, 700, env, f"wgmma forward, groups {groups}")


def _child_results_two_ways(tmp_path, code: str, switch: str, what: str, base_env=None):
    """Run child-process ``code`` (which saves a list of result dicts to OUT) by default and with
    environment switch ``switch`` = "0" (both with ``base_env``); returns both lists (default first)."""
    results = []
    for form in ("default", "0"):
        path = str(tmp_path / f"{switch}-{form}.pt")
        env = dict(base_env or {})
        if form != "default":
            env[switch] = "0"
        run_in_child(f"OUT = {path!r}\n" + code, env, f"{what} {form}", timeout=600)
        results.append(torch.load(path))
    return results


def _assert_results_bitwise_equal(a_list, b_list, labels) -> None:
    """Every tensor of every result dict bitwise equal between the two lists (same keys, "out" in each)."""
    bits = {torch.float16: torch.int16, torch.bfloat16: torch.int16, torch.float32: torch.int32}
    for label, a, b in zip(labels, a_list, b_list):
        assert a.keys() == b.keys() and "out" in a
        for name in a:
            assert torch.equal(a[name].view(bits[a[name].dtype]), b[name].view(bits[b[name].dtype])), (label, name)


@pytest.mark.cuda
def test_cuda_wgmma_forward_narrow_last_block_bitwise_in_subprocess(tmp_path):
    """The wgmma forward computes its last key block at the keys N leaves in it rounded up to 16
    (S, softmax and P v over 16, 32 or 48 keys instead of 64), and so do the backward's query side at
    Npad 192 (S, dP, dS and dq += dS k) and its key side over the last query block (Sᵀ, dPᵀ, dv and
    dk); FWA_WINDOW_WGMMA_TAIL=0 computes them at 64 keys (queries), the extra ones padded (-inf
    logits, P = 0, dS = 0). Every product column and every row sum is the
    same sum of the same terms in the same order either way, so out, the lse the backward reads,
    and every gradient must be bitwise equal between the two (and both pass the float64 check of
    test_cuda_wgmma_forward_in_subprocess). (Both with the key side's last key block on the wgmma
    path, FWA_WINDOW_KV_TAIL=0: its mma.sync form adds dv and dk in another order;
    test_cuda_kv_tail_role_in_subprocess checks that form. And both with the row-tail kernel at N =
    129..144, FWA_WINDOW_ROW_TAIL_FOLD=0: the folded row tail exists at the 16-key last block only,
    and its V2 key norms are the main grid's, not the row-tail kernel's own sums. Likewise with the
    backward query side's rows 128..143 in its third query block, FWA_WINDOW_BWD_Q_FOLD=0: folded,
    they are summed on mma.sync in another order.)"""
    cases = [c for c in _WGMMA_FWD_CASES if c[2] % 64 != 0 and c[2] % 64 <= 48]
    code = (
        "import flash_window_attn as fwa\n"
        "from flash_window_attn.testing import run_ours\n"
        "res = []\n"
        + _child_problem_loop(cases, 900) +
        "    r = run_ours(pr, fwa.window_attention)\n"
        "    res.append({n: t.cpu() for n, t in r.items() if t is not None})\n"
        "torch.save(res, OUT)\n"
        "print('ok', len(res))\n"
    )
    narrow, full = _child_results_two_ways(tmp_path, code, "FWA_WINDOW_WGMMA_TAIL", "wgmma forward, last block tail",
                                           base_env={"FWA_WINDOW_KV_TAIL": "0", "FWA_WINDOW_ROW_TAIL_FOLD": "0",
                                                     "FWA_WINDOW_BWD_Q_FOLD": "0"})
    assert len(narrow) == len(full) == len(cases) and all("dq" in r for r in narrow)
    _assert_results_bitwise_equal(narrow, full, cases)


@pytest.mark.cuda
def test_cuda_wgmma_forward_reads_bias_mask_bitwise_in_subprocess(tmp_path):
    """The wgmma forward at Npad >= 128 (and at Npad 64 / 128 for head dims 33..64) builds its rows of bias +
    mask itself, from the bias and mask tensors (no bm build launch before it:
    window_attn_fwd_reads_bias_mask), with the bm build's
    operations; FWA_WINDOW_FWD_DIRECT_BM=0 builds bm first, as the other kernels read it. out and
    every gradient must be bitwise equal between the two: the wgmma forward's cases, then outputs
    with a transposed (non-contiguous) fp32 bias, a (1, H, N, N) fp16 bias, a bf16 mask and a mask
    expanded from one window (stride 0), V1 and V2."""
    code = (
        "import flash_window_attn as fwa\n"
        "from flash_window_attn.testing import run_ours\n"
        "res = []\n"
        + _child_problem_loop(_WGMMA_FWD_CASES, 1100) +
        "    res.append({n: t.cpu() for n, t in run_ours(pr, fwa.window_attention).items() if t is not None})\n"
        "g = torch.Generator(device='cuda').manual_seed(5)\n"
        "for B_, H, N, dt in [(32, 3, 144, torch.bfloat16), (16, 2, 129, torch.float16), (8, 4, 256, torch.bfloat16),\n"
        "                     (24, 2, 100, torch.float16), (12, 2, 72, torch.bfloat16)]:\n"
        "    q, k, v = (torch.randn(B_, H, N, 32, device='cuda', generator=g).to(dt) for _ in range(3))\n"
        "    bias_t = torch.randn(H, N, N, device='cuda', generator=g).transpose(1, 2)\n"
        "    bias_h = torch.randn(1, H, N, N, device='cuda', generator=g).to(torch.float16)\n"
        "    mask_e = torch.where(torch.rand(1, N, N, device='cuda', generator=g) < 0.3, -100.0, 0.0).expand(4, N, N)\n"
        "    mask_b = torch.where(torch.rand(4, N, N, device='cuda', generator=g) < 0.3, -100.0, 0.0).to(torch.bfloat16)\n"
        "    ls = torch.randn(H, 1, 1, device='cuda', generator=g) * 0.3 + 2.3\n"
        "    with torch.no_grad():\n"
        "        for bias, mask, kw in [(bias_t, mask_e, {'logit_scale': ls}), (bias_h, mask_b, {}),\n"
        "                               (None, mask_e, {'scale': 0.3}), (bias_t, None, {'logit_scale': ls})]:\n"
        "            res.append({'out': fwa.window_attention(q, k, v, bias, mask, **kw).cpu()})\n"
        "torch.save(res, OUT)\n"
        "print('ok', len(res))\n"
    )
    direct, built = _child_results_two_ways(tmp_path, code, "FWA_WINDOW_FWD_DIRECT_BM", "wgmma forward, bias+mask rows direct")
    assert len(direct) == len(built) == len(_WGMMA_FWD_CASES) + 5 * 4
    _assert_results_bitwise_equal(direct, built, range(len(direct)))


# The tiled backward's shapes (64 < N): the wgmma cases, and a few with many windows per (head, bm
# window) (the query side's CTAs walk chunks of several windows) and with key ranges (N > 256).
_TILED_BWD_CASES = [c for c in _WGMMA_FWD_CASES if c[2] > 64] + [
    (1024, 2, 144, 32, "bfloat16", "v2", "shift", "normal"), (768, 1, 256, 32, "float16", "v2", "shift", "clustered"),
    (512, 2, 100, 32, "bfloat16", "v1", "shift", "normal"), (8, 2, 576, 32, "bfloat16", "v2", "shift", "normal"),
    (16, 2, 300, 24, "float16", "v1", None, "normal")]


@pytest.mark.cuda
def test_cuda_tiled_backward_pdl_bitwise_in_subprocess(tmp_path):
    """On sm_90a the tiled backward's kernels run as programmatic dependents (preprocess -> key side
    -> dsum -> query side), each loading what predates the chain before it waits for the previous
    kernel; FWA_WINDOW_PDL=0 launches each after the previous one completes. out and every gradient
    must be bitwise equal between the two, with and without dropout (a kernel reading a workspace
    before the kernel that writes it completes would show here)."""
    code = (
        "import flash_window_attn as fwa\n"
        "from flash_window_attn.testing import run_ours\n"
        "res = []\n"
        + _child_problem_loop(_TILED_BWD_CASES, 1300) +
        "    res.append({n: t.cpu() for n, t in run_ours(pr, fwa.window_attention).items() if t is not None})\n"
        "    torch.manual_seed(i)\n"   # (every case is fp16 / bf16: dropout runs on CUDA)
        "    r = run_ours(pr, lambda *a, **kw: fwa.window_attention(*a, **kw, dropout_p=0.2))\n"
        "    res.append({n: t.cpu() for n, t in r.items() if t is not None})\n"
        "torch.save(res, OUT)\n"
        "print('ok', len(res))\n"
    )
    default, off = _child_results_two_ways(tmp_path, code, "FWA_WINDOW_PDL", "tiled backward, PDL")
    assert len(default) == len(off) == 2 * len(_TILED_BWD_CASES) and all("dq" in r for r in default)
    _assert_results_bitwise_equal(default, off, range(len(default)))


# The shapes whose last 64-query block holds at most 16 rows below Npad 256 (N in 65..80, 129..144)
# at head dim <= 32: the wgmma forward's main grid (N in 129..144, the folded row tail) or its
# row-tail kernel takes those rows; plus two with enough windows per (head, bm window) that its
# CTAs walk several windows each (the next window's copies overlap this one's work).
# The last two: the folded row tail with fully masked rows and d < 32, and without bias and mask.
_ROW_TAIL_CASES = [c for c in _WGMMA_FWD_CASES if 64 < c[2] <= 192 and (c[2] - 1) % 64 < 16 and c[3] <= 32] + [
    (2048, 1, 144, 32, "bfloat16", "v2", "shift", "clustered"), (1536, 1, 129, 32, "float16", "v1", None, "normal"),
    (64, 2, 140, 24, "bfloat16", "v2", "dead", "normal"), (32, 3, 136, 32, "float16", "v2", None, "clustered")]


@pytest.mark.cuda
@pytest.mark.parametrize("form", ["default", "row-tail-kernel", "bm-strip", "rows-on-warpgroup", "no-pdl",
                                  "full-last-key-block"])
def test_cuda_wgmma_forward_row_tail_in_subprocess(form):
    """On sm_90a, where the last query block holds at most 16 rows, the wgmma forward's main grid
    covers the other blocks, and those rows are computed on mma.sync by 4 warps that split each
    window's keys and combine their partial softmax sums (fwd_wgmma_kernel.cuh, RowTailWarp): at
    Npad 192 by the main grid's warpgroups themselves, the query blocks' CTAs taking turns over
    the windows (the folded row tail), otherwise by a second kernel
    (window_attn_fwd_row_tail_kernel) launched as the main grid's programmatic dependent. Checked
    against float64 (out, the lse the backward reads, every gradient) by default, with the second
    kernel at Npad 192 too (FWA_WINDOW_ROW_TAIL_FOLD=0), with the strips from the op's bias+mask
    build instead of the bias and mask (FWA_WINDOW_FWD_DIRECT_BM=0), with the rows on the warpgroup
    (FWA_WINDOW_ROW_TAIL=0), launched after the main grid completes (FWA_WINDOW_PDL=0), and with
    its last key block 64 wide (FWA_WINDOW_WGMMA_TAIL=0: the second kernel)."""
    env = {"default": {}, "row-tail-kernel": {"FWA_WINDOW_ROW_TAIL_FOLD": "0"}, "bm-strip": {"FWA_WINDOW_FWD_DIRECT_BM": "0"},
           "rows-on-warpgroup": {"FWA_WINDOW_ROW_TAIL": "0"},
           "no-pdl": {"FWA_WINDOW_PDL": "0"}, "full-last-key-block": {"FWA_WINDOW_WGMMA_TAIL": "0"}}[form]
    assert len(_ROW_TAIL_CASES) == 8
    _check_problems_in_child(_ROW_TAIL_CASES, 1100, env, f"wgmma forward row tail, {form}")


# The shapes whose last key block holds at most 16 keys below Npad 256 (N in 65..80, 129..144): the
# key side leaves that block to window_attn_bwd_kv_tail_kernel; plus shapes with more (window, head)
# items than the H100's 2112 warps of that kernel (each warp walks several items; H = 5 and 7 do not
# divide the warp count, so the warps' (window, head, mask window) cursors wrap).
_KV_TAIL_CASES = _ROW_TAIL_CASES + [(96, 4, 144, 32, "float16", "v2", "shift", "normal"),
                                    (64, 3, 72, 32, "bfloat16", "v2", "dead", "clustered"),
                                    (1200, 1, 80, 32, "float16", "v2", "shift", "normal"),
                                    (1024, 5, 144, 32, "bfloat16", "v2", "shift", "normal"),
                                    (1536, 7, 80, 16, "float16", "v1", "shift", "normal")]


@pytest.mark.cuda
@pytest.mark.parametrize("form", ["default", "wgmma-last-key-block", "no-pdl"])
def test_cuda_kv_tail_role_in_subprocess(form):
    """On sm_90a, where the last key block holds at most 16 keys below Npad 256, the backward's key
    side leaves that block to a kernel of its own on mma.sync (bwd_tiled_kernels.cuh,
    window_attn_bwd_kv_tail_kernel: dk, dv and the block's D partial) instead of a 64-key warpgroup
    tile of which 48 rows are padding. Checked against float64 (every gradient) by default, with
    that block on the warpgroup (FWA_WINDOW_KV_TAIL=0) and without programmatic dependent launches
    (FWA_WINDOW_PDL=0)."""
    env = {"default": {}, "wgmma-last-key-block": {"FWA_WINDOW_KV_TAIL": "0"}, "no-pdl": {"FWA_WINDOW_PDL": "0"}}[form]
    _check_problems_in_child(_KV_TAIL_CASES, 1500, env, f"key side tail role, {form}")


# The backward query side's folded tail rows (N = 129..144 at head dim <= 32, no dropout): the row
# tail's shapes there, plus one window per (head, bm window) (the second query block's CTAs take no
# tail window), 7 per bm window (an odd chunk), and many windows at d = 16.
_Q_FOLD_CASES = [c for c in _ROW_TAIL_CASES if c[2] > 128] + [
    (4, 2, 144, 32, "float16", "v2", "shift", "normal"), (28, 3, 131, 32, "bfloat16", "v1", "shift", "clustered"),
    (1000, 2, 144, 16, "float16", "v2", "shift", "normal")]


@pytest.mark.cuda
@pytest.mark.parametrize("form", ["default", "third-query-block", "no-pdl"])
def test_cuda_bwd_q_fold_tail_in_subprocess(form):
    """On sm_90a at N = 129..144 (Npad 192, the 16-key last block) the backward's query side has no
    third query block: rows 128..143 are computed by warpgroup 1 of the first two blocks' CTAs, each
    taking every other window (bwd_q_wg_kernel.cuh, kFold: dq of those rows, their dbias sums in two
    partial rows that window_attn_reduce_partials adds, their V2 dalpha part). Checked against
    float64 (out and every gradient) by default, with the third query block's CTAs
    (FWA_WINDOW_BWD_Q_FOLD=0) and without programmatic dependent launches; then, in the same child,
    without bias and mask (the tail strip's 0 / -inf fill) in V1 and V2."""
    env = {"default": {}, "third-query-block": {"FWA_WINDOW_BWD_Q_FOLD": "0"}, "no-pdl": {"FWA_WINDOW_PDL": "0"}}[form]
    code = (
        "from flash_window_attn.testing import check_problem\n"
        "bad = []\n"
        + _child_problem_loop(_Q_FOLD_CASES, 1700) +
        "    ok, lines = check_problem(pr)\n"
        "    if not ok: bad.append('\\n'.join([str(pr.desc)] + lines))\n"
        "for i, (B_, N, ver, dt) in enumerate([(48, 144, 'v2', torch.bfloat16), (20, 137, 'v1', torch.float16)]):\n"
        "    pr = make_problem(B_, 2, N, 32, dtype=dt, device='cuda', version=ver, bias=None, seed=1750 + i)\n"
        "    ok, lines = check_problem(pr)\n"
        "    if not ok: bad.append('\\n'.join([str(pr.desc)] + lines))\n"
        "assert not bad, '\\n'.join(bad)\n"
        "print('ok', len(cases) + 2)\n"
    )
    run_in_child(code, env, f"backward query side, folded tail rows, {form}", timeout=600)


@pytest.mark.cuda
def test_cuda_kv_tail_role_matches_wgmma_block_in_subprocess(tmp_path):
    """The key side's last key block on mma.sync (window_attn_bwd_kv_tail_kernel, FWA_WINDOW_KV_TAIL)
    computes the same P and dS as the warpgroup tile it replaces (the same elementwise operations,
    bwd_kv_elementwise), adds dk and dv over the queries 16 at a time in query order as the
    warpgroup's k16 steps do, and sums its part of D over the 16 keys in pairs (g, g ^ 4), then
    (g, g ^ 2), then (g, g ^ 1) of the lanes' row groups as column_sums_over_g does (where the
    warpgroup tile's other warps add only zeros): every output and gradient is bitwise equal with
    it on and off."""
    code = (
        "import flash_window_attn as fwa\n"
        "from flash_window_attn.testing import run_ours\n"
        "res = []\n"
        + _child_problem_loop(_KV_TAIL_CASES, 1500) +
        "    res.append({n: t.cpu() for n, t in run_ours(pr, fwa.window_attention).items() if t is not None})\n"
        "torch.save(res, OUT)\n"
        "print('ok', len(res))\n"
    )
    tail, wg = _child_results_two_ways(tmp_path, code, "FWA_WINDOW_KV_TAIL", "key side tail role")
    assert len(tail) == len(wg) == len(_KV_TAIL_CASES)
    assert all({"out", "dq", "dk", "dv"} <= r.keys() for r in tail)
    _assert_results_bitwise_equal(tail, wg, _KV_TAIL_CASES)


@pytest.mark.cuda
def test_cuda_mma_sync_forward_at_wgmma_shapes_in_subprocess():
    """FWA_WINDOW_WGMMA=0 keeps the mma.sync forward at the shapes the wgmma forward takes on sm_90a
    (the fallback of every other GPU and of d > 32): the same problems, checked against float64."""
    _check_problems_in_child(_WGMMA_FWD_CASES, 700, {"FWA_WINDOW_WGMMA": "0"}, "mma.sync forward at N <= 256")


# The tiled backward at head dim <= 32 (FWA_BWD_FORCE_TILED=1: also N <= 64): 1, 2, 3, 4, 9 and 16
# key / query blocks (Npad 64 to 1024), partial last blocks, d < 32 (zero-filled columns), V1 / V2, with and without
# bias+mask, fully masked rows, clustered values, both dtypes, packed (strided) and contiguous.
_TILED_BWD_D32_CASES = [(24, 3, 256, 32, "bfloat16", "v2", "shift", "normal"), (16, 2, 144, 32, "float16", "v2", "shift", "clustered"),
                        (8, 2, 576, 32, "bfloat16", "v1", "shift", "normal"), (12, 2, 100, 24, "float16", "v2", None, "normal"),
                        (4, 2, 1024, 16, "bfloat16", "v2", "shift", "normal"), (16, 2, 65, 32, "float16", "v1", None, "clustered"),
                        (8, 2, 200, 32, "float16", "v2", "dead", "normal"), (32, 2, 49, 32, "bfloat16", "v2", "shift", "normal"),
                        (16, 2, 1, 16, "float16", "v2", None, "normal"), (12, 3, 192, 32, "bfloat16", "v2", "shift", "clustered")]


@pytest.mark.cuda
@pytest.mark.parametrize("form", ["wg", "wgmma", "mma"])
def test_cuda_tiled_backward_d32_forms_in_subprocess(form):
    """On sm_90a the tiled backward at head dim <= 32 takes its products from warpgroup MMA
    (bwd_tiled_kernels.cuh, kWgmma), and at Npad 128, 192 and 256 its query side is the kernel that
    holds a window's keys over 2 warpgroups (bwd_q_wg_kernel.cuh, the default there; Npad 192 runs
    its 256-key form with the last 64-key sub-block skipped and the one before it as wide as N
    leaves it: N = 144 (16 keys) and 192 (64) below).
    FWA_WINDOW_BWD_Q_WG=0 keeps the kWgmma query-side kernel
    there, FWA_WINDOW_BWD_WGMMA=0 the mma.sync kernels (the form of every other GPU). The three,
    checked against float64 on the same problems (elsewhere all three runs take the mma.sync form)."""
    env = {"FWA_BWD_FORCE_TILED": "1", "FWA_WINDOW_BWD_WGMMA": "0" if form == "mma" else "1",
           "FWA_WINDOW_BWD_Q_WG": "all" if form == "wg" else "0"}
    _check_problems_in_child(_TILED_BWD_D32_CASES, 900, env, f"tiled backward d <= 32, form {form}")


@pytest.mark.cuda
@pytest.mark.parametrize("budget", ["default", "1"])
def test_cuda_query_side_key_ranges_in_subprocess(budget):
    """At Npad > 256 (d <= 32, sm_90a) the query side runs the warpgroup kernel over key ranges of
    256 keys, one CTA each, whose fp32 dq parts a second kernel sums in range order; the parts take at
    most 256 MiB (kDqPartialBudget), bigger problems go in launches over batches of chunks. FWA_BWD_DQ_PARTIAL_BYTES=1
    forces one launch per chunk (the chunk offset and the parts' window indexing), the default one
    launch; both against float64 (the last range partly past Npad at N = 300, 400 and 577)."""
    cases = [(8, 2, 576, 32, "bfloat16", "v2", "shift", "normal"), (16, 2, 300, 32, "float16", "v2", "dead", "clustered"),
             (4, 2, 1024, 16, "float16", "v1", "shift", "normal"), (12, 3, 400, 24, "bfloat16", "v2", None, "normal"),
             (4, 3, 577, 32, "bfloat16", "v1", "shift", "normal")]
    env = {"FWA_BWD_FORCE_TILED": "1"}
    if budget != "default":
        env["FWA_BWD_DQ_PARTIAL_BYTES"] = budget
    _check_problems_in_child(cases, 400, env, f"query-side key ranges, dq part budget {budget}")


@pytest.mark.cuda
def test_cuda_global_dbias_slice_in_subprocess():
    """The tiled backward's query-side kernel accumulates dbias in a shared-memory strip wherever it
    fits (on an H100: up to N = 576 at d <= 64) and in a CTA-private global slice otherwise (N = 1024,
    d = 128 at N > 256, smaller GPUs). FWA_BWD_Q_STRIP_MAX_NPAD=256 forces the global slice above
    N = 256 on any GPU, so both accumulators are checked at the same sizes."""
    cases = [(8, 2, 576, 32, "bfloat16", "v2", "shift", "normal"), (8, 2, 300, 64, "float16", "v1", "shift", "normal"),
             (4, 3, 577, 32, "float16", "v2", None, "normal"), (8, 2, 320, 16, "bfloat16", "v2", "shift", "clustered")]
    _check_problems_in_child(cases, 400, {"FWA_BWD_Q_STRIP_MAX_NPAD": "256"}, "global dbias slice")


@pytest.mark.cuda
@pytest.mark.parametrize("N,d", [(49, 32), (144, 32), (256, 32), (64, 64), (144, 128), (576, 32)])
def test_cuda_bias_mask_build_ordering(N, d):
    """On an H100 the wgmma forward (d <= 32, N <= 256) is launched as a programmatic dependent of
    the bias+mask build (Hopper PDL: its first copies overlap the build, and it reads the built
    tensor only after griddepcontrol.wait); the mma.sync forward (d > 32, N > 256) is launched
    stream-ordered. Back-to-back calls alternate between two biases and masks, each call's
    build reusing memory the allocator just freed: every output must be bitwise the output of a
    call made alone with the same inputs (a read before the build completed would see the other
    call's values)."""
    torch.manual_seed(7 + N + d)
    B_, H, nW = 256, 3, 4
    dt = torch.bfloat16
    q, k, v = (torch.randn(B_, H, N, d, device="cuda", dtype=dt) for _ in range(3))
    ls = torch.log(10 * torch.rand(H, 1, 1, device="cuda") + 1)
    biases = [4 * torch.randn(H, N, N, device="cuda") for _ in range(2)]
    masks = [torch.where(torch.rand(nW, N, N, device="cuda") < 0.3, -100.0, 0.0) for _ in range(2)]
    expected = []
    for i in range(2):
        expected.append(window_attention(q, k, v, biases[i], masks[i], logit_scale=ls))
        torch.cuda.synchronize()
    assert not torch.equal(expected[0], expected[1])
    outs = [window_attention(q, k, v, biases[i % 2], masks[i % 2], logit_scale=ls) for i in range(40)]
    torch.cuda.synchronize()
    for i, out in enumerate(outs):
        assert torch.equal(out, expected[i % 2]), f"call {i} differs from its inputs' output"


@pytest.mark.cuda
@pytest.mark.parametrize("dtype", ["fp16", "bf16"])
@pytest.mark.parametrize("H", [1, 2])
def test_cuda_many_windows(dtype, H):
    """2**17 windows (N = 49, d = 32): fwd + bwd over all of them; every window is compared with the
    float64 reference (computed in chunks) and dbias / dlogit_scale sum over all windows."""
    dt = DTYPES[dtype]
    B_, N, d, nW = 2 ** 17, 49, 32, 64
    problem = make_problem(B_, H, N, d, dtype=dt, device="cuda", version="v2", bias="hnn",
                           mask="shift", nW=nW, layout="packed", seed=100 + H)
    ours = run_ours(problem, _poisoned(window_attention, "cuda"))

    chunk = 8192
    stats = {}  # name -> [max|ours - ref64|, max|ref64|, max|reflp - ref64|]
    sums64 = {"dbias": 0, "dlogit_scale": 0}
    sumslp = {"dbias": 0, "dlogit_scale": 0}
    for start in range(0, B_, chunk):
        sl = slice(start, start + chunk)
        args = (problem.q[sl], problem.k[sl], problem.v[sl], problem.bias, problem.mask)
        kw = dict(logit_scale=problem.logit_scale, dout=problem.dout[sl])
        r64 = reference_float64(*args, **kw)
        rlp = reference_outputs_and_grads(*args, **kw)
        for name in ("out", "dq", "dk", "dv"):
            s = stats.setdefault(name, [0.0, 0.0, 0.0])
            ref = r64[name]
            s[0] = max(s[0], (ours[name][sl].double() - ref).abs().max().item())
            s[1] = max(s[1], ref.abs().max().item())
            s[2] = max(s[2], (rlp[name].double() - ref).abs().max().item())
        for name in ("dbias", "dlogit_scale"):
            sums64[name] = sums64[name] + r64[name]
            sumslp[name] = sumslp[name] + rlp[name].double()
        del r64, rlp
    for name in ("dbias", "dlogit_scale"):
        ref = sums64[name]
        stats[name] = [(ours[name].double() - ref).abs().max().item(), ref.abs().max().item(),
                       (sumslp[name] - ref).abs().max().item()]
    from flash_window_attn.testing import ATOL

    lines, ok = [], True
    for name, (e, scale, base) in stats.items():
        err, err_base = e / scale, base / scale
        good = err <= 2 * err_base + ATOL[dt]
        ok &= good
        lines.append(f"{name}: err {err:.3e} pytorch err {err_base:.3e} {'ok' if good else 'FAIL'}")
    assert ok, "\n".join(lines)


def _peak_extra_bytes(fn):
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    base = torch.cuda.memory_allocated()
    result = fn()
    torch.cuda.synchronize()
    return torch.cuda.max_memory_allocated() - base, result


def _fwd_bwd_peaks(problem):
    """(forward peak, backward peak, bytes of the gradients) of window_attention on problem."""
    inputs = problem.grad_inputs()
    with torch.no_grad():
        fwd_peak, _ = _peak_extra_bytes(lambda: window_attention(*problem.args(), **problem.kwargs()))
    out = window_attention(*problem.args(), **problem.kwargs())
    bwd_peak, grads = _peak_extra_bytes(lambda: torch.autograd.grad(out, list(inputs.values()), problem.dout))
    return fwd_peak, bwd_peak, sum(g.numel() * g.element_size() for g in grads)


@pytest.mark.cuda
def test_cuda_backward_memory():
    """Nothing of size B_*H*N*N is allocated: at N = 1024 (where the fp16 attention matrix, B_*H*N^2*2
    bytes, dwarfs q, k, v), the peak extra memory of the backward and of the forward grows with B_
    far slower than B_*H*N^2*2 and stays far below it. (Workspaces that do not grow with B_, e.g.
    per-CTA dbias partials, are allowed.)"""
    H, N, d, nW = 1, 1024, 32, 4
    dtype = torch.float16
    peaks = {}
    for B_ in (1024, 4096):
        problem = make_problem(B_, H, N, d, dtype=dtype, device="cuda", version="v2", bias="hnn",
                               mask="shift", nW=nW, seed=110)
        peaks[B_] = _fwd_bwd_peaks(problem)
        del problem
        torch.cuda.empty_cache()
    (f1, b1, g1), (f2, b2, g2) = peaks[1024], peaks[4096]
    attn = lambda B_: B_ * H * N * N * 2  # noqa: E731
    mib = lambda x: f"{x / 2**20:.0f} MiB"  # noqa: E731
    report = (f"backward peak {mib(b1)} (B_=1024), {mib(b2)} (B_=4096), gradients {mib(g1)}, {mib(g2)}; "
              f"forward peak {mib(f1)}, {mib(f2)}; B_*H*N^2*2 = {mib(attn(1024))}, {mib(attn(4096))}")
    assert b2 - b1 <= 0.25 * (attn(4096) - attn(1024)), report
    assert b2 <= 0.25 * attn(4096), report
    assert f2 - f1 <= 0.1 * (attn(4096) - attn(1024)) and f2 <= 0.1 * attn(4096), report


@pytest.mark.cuda
def test_cuda_current_stream():
    """The op runs on the current stream (what CUDA graphs and multi-stream code rely on)."""
    problem = make_problem(256, 3, 49, 32, dtype=torch.float16, device="cuda", version="v2",
                           bias="hnn", mask="shift", seed=120)
    expected = run_ours(problem, window_attention)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        got = run_ours(problem, window_attention)
    torch.cuda.current_stream().wait_stream(side)
    torch.cuda.synchronize()
    for name in expected:
        assert _bitwise_equal(expected[name], got[name]), name
