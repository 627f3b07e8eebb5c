"""Sliding-window / block-sliding-window attention (issue 4): numerics, registration, errors.

Numerics: out and dq, dk, dv of the public functions against the float64 dense reference with the
explicit boolean mask (flash_window_attn.local_reference), with the project's rule
(flash_window_attn.testing.compare_to_reference):
    err(ours vs float64) <= 2 * err(same reference in the inputs' dtype vs float64) + atol[dtype].
The grid (L x window pattern x GQA ratio x d x dtype x layout) is covered pairwise, plus L x pattern
in full. CUDA tests are marked `cuda` and skip without a GPU.
"""

from __future__ import annotations

import math
import time

import pytest
import torch
import torch._dynamo
import torch.utils._python_dispatch

from flash_window_attn.local import block_sliding_window_attention, sliding_window_attention
from flash_window_attn.local_reference import local_attention_mask, local_attention_reference
from flash_window_attn.testing import all_pairs, compare_to_reference, normalized_error

from _child_process import run_in_child

fwd_op = torch.ops.flash_window_attn.local_attention_fwd.default
fwd_res_op = torch.ops.flash_window_attn.local_attention_fwd_res.default
bwd_op = torch.ops.flash_window_attn.local_attention_bwd.default

DTYPES = {"fp16": torch.float16, "bf16": torch.bfloat16, "fp32": torch.float32, "fp64": torch.float64}
DEVICES = [
    pytest.param("cpu", id="cpu"),
    pytest.param("cuda", id="cuda", marks=pytest.mark.cuda),
]


# ------------------------------------------------------------------------------------------------
# Problems
# ------------------------------------------------------------------------------------------------


def make_qkv(B, H, Hkv, L, d, *, dtype=torch.float32, device="cpu", layout="contiguous", seed=0,
             requires_grad=True):
    """q (B, H, L, d), k, v (B, Hkv, L, d) and a cotangent dout, in one of several memory layouts:

    contiguous; packed (views of one (B, L, (H + 2 Hkv) d) projection output, as in a transformer);
    permuted (dense (B, L, heads, d) storage seen as (B, heads, L, d)); sliced (every other batch of a
    bigger tensor with extra heads, rows and columns, at an offset). Values are drawn on the CPU from
    a seeded generator so that CPU and CUDA see the same numbers. Gradients are taken with respect to
    the returned q, k, v (views where the layout makes them views).
    """
    g = torch.Generator().manual_seed(seed)

    def randn(*shape):
        return torch.randn(shape, generator=g, dtype=torch.float32).to(device=device, dtype=dtype)

    if layout == "packed":
        base = randn(B, L, (H + 2 * Hkv) * d).requires_grad_(requires_grad)
        heads = base.view(B, L, H + 2 * Hkv, d).transpose(1, 2)
        q, k, v = heads[:, :H], heads[:, H:H + Hkv], heads[:, H + Hkv:]
    elif layout == "permuted":
        leaves = [randn(B, L, n, d).requires_grad_(requires_grad) for n in (H, Hkv, Hkv)]
        q, k, v = (t.transpose(1, 2) for t in leaves)
    elif layout == "sliced":
        leaves = [randn(2 * B, n + 1, L + 3, d + 8).requires_grad_(requires_grad) for n in (H, Hkv, Hkv)]
        q, k, v = (t[::2, 1:, 2:L + 2, 8:] for t in leaves)
    elif layout == "contiguous":
        q, k, v = (randn(B, n, L, d).requires_grad_(requires_grad) for n in (H, Hkv, Hkv))
    else:
        raise ValueError(layout)
    dout = randn(B, H, L, d)
    return q, k, v, dout


# Window patterns: name -> (function of L giving the public call's kwargs, a short description).
# "lt" windows are smaller than L, "eq" equal to it, "gt" larger.
def pattern_call(name: str, L: int):
    """(fn, kwargs, (left, right, block)) for a pattern at length L."""
    w = max(1, L // 5)
    if name == "full":
        return "sliding", dict(window=(-1, -1)), (-1, -1, 1)
    if name == "causal":
        return "sliding", dict(causal=True), (-1, 0, 1)
    if name == "causal_window":  # (-1, 0) spelt as a window
        return "sliding", dict(window=(-1, 0)), (-1, 0, 1)
    if name == "sym_lt":
        return "sliding", dict(window=(w, w)), (w, w, 1)
    if name == "causal_local_lt":
        return "sliding", dict(window=(w, 0)), (w, 0, 1)
    if name == "causal_capped":  # causal caps a positive right at 0
        return "sliding", dict(window=(w, 3), causal=True), (w, 0, 1)
    if name == "asym_lt":
        return "sliding", dict(window=(w // 2, w + 1)), (w // 2, w + 1, 1)
    if name == "sym_eq":
        return "sliding", dict(window=(L, L)), (L, L, 1)
    if name == "causal_local_gt":
        return "sliding", dict(window=(2 * L + 3, 0)), (2 * L + 3, 0, 1)
    if name == "right_only_gt":
        return "sliding", dict(window=(0, 3 * L)), (0, 3 * L, 1)
    if name == "block_div":  # block size dividing L (when L allows)
        bs = max(1, L // 8) if L % 8 == 0 else 1
        return "block", dict(block_size=bs, window_blocks=3), (2, 0, bs)
    if name == "block_nodiv":
        bs = 7 if L > 7 else max(1, L)
        return "block", dict(block_size=bs, window_blocks=2), (1, 0, bs)
    if name == "block_diag":
        bs = 16
        return "block", dict(block_size=bs, window_blocks=1), (0, 0, bs)
    if name == "block_gt":  # more window blocks than blocks: block-causal over everything
        bs = 5
        return "block", dict(block_size=bs, window_blocks=L + 2), (L + 1, 0, bs)
    raise ValueError(name)


PATTERNS = ["full", "causal", "causal_window", "sym_lt", "causal_local_lt", "causal_capped", "asym_lt",
            "sym_eq", "causal_local_gt", "right_only_gt", "block_div", "block_nodiv", "block_diag", "block_gt"]


def call_public(kind, q, k, v, kwargs, scale=None):
    if kind == "sliding":
        return sliding_window_attention(q, k, v, scale=scale, **kwargs)
    return block_sliding_window_attention(q, k, v, scale=scale, **kwargs)


def sizes_for(L: int, gqa: int, device: str):
    """(B, Hkv): small problems for long sequences keep the CPU suite fast."""
    if L >= 1000:
        return 1, 2 if gqa < 8 else 1
    if L >= 128:
        return 1, 2 if gqa < 8 else 1
    return 2, 2


def _grads(out, inputs, dout):
    return dict(zip(("dq", "dk", "dv"), torch.autograd.grad(out, inputs, dout)))


def reference_results(q, k, v, dout, band, scale, dtype):
    """The dense reference's out and grads, run in `dtype` (float64 for the oracle)."""
    qq, kk, vv = (t.detach().to(dtype).requires_grad_(True) for t in (q, k, v))
    out = local_attention_reference(qq, kk, vv, *band, scale)
    res = {"out": out.detach()}
    res.update(_grads(out, (qq, kk, vv), dout.to(dtype)))
    return res


def check_case(kind, kwargs, band, q, k, v, dout, dtype, *, scale=None, desc=""):
    out = call_public(kind, q, k, v, kwargs, scale=scale)
    ours = {"out": out.detach(), **_grads(out, (q, k, v), dout)}
    d = q.shape[-1]
    sc = d ** -0.5 if scale is None else scale
    ref64 = reference_results(q, k, v, dout, band, sc, torch.float64)
    reflp = reference_results(q, k, v, dout, band, sc, dtype) if dtype != torch.float64 else None
    if reflp is None:  # the same formula in float64 has error ~1e-16: keep the baseline explicit
        reflp = reference_results(q, k, v, dout, band, sc, torch.float64)
    ok, lines = compare_to_reference(ours, ref64, reflp, dtype)
    assert ok, f"{desc}\n" + "\n".join(lines)
    # output contract: contiguous, input dtype, shapes
    B, H, L, _ = q.shape
    assert out.shape == (B, H, L, d) and out.dtype == q.dtype and out.is_contiguous()
    assert ours["dq"].shape == q.shape and ours["dk"].shape == k.shape and ours["dv"].shape == v.shape
    for name in ("dq", "dk", "dv"):
        assert ours[name].dtype == q.dtype
    return ours


# ------------------------------------------------------------------------------------------------
# The grid, covered pairwise
# ------------------------------------------------------------------------------------------------

FACTORS = {
    "L": [1, 17, 128, 1000],
    "pattern": PATTERNS,
    "gqa": [1, 2, 8],
    "d": [32, 64, 128],
    "layout": ["contiguous", "packed", "sliced", "permuted"],
}


def _grid(dtypes, extra_L=(), marks=()):
    cases = all_pairs({**FACTORS, "L": FACTORS["L"] + list(extra_L), "dtype": dtypes})
    covered = {(c["L"], c["pattern"], c["dtype"]) for c in cases}
    n = 0
    for L in FACTORS["L"] + list(extra_L):  # L x pattern x dtype in full
        for pat in PATTERNS:
            for dt in dtypes:
                if (L, pat, dt) not in covered:
                    cases.append({"L": L, "pattern": pat, "dtype": dt, "gqa": [1, 2, 8][n % 3],
                                  "d": [32, 64, 128][(n // 3) % 3], "layout": FACTORS["layout"][n % 4]})
                    n += 1
    params = []
    for i, c in enumerate(cases):
        cid = f"L{c['L']}-{c['pattern']}-gqa{c['gqa']}-d{c['d']}-{c['layout']}-{c['dtype']}"
        params.append(pytest.param(c, i, id=cid, marks=list(marks)))
    return params


def _run_grid_case(case, seed, device):
    L, gqa, d, dtype = case["L"], case["gqa"], case["d"], DTYPES[case["dtype"]]
    B, Hkv = sizes_for(L, gqa, device)
    if L >= 4096:
        B, Hkv, d = 1, 1, min(d, 64)
    H = gqa * Hkv
    kind, kwargs, band = pattern_call(case["pattern"], L)
    q, k, v, dout = make_qkv(B, H, Hkv, L, d, dtype=dtype, device=device, layout=case["layout"], seed=seed)
    check_case(kind, kwargs, band, q, k, v, dout, dtype, desc=f"{case} B={B} H={H} Hkv={Hkv} d={d}")


@pytest.mark.parametrize("case,seed", _grid(["fp32", "fp64", "bf16"]))
def test_grid_cpu(case, seed):
    _run_grid_case(case, seed, "cpu")


@pytest.mark.parametrize("case,seed", _grid(["fp16", "bf16", "fp32"], extra_L=(4096,), marks=(pytest.mark.cuda,)))
def test_grid_cuda(case, seed):
    _run_grid_case(case, seed, "cuda")


@pytest.mark.cuda
@pytest.mark.parametrize("dtype_name", ["fp16", "bf16"])
@pytest.mark.parametrize("d", [64, 128])
@pytest.mark.parametrize("scale", [0.3, 0.0, -0.3])
def test_cuda_scale_sign(dtype_name, d, scale):
    """The wgmma and warp-specialised forwards fold the scale into the exponent (the row max of the
    raw logits, scaled once: right for scale > 0 only), so a zero or negative scale runs the
    mma.sync forward (local_attn_fwd). Every sign against float64, with steps that are all allowed
    (the folded path) and band edges, on a grid large enough for the warp-specialised kernels."""
    dtype = DTYPES[dtype_name]
    for pat, L, B, H in (("block_div", 1000, 1, 4), ("causal_local_lt", 1000, 1, 4), ("causal", 2048, 1, 66)):
        kind, kwargs, band = pattern_call(pat, L)
        q, k, v, dout = make_qkv(B, H, H, L, d, dtype=dtype, device="cuda", seed=L + d)
        check_case(kind, kwargs, band, q, k, v, dout, dtype, scale=scale, desc=f"{pat} L={L} scale={scale}")


@pytest.mark.cuda
@pytest.mark.parametrize("env", [{"FWA_LOCAL_WGMMA": "0"}, {"FWA_LOCAL_WGMMA": "fwd"}, {"FWA_LOCAL_WG": "2"},
                                 {"FWA_LOCAL_WG": "3"}, {"FWA_LOCAL_FWD_KEYS": "64"}, {"FWA_LOCAL_FWD_WS": "1"},
                                 {"FWA_LOCAL_FWD_WS": "0"}, {"FWA_LOCAL_BWD_Q_WS": "1"}, {"FWA_LOCAL_BWD_Q_WS": "0"},
                                 {"FWA_LOCAL_BWD_KV_WS": "1"}, {"FWA_LOCAL_BWD_KV_WS": "0"},
                                 {"FWA_LOCAL_FWD_WS": "1", "FWA_LOCAL_BWD_Q_WS": "1", "FWA_LOCAL_WS_SHIFT": "1"},
                                 {"FWA_LOCAL_FWD_WS": "1", "FWA_LOCAL_BWD_Q_WS": "1", "FWA_LOCAL_WS_SHIFT": "2"},
                                 {"FWA_LOCAL_BWD_Q_WS": "1", "FWA_LOCAL_BWD_KV_WS": "1"},
                                 {"FWA_LOCAL_BWD_Q_WS": "1", "FWA_LOCAL_BWD_KV_WS": "1", "FWA_LOCAL_BWD_RESIDUAL": "0"}],
                         ids=["mma_sync", "wgmma_fwd_only", "wgmma_fwd_2_warpgroups", "wgmma_fwd_3_warpgroups",
                              "wgmma_fwd_64_key_steps", "ws_fwd_every_grid", "ws_fwd_never", "ws_bwd_q_every_grid",
                              "ws_bwd_q_never", "ws_bwd_kv_every_grid", "ws_bwd_kv_never", "ws_shift_1_every_grid",
                              "ws_shift_2_every_grid", "ws_bwd_residual_d_every_grid", "ws_bwd_exact_d_every_grid"])
def test_grid_cuda_other_kernels_in_subprocess(env):
    """On an sm_90a build and a compute capability 9.0 GPU the fp16 / bf16 kernels at d > 32 run on
    wgmma (test_grid_cuda checks them at one warpgroup per CTA: the forward takes 3 at d = 128 only
    on grids of at least 4 such CTAs per SM, larger than the grid's); FWA_LOCAL_WGMMA=0 selects the
    mma.sync kernels that every other GPU runs, "fwd" the wgmma forward with the mma.sync backward
    (the backward recomputes P from the forward's lse either way), FWA_LOCAL_WG=2 / 3 the wgmma
    forward with that many warpgroups per CTA sharing the streamed k / v tiles,
    FWA_LOCAL_FWD_KEYS=64 the one-warpgroup forward at d = 64 with 64-key steps (default 128),
    FWA_LOCAL_FWD_WS=1 the warp-specialised TMA forward (d > 32) on every grid (by default only
    on grids that fill the GPU, so test_grid_cuda's small problems run the one-warpgroup kernel),
    =0 never; FWA_LOCAL_BWD_Q_WS=1 / 0 and FWA_LOCAL_BWD_KV_WS=1 / 0 the same for the backward's
    warp-specialised query side and key side; FWA_LOCAL_WS_SHIFT=1 / 2 the warp-specialised
    forward and query side on every grid with their items shifted by 1 / 2 query tiles (a first
    item holding tiles < 0, even at L = 1); both warp-specialised backward kernels on every grid,
    which is where the residual-D backward runs (D = dout · (out + out_lo) from the forward's
    residual, no exact-D sums), and the same with FWA_LOCAL_BWD_RESIDUAL=0 (the exact-D sums).
    The fp16 / bf16 grid at d 64 and 128 must pass through those too: a child process, since the
    switches are read once per process."""
    import os

    code = (
        "import sys\n"
        f"sys.path.insert(0, {os.path.dirname(os.path.abspath(__file__))!r})\n"
        "import test_local_attention as t\n"
        "n = 0\n"
        "for p in t._grid(['fp16', 'bf16'], extra_L=(4096,)):\n"
        "    case, seed = p.values\n"
        "    if case['d'] > 32:\n"
        "        t._run_grid_case(case, seed, 'cuda')\n"
        "        n += 1\n"
        "print('ok', n)\n"
    )
    out = run_in_child(code, env, str(env), timeout=900)
    assert int(out.split()[-1]) >= 20, out


# Block bands whose warp-specialised work items (3 consecutive 64-query tiles) hold a tile whose band
# ends 3 or more key steps before the item's last step: at L = 1024 with blocks of 256 the item of
# tiles 3, 4, 5 has tile 3 on keys 0..255 and tiles 4, 5 on keys 0..511. The forward at d = 128 and
# the backward's query side at d = 64 defer a step's last product to the next step they compute;
# such a tile must complete it at its first step outside its band (session 39: the first form held
# the product's stage there while waiting for a step whose copies needed that stage, and hung).
_WIDE_BLOCK_CASES = [(1024, 128, 256, 2), (1024, 64, 256, 2), (1000, 128, 300, 1)]  # (L, d, block, window blocks)


def _run_wide_block_cases(device, dtypes):
    n = 0
    for L, d, bs, wb in _WIDE_BLOCK_CASES:
        for dt in dtypes:
            q, k, v, dout = make_qkv(1, 2, 2, L, d, dtype=DTYPES[dt], device=device, seed=L + d + bs)
            check_case("block", dict(block_size=bs, window_blocks=wb), (wb - 1, 0, bs), q, k, v, dout, DTYPES[dt],
                       desc=f"L={L} d={d} block {bs} x {wb} {dt} {device}")
            n += 1
    return n


def test_wide_block_bands_cpu():
    assert _run_wide_block_cases("cpu", ["fp32"]) == len(_WIDE_BLOCK_CASES)


@pytest.mark.cuda
@pytest.mark.parametrize("shift", [None, "0", "1", "2"], ids=["default_shift", "shift_0", "shift_1", "shift_2"])
def test_wide_block_bands_warp_specialised_in_subprocess(shift):
    """The cases above through every warp-specialised kernel (forward, query side, key side), in a
    child process with a time limit: a kernel that waits forever fails the test instead of the
    suite. With each item shift of the query-side kernels (FWA_LOCAL_WS_SHIFT; see
    _WS_SHIFT_CASES below), which regroups the tiles whose bands end apart."""
    import os

    code = (
        "import sys\n"
        f"sys.path.insert(0, {os.path.dirname(os.path.abspath(__file__))!r})\n"
        "import test_local_attention as t\n"
        "print('ok', t._run_wide_block_cases('cuda', ['fp16', 'bf16']))\n"
    )
    env = {"FWA_LOCAL_FWD_WS": "1", "FWA_LOCAL_BWD_Q_WS": "1", "FWA_LOCAL_BWD_KV_WS": "1"}
    if shift is not None:
        env["FWA_LOCAL_WS_SHIFT"] = shift
    out = run_in_child(code, env, f"wide block bands, warp-specialised kernels, shift {shift}", timeout=300)
    assert int(out.split()[-1]) == 2 * len(_WIDE_BLOCK_CASES), out


# The warp-specialised query-side kernels' item shift (local_ws_items in local_band.h: item m holds
# the 64-query tiles from m * 3 - shift; by default the shift with the fewest idle consumer steps,
# FWA_LOCAL_WS_SHIFT=s forces s, read per call). Each case: (B, H, Hkv, L, d, kind, kwargs, band,
# bitwise), where bitwise says the outputs cannot depend on the shift: the query side's products
# per tile are the same at every shift, and so are the forward's where its steps are 64 keys
# (d = 128) or every item's first key tile is 0 (d = 64 with the left side unbounded); elsewhere the
# d = 64 forward pairs its 64-key tiles into 128-key steps from the item's first tile, so the
# rounding may differ (the results must still be right).
_WS_SHIFT_CASES = [
    (1, 4, 2, 1000, 128, "sliding", dict(window=(100, 50)), (100, 50, 1), True),
    (1, 4, 4, 1024, 128, "block", dict(block_size=256, window_blocks=2), (1, 0, 256), True),
    (1, 4, 2, 1000, 64, "sliding", dict(window=(-1, 0)), (-1, 0, 1), True),
    (1, 4, 4, 1024, 64, "block", dict(block_size=256, window_blocks=4), (-1, 0, 256), True),
    (1, 4, 4, 1000, 64, "sliding", dict(window=(100, 0)), (100, 0, 1), False),
    (1, 2, 2, 130, 64, "block", dict(block_size=16, window_blocks=3), (2, 0, 16), False),
]


def _run_ws_shift_cases(dtypes):
    import os

    n = 0
    for B, H, Hkv, L, d, kind, kwargs, band, bitwise in _WS_SHIFT_CASES:
        for dt in dtypes:
            q, k, v, dout = make_qkv(B, H, Hkv, L, d, dtype=DTYPES[dt], device="cuda", seed=L + d)
            results = []
            for shift in ("0", "1", "2"):
                os.environ["FWA_LOCAL_WS_SHIFT"] = shift
                results.append(check_case(kind, kwargs, band, q, k, v, dout, DTYPES[dt],
                                          desc=f"{kind} {kwargs} L={L} d={d} {dt} shift {shift}"))
            if bitwise:
                for r in results[1:]:
                    for name in ("out", "dq", "dk", "dv"):
                        assert torch.equal(results[0][name], r[name]), (kind, kwargs, L, d, dt, name)
            n += 1
    os.environ.pop("FWA_LOCAL_WS_SHIFT", None)
    return n


@pytest.mark.cuda
def test_ws_item_shift_in_subprocess():
    """Every forced item shift (0, 1, 2) through the warp-specialised forward and query side (on
    every grid, in a child process since those switches are read once per process): right against
    float64, and bitwise the same outputs where the shift cannot change them (see above)."""
    import os

    code = (
        "import sys\n"
        f"sys.path.insert(0, {os.path.dirname(os.path.abspath(__file__))!r})\n"
        "import test_local_attention as t\n"
        "print('ok', t._run_ws_shift_cases(['fp16', 'bf16']))\n"
    )
    env = {"FWA_LOCAL_FWD_WS": "1", "FWA_LOCAL_BWD_Q_WS": "1", "FWA_LOCAL_BWD_KV_WS": "1"}
    out = run_in_child(code, env, "item shifts, warp-specialised kernels", timeout=300)
    assert int(out.split()[-1]) == 2 * len(_WS_SHIFT_CASES), out


# Backward problems for the PDL chain check: the small (single-wave) grids where the key and query
# sides run the plain kernels, GQA, L not a multiple of 64, a block band, d 32 / 64 / 128; and the
# grids where the warp-specialised kernels run (H100 / H200: at least one work item per SM), which
# are in the chain too since session 51: both sides (d 64; d 128 with GQA), only the query side
# (key side plain), only the key side (query side plain).
_PDL_CASES = [  # (B, H, Hkv, L, d, kind, kwargs)
    (1, 4, 4, 4096, 128, "sliding", dict(window=(256, 256))),
    (2, 4, 2, 1000, 64, "sliding", dict(window=(100, 50))),
    (1, 8, 1, 777, 32, "sliding", dict(window=(-1, 0))),
    (1, 4, 2, 1000, 64, "block", dict(block_size=100, window_blocks=3)),
    (1, 12, 12, 4096, 64, "block", dict(block_size=256, window_blocks=16)),
    (1, 8, 4, 8192, 128, "sliding", dict(window=(1024, 0))),
    (1, 16, 2, 4096, 64, "sliding", dict(window=(256, 0))),
    (1, 5, 5, 4096, 128, "sliding", dict(window=(512, 512))),
]


@pytest.mark.cuda
def test_cuda_backward_pdl_chain_bitwise_in_subprocess(tmp_path):
    """On sm_90a the backward's preprocess, key side and query side (plain or warp-specialised) run
    as programmatic dependents, each copying what predates the backward before it waits for the
    previous kernel (the key side k and v, the query side q and dout; the warp-specialised kernels'
    copy warp does not wait at all); FWA_WINDOW_PDL=0 launches each after the previous one
    completes. out, dq, dk and dv must be bitwise equal both ways (a kernel reading D, the max
    |dout| / |v| or the key side's d_acc sums too early would show)."""
    import os

    results = []
    for form in ("default", "0"):
        path = str(tmp_path / f"pdl-{form}.pt")
        code = (
            "import sys, torch\n"
            f"sys.path.insert(0, {os.path.dirname(os.path.abspath(__file__))!r})\n"
            "import test_local_attention as t\n"
            "res = []\n"
            "for i, (B, H, Hkv, L, d, kind, kw) in enumerate(t._PDL_CASES):\n"
            "    for dt in (torch.float16, torch.bfloat16):\n"
            "        q, k, v, dout = t.make_qkv(B, H, Hkv, L, d, dtype=dt, device='cuda', seed=3100 + i,\n"
            "                                   layout='packed' if i % 2 else 'contiguous')\n"
            "        fn = t.sliding_window_attention if kind == 'sliding' else t.block_sliding_window_attention\n"
            "        out = fn(q, k, v, **kw)\n"
            "        grads = torch.autograd.grad(out, (q, k, v), dout)\n"
            "        res.append([x.detach().cpu() for x in (out, *grads)])\n"
            f"torch.save(res, {path!r})\n"
            "print('ok', len(res))\n"
        )
        run_in_child(code, {} if form == "default" else {"FWA_WINDOW_PDL": "0"}, f"local backward PDL chain, {form}",
                     timeout=300)
        results.append(torch.load(path))
    default, off = results
    assert len(default) == len(off) == 2 * len(_PDL_CASES)
    for i, (a, b) in enumerate(zip(default, off)):
        for name, x, y in zip(("out", "dq", "dk", "dv"), a, b):
            assert torch.equal(x.view(torch.int16), y.view(torch.int16)), (_PDL_CASES[i // 2], name)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("band", [(-1, -1, 1), (-1, 0, 1), (3, 2, 1), (0, 0, 1), (1, 1, 5), (2, 0, 4), (0, 4, 3),
                                  (-1, 1, 6), (2, -1, 2), (2 ** 40, 0, 3), (0, 2 ** 62, 2 ** 62), (1, 1, 2 ** 62)])
def test_general_bands_through_the_op(device, band):
    """Bands the public functions cannot express (right > 0 with block > 1, left = -1 with block > 1,
    right unbounded) and huge left / right / block (no overflow), through the op and its autograd."""
    dtype = torch.float64 if device == "cpu" else torch.float32
    B, H, Hkv, L, d = 2, 4, 2, 45, 16
    q, k, v, dout = make_qkv(B, H, Hkv, L, d, dtype=dtype, device=device, layout="packed", seed=sum(band) % 1000 + 50)
    out, lse = fwd_op(q, k, v, *band, 0.3)
    ours = {"out": out.detach(), **_grads(out, (q, k, v), dout)}
    ref64 = reference_results(q, k, v, dout, band, 0.3, torch.float64)
    reflp = reference_results(q, k, v, dout, band, 0.3, dtype)
    ok, lines = compare_to_reference(ours, ref64, reflp, dtype)
    assert ok, f"band {band}\n" + "\n".join(lines)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype_name", ["fp32", "fp64", "bf16", "fp16"])
def test_lse(device, dtype_name):
    """lse = natural-log log-sum-exp of the scaled logits over the allowed keys, fp32, contiguous."""
    dtype = DTYPES[dtype_name]
    if device == "cuda" and dtype == torch.float64:
        pytest.skip("float64 is CPU-only")
    for band in [(-1, -1, 1), (5, 0, 1), (1, 0, 8), (4, 7, 1)]:
        q, k, v, _ = make_qkv(2, 4, 2, 77, 32, dtype=dtype, device=device, requires_grad=False, seed=3)
        out, lse = fwd_op(q, k, v, *band, 0.25)
        _, lse64 = local_attention_reference(q.double(), k.double(), v.double(), *band, 0.25, return_lse=True)
        assert lse.dtype == torch.float32 and lse.shape == (2, 4, 77) and lse.is_contiguous()
        assert out.is_contiguous() and out.dtype == dtype
        # lse is computed from the (exactly representable) inputs in fp32: fp32 accuracy in every dtype
        assert (lse.double() - lse64).abs().max().item() <= 1e-5 * max(1.0, lse64.abs().max().item())


def test_mask_matches_issue_definition():
    """The oracle's mask is the issue's rule, written out element by element."""
    for L in (1, 9, 23):
        for left, right, block in [(-1, -1, 1), (-1, 0, 1), (3, 3, 1), (2, 0, 1), (0, 0, 4), (1, 0, 4), (2, 1, 3),
                                   (-1, 2, 5), (30, 0, 1)]:
            m = local_attention_mask(L, left, right, block)
            for i in range(L):
                for j in range(L):
                    bi, bj = i // block, j // block
                    want = (left < 0 or bi - bj <= left) and (right < 0 or bj - bi <= right)
                    assert bool(m[i, j]) == want, (L, left, right, block, i, j)
            assert m.diagonal().all()  # no empty row
    # the public spellings: sliding window i - left <= j <= i + right; block window bi - wb + 1 .. bi
    L = 20
    i, j = torch.arange(L)[:, None], torch.arange(L)[None, :]
    assert torch.equal(local_attention_mask(L, 3, 2, 1), (j >= i - 3) & (j <= i + 2))
    bs, wb = 4, 2
    assert torch.equal(local_attention_mask(L, wb - 1, 0, bs), (j // bs <= i // bs) & (j // bs >= i // bs - wb + 1))


def test_public_spellings_agree():
    """causal=True equals window[1] = 0; windows wider than L equal unbounded ones; bitwise (same bands)."""
    q, k, v, _ = make_qkv(1, 4, 2, 50, 32, requires_grad=False, seed=9)
    f = sliding_window_attention
    assert torch.equal(f(q, k, v, causal=True), f(q, k, v, window=(-1, 0)))
    assert torch.equal(f(q, k, v, window=(7, -1), causal=True), f(q, k, v, window=(7, 0)))
    assert torch.equal(f(q, k, v, window=(7, 30), causal=True), f(q, k, v, window=(7, 0)))
    assert torch.equal(f(q, k, v, window=(50, 49)), f(q, k, v))
    assert torch.equal(f(q, k, v, window=(1000, 0)), f(q, k, v, causal=True))
    assert torch.equal(block_sliding_window_attention(q, k, v, 1, 8), f(q, k, v, window=(7, 0)))
    assert torch.equal(block_sliding_window_attention(q, k, v, 50, 1), f(q, k, v))
    # scale: explicit default equals the default
    assert torch.equal(f(q, k, v, window=(3, 3), scale=32 ** -0.5), f(q, k, v, window=(3, 3)))


@pytest.mark.parametrize("device", DEVICES)
def test_grad_of_sum_expanded_cotangent(device):
    """out.sum() gives an expanded (zero-stride) cotangent; the autograd wrapper copes."""
    q, k, v, _ = make_qkv(1, 2, 1, 33, 16, dtype=torch.float64 if device == "cpu" else torch.float32,
                          device=device, seed=4)
    out = sliding_window_attention(q, k, v, window=(4, 0))
    gq, gk, gv = torch.autograd.grad(out.sum(), (q, k, v))
    ref = reference_results(q, k, v, torch.ones_like(out), (4, 0, 1), 16 ** -0.5, torch.float64)
    for name, g in zip(("dq", "dk", "dv"), (gq, gk, gv)):
        assert normalized_error(g, ref[name]) < 1e-5, name


def test_long_sequence_small_window_is_banded():
    """Cost follows L x window: L = 65536 with a 16-key causal window (fwd + bwd) is fast. A dense
    L^2 computation here is ~2 x 10^11 multiply-adds (minutes on this CPU); the band is ~10^8."""
    q, k, v, dout = make_qkv(1, 2, 1, 65536, 32, seed=5)
    t0 = time.perf_counter()
    out = sliding_window_attention(q, k, v, window=(15, 0))
    grads = torch.autograd.grad(out, (q, k, v), dout)
    elapsed = time.perf_counter() - t0
    assert all(torch.isfinite(g).all() for g in grads)
    assert elapsed < 20.0, f"L=65536, window 16 took {elapsed:.1f} s"
    # spot-check the last rows against the reference on a suffix (the band makes rows local)
    tail = 64
    sl = slice(65536 - tail - 15, 65536)
    ref = local_attention_reference(q[:, :, sl].double(), k[:, :, sl].double(), v[:, :, sl].double(), 15, 0, 1)
    assert normalized_error(out[:, :, -tail:], ref[:, :, -tail:]) < 1e-5


# ------------------------------------------------------------------------------------------------
# Determinism, empty problems
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("device", DEVICES)
def test_deterministic(device):
    """Gradients (dk / dv summed over 8 query heads) are bitwise equal run to run, and on the CPU
    for any thread count."""
    dtype = torch.float32
    q, k, v, dout = make_qkv(1, 8, 1, 300, 64, dtype=dtype, device=device, layout="packed", seed=6)

    def run():
        out = sliding_window_attention(q, k, v, window=(40, 10))
        return [out.detach(), *torch.autograd.grad(out, (q, k, v), dout)]

    first = run()
    for _ in range(3):
        for a, b in zip(first, run()):
            assert torch.equal(a, b)
    if device == "cpu":
        n = torch.get_num_threads()
        try:
            torch.set_num_threads(1)
            single = run()
        finally:
            torch.set_num_threads(n)
        for a, b in zip(first, single):
            assert torch.equal(a, b)


def _fill_freed_memory(gen, device):
    """Allocates buffers of assorted sizes, fills them with random values and frees them, so that the
    caching allocator hands the next call memory holding other contents than the last call's."""
    bufs = [torch.randn(n, device=device, generator=gen) * 100 for n in (1 << 14, 49152, 1 << 18, 3 << 16, 1 << 20, 1 << 22)]
    x = torch.randn(1024, 1024, device=device, generator=gen)
    bufs.append(x @ x)
    del bufs, x


@pytest.mark.cuda
@pytest.mark.parametrize("dt", ["fp16", "bf16"])
def test_deterministic_16bit_with_memory_reuse_cuda(dt):
    """out, dq, dk and dv bitwise equal run to run in 16 bits on the grids of _RES_CASES (on an H100
    / H200 the first two run the warp-specialised forward and the residual-D backward), with other
    work between the runs that leaves other contents in the memory the next run's buffers and
    workspace reuse (a kernel reading a buffer before it is written would show; session 58 run C
    saw dq differ once between two calls of test_residual_d_backward_cuda, with the float64
    reference run between them)."""
    dtype = DTYPES[dt]
    gen = torch.Generator(device="cuda").manual_seed(58)
    for i, (B, H, Hkv, L, d, kind, kwargs, band) in enumerate(_RES_CASES):
        q, k, v, dout = make_qkv(B, H, Hkv, L, d, dtype=dtype, device="cuda", seed=110 + i)

        def run():
            out = call_public(kind, q, k, v, kwargs)
            return [out.detach(), *torch.autograd.grad(out, (q, k, v), dout)]

        first = run()
        for it in range(12):
            _fill_freed_memory(gen, "cuda")
            for name, a, b in zip(("out", "dq", "dk", "dv"), first, run()):
                assert torch.equal(a, b), (kind, kwargs, it, name, (a.float() - b.float()).abs().max().item())


@pytest.mark.cuda
@pytest.mark.parametrize("dtype_name", ["bf16", "fp16"])
@pytest.mark.parametrize("band,L,H,Hkv,d", [
    ((-1, 0, 1), 1000, 4, 2, 64),      # plain causal: tile-major by default
    ((-1, 0, 128), 1100, 2, 2, 128),   # block-causal spanning the sequence (video)
    ((3, -1, 64), 700, 8, 1, 64),      # right unbounded: tile-major, tiles ascending (heaviest first)
    ((-1, 0, 1), 333, 2, 1, 32),       # d = 32: the mma.sync kernels
    ((100, 0, 1), 900, 6, 3, 64),      # both sides bounded: slice-major by default
], ids=["causal", "block-causal", "right-unbounded", "causal-d32", "banded"])
def test_cta_order_is_bitwise_neutral(monkeypatch, dtype_name, band, L, H, Hkv, d):
    """The CTA order (tile-major, heaviest tile first, in groups of (b, head) slices whose k / v fit
    a share of the L2, where one side of the band is unbounded; FWA_LOCAL_TILE_MAJOR=0 forces
    slice-major, =1 one group of every slice, FWA_LOCAL_TILE_GROUP=G groups of G, all read per
    call) only changes which CTA computes which tile: out, lse and every gradient are bitwise the
    same in every order (groups of 3 leave a smaller last group: 2 H or 2 Hkv slices are not
    multiples of 3 here), and right against float64."""
    dtype = DTYPES[dtype_name]
    q, k, v, dout = make_qkv(2, H, Hkv, L, d, dtype=dtype, device="cuda", layout="packed", seed=L + d)
    orders = {"default": {}, "slice-major": {"FWA_LOCAL_TILE_MAJOR": "0"},
              "one group": {"FWA_LOCAL_TILE_MAJOR": "1"}, "groups of 3": {"FWA_LOCAL_TILE_GROUP": "3"}}
    results = {}
    for name, env in orders.items():
        monkeypatch.delenv("FWA_LOCAL_TILE_MAJOR", raising=False)
        monkeypatch.delenv("FWA_LOCAL_TILE_GROUP", raising=False)
        for key, value in env.items():
            monkeypatch.setenv(key, value)
        out, lse = fwd_op(q, k, v, *band, d ** -0.5)
        results[name] = [out.detach(), lse, *torch.autograd.grad(out, (q, k, v), dout)]
    for order in orders:
        for name, a, b in zip(("out", "lse", "dq", "dk", "dv"), results["default"], results[order]):
            assert torch.equal(a, b), f"{name} differs between the default CTA order and {order}"
    out = results["default"]
    ours = {"out": out[0], "dq": out[2], "dk": out[3], "dv": out[4]}
    ref64 = reference_results(q, k, v, dout, band, d ** -0.5, torch.float64)
    reflp = reference_results(q, k, v, dout, band, d ** -0.5, dtype)
    ok, lines = compare_to_reference(ours, ref64, reflp, dtype)
    assert ok, f"band {band}\n" + "\n".join(lines)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("B,H,Hkv,L", [(0, 4, 2, 16), (2, 4, 2, 0), (0, 2, 1, 0), (2, 0, 1, 16)])
def test_empty(device, B, H, Hkv, L):
    """B = 0, L = 0 (and H = 0) give empty results forward and backward; with H = 0, dk and dv are
    sums over no query head: zeros."""
    d = 32
    q, k, v, dout = make_qkv(B, H, Hkv, L, d, device=device, seed=7)
    out = sliding_window_attention(q, k, v, window=(3, 0))
    assert out.shape == (B, H, L, d)
    o, lse = fwd_op(q.detach(), k.detach(), v.detach(), 3, 0, 1, 0.5)
    assert lse.shape == (B, H, L) and lse.dtype == torch.float32
    dq, dk, dv = bwd_op(dout, q.detach(), k.detach(), v.detach(), o, lse, 3, 0, 1, 0.5)
    assert dq.shape == q.shape and dk.shape == k.shape and dv.shape == v.shape
    assert (dk == 0).all() and (dv == 0).all()
    gq, gk, gv = torch.autograd.grad(out, (q, k, v), dout)
    assert gq.shape == q.shape and gk.shape == k.shape and gv.shape == v.shape
    assert (gk == 0).all() and (gv == 0).all()


# ------------------------------------------------------------------------------------------------
# Registration: opcheck, fake kernels, torch.compile
# ------------------------------------------------------------------------------------------------

OPCHECK_CASES = [
    ("causal_local", (2, 4, 2, 37, 32), (5, 0, 1), "contiguous"),
    ("sym_gqa4_packed", (1, 8, 2, 50, 16), (3, 3, 1), "packed"),
    ("block_permuted", (2, 2, 2, 40, 32), (1, 0, 7), "permuted"),
    ("full_sliced", (1, 2, 1, 20, 64), (-1, -1, 1), "sliced"),
    ("L1", (1, 2, 2, 1, 8), (0, 0, 1), "contiguous"),
]


@pytest.fixture
def _reset_dynamo():
    torch._dynamo.reset()
    yield
    torch._dynamo.reset()


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name,shape,band,layout", OPCHECK_CASES, ids=[c[0] for c in OPCHECK_CASES])
def test_opcheck(device, name, shape, band, layout):
    dtype = torch.float32
    q, k, v, dout = make_qkv(*shape, dtype=dtype, device=device, layout=layout, seed=8)
    torch.library.opcheck(fwd_op, (q, k, v, *band, 0.3))
    qd, kd, vd = q.detach(), k.detach(), v.detach()
    torch.library.opcheck(fwd_op, (qd, kd, vd, *band, 0.3))
    out, lse = fwd_op(qd, kd, vd, *band, 0.3)
    torch.library.opcheck(bwd_op, (dout, qd, kd, vd, out, lse, *band, 0.3))
    torch.library.opcheck(fwd_res_op, (qd, kd, vd, *band, 0.3))


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dt", ["fp16", "bf16"])
def test_opcheck_fwd_res_and_bwd_out_lo_16bit(device, dt):
    """local_attention_fwd_res and local_attention_bwd with its out_lo (a real (B, H, L, d) bfloat16
    residual on CUDA, an empty tensor on CPU) in 16 bits."""
    q, k, v, dout = make_qkv(1, 4, 2, 100, 64, dtype=DTYPES[dt], device=device, seed=81, requires_grad=False)
    band = (20, 0, 1)
    torch.library.opcheck(fwd_res_op, (q, k, v, *band, 0.125))
    out, lse, out_lo = fwd_res_op(q, k, v, *band, 0.125)
    torch.library.opcheck(bwd_op, (dout, q, k, v, out, lse, *band, 0.125), {"out_lo": out_lo})


@pytest.mark.parametrize("device", DEVICES)
def test_fake_kernels_match_real(device):
    from torch._subclasses.fake_tensor import FakeTensorMode

    for i, (name, shape, band, layout) in enumerate(OPCHECK_CASES):
        q, k, v, dout = make_qkv(*shape, device=device, layout=layout, seed=i, requires_grad=False)
        real = list(fwd_op(q, k, v, *band, 0.3))
        real += list(bwd_op(dout, q, k, v, real[0], real[1], *band, 0.3))
        with FakeTensorMode() as mode:
            fq, fk, fv, fd = (mode.from_tensor(t) for t in (q, k, v, dout))
            fake = list(fwd_op(fq, fk, fv, *band, 0.3))
            fake += list(bwd_op(fd, fq, fk, fv, fake[0], fake[1], *band, 0.3))
        for r, f in zip(real, fake):
            assert (r.shape, r.dtype, r.stride(), r.device) == (f.shape, f.dtype, f.stride(), f.device), name
    for dt in (torch.float32, torch.float16, torch.bfloat16):
        q, k, v, dout = make_qkv(1, 4, 2, 70, 32, dtype=dt, device=device, seed=5, requires_grad=False)
        real = list(fwd_res_op(q, k, v, 3, 0, 1, 0.3))
        real += list(bwd_op(dout, q, k, v, real[0], real[1], 3, 0, 1, 0.3, out_lo=real[2]))
        with FakeTensorMode() as mode:
            fq, fk, fv, fd = (mode.from_tensor(t) for t in (q, k, v, dout))
            fake = list(fwd_res_op(fq, fk, fv, 3, 0, 1, 0.3))
            fake += list(bwd_op(fd, fq, fk, fv, fake[0], fake[1], 3, 0, 1, 0.3, out_lo=fake[2]))
        for r, f in zip(real, fake):
            assert (r.shape, r.dtype, r.stride(), r.device) == (f.shape, f.dtype, f.stride(), f.device), dt


def local_block(x, Wqkv, H, Hkv, d):
    """An attention core of a GQA transformer layer: packed projection, sliding + block attention."""
    B, L, _ = x.shape
    heads = (x @ Wqkv).view(B, L, H + 2 * Hkv, d).transpose(1, 2)
    q, k, v = heads[:, :H], heads[:, H:H + Hkv], heads[:, H + Hkv:]
    a = sliding_window_attention(q, k, v, window=(8, 0))
    b = block_sliding_window_attention(q, k, v, 6, 2, scale=0.2)
    return (a + b).transpose(1, 2).reshape(B, L, H * d)


def _run(fn, x, W, *args):
    out = fn(x, W, *args)
    g = torch.randn(out.shape, generator=torch.Generator().manual_seed(0), dtype=torch.float32).to(out)
    return [out.detach(), *torch.autograd.grad(out, (x, W), g)]


@pytest.mark.parametrize("device", DEVICES)
def test_compile_fullgraph(device, _reset_dynamo):
    """fullgraph=True (no graph break), forward and backward equal to eager."""
    H, Hkv, d = 4, 2, 16
    gen = torch.Generator().manual_seed(11)
    x = torch.randn(2, 40, 32, generator=gen).to(device).requires_grad_(True)
    W = (0.2 * torch.randn(32, (H + 2 * Hkv) * d, generator=gen)).to(device).requires_grad_(True)
    eager = _run(local_block, x, W, H, Hkv, d)
    compiled = torch.compile(local_block, fullgraph=True)
    for a, b in zip(_run(compiled, x, W, H, Hkv, d), eager):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("device", DEVICES)
def test_compile_dynamic_no_recompile(device, _reset_dynamo):
    """dynamic=True: one graph serves other B and L (symbolic shapes through the fake kernels and
    the default scale)."""
    H, Hkv, d = 4, 2, 16
    compiled = torch.compile(local_block, fullgraph=True, dynamic=True, backend="aot_eager")
    for i, (B, L) in enumerate([(2, 40), (3, 57), (2, 100)]):  # B = 1 would specialise
        gen = torch.Generator().manual_seed(20 + i)
        x = torch.randn(B, L, 32, generator=gen).to(device).requires_grad_(True)
        W = (0.2 * torch.randn(32, (H + 2 * Hkv) * d, generator=gen)).to(device).requires_grad_(True)
        with torch._dynamo.config.patch(error_on_recompile=i > 0):
            got = _run(compiled, x, W, H, Hkv, d)
        for a, b in zip(got, _run(local_block, x, W, H, Hkv, d)):
            torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-5)


@pytest.mark.cuda
def test_compile_dynamic_out_lo_rule_cuda(_reset_dynamo):
    """dynamic=True at d = 64 in bf16, where the autograd forward's out_lo rule (local_out_lo_wanted:
    both warp-specialised backward sides on the grid) is evaluated on symbolic sizes: outputs and
    gradients equal to eager on grids on both sides of the rule (on an H100 / H200 the first and last
    below run the exact-D backward, the middle two the residual-D one), and no recompile once both
    outcomes have a graph (the guard is on the rule, not on L)."""
    H, Hkv, d, dt = 12, 12, 64, torch.bfloat16
    compiled = torch.compile(local_block, fullgraph=True, dynamic=True, backend="aot_eager")
    for i, (B, L) in enumerate([(2, 200), (2, 4096), (3, 3000), (2, 260)]):
        gen = torch.Generator().manual_seed(30 + i)
        x = torch.randn(B, L, 64, generator=gen).to("cuda", dt).requires_grad_(True)
        W = (0.1 * torch.randn(64, (H + 2 * Hkv) * d, generator=gen)).to("cuda", dt).requires_grad_(True)
        with torch._dynamo.config.patch(error_on_recompile=i > 1):
            got = _run(compiled, x, W, H, Hkv, d)
        for a, b in zip(got, _run(local_block, x, W, H, Hkv, d)):
            torch.testing.assert_close(a, b)


def test_autograd_node_is_cpp():
    """local_attention_fwd's autograd kernel is C++ (csrc/ops/local_attention_autograd.cpp; a Python
    register_autograd wrapper cost ~150 us of host time per forward + backward)."""
    gen = torch.Generator().manual_seed(13)
    q = torch.randn(1, 2, 9, 8, generator=gen, requires_grad=True)
    k = torch.randn(1, 1, 9, 8, generator=gen, requires_grad=True)
    v = torch.randn(1, 1, 9, 8, generator=gen, requires_grad=True)
    for out in (sliding_window_attention(q, k, v, window=(2, 1)), block_sliding_window_attention(q, k, v, 3, 2)):
        assert "LocalAttnFunction" in out.grad_fn.name(), out.grad_fn.name()


@pytest.mark.parametrize("device", DEVICES)
def test_inference_calls_skip_the_node(device):
    """With nothing to differentiate (no_grad, or no input requiring grad) the autograd kernel calls
    the op directly: the same output bits as a differentiable call, no grad_fn."""
    if device == "cuda" and not torch.cuda.is_available():
        pytest.skip("CUDA GPU not available")
    dtype = torch.float32 if device == "cpu" else torch.bfloat16
    gen = torch.Generator().manual_seed(14)
    q, k, v = (torch.randn(2, h, 70, 32, generator=gen).to(device=device, dtype=dtype) for h in (4, 2, 2))
    for fn in (lambda *t: sliding_window_attention(*t, window=(9, 3)),
               lambda *t: block_sliding_window_attention(*t, 16, 2)):
        with torch.no_grad():
            y0 = fn(q, k, v)
        y1 = fn(q, k, v)
        leaves = [t.detach().requires_grad_(True) for t in (q, k, v)]
        y2 = fn(*leaves)
        assert y0.grad_fn is None and y1.grad_fn is None and not y1.requires_grad
        assert "LocalAttnFunction" in y2.grad_fn.name()
        assert torch.equal(y0, y2) and torch.equal(y1, y2)


def test_gradcheck_float64():
    gen = torch.Generator().manual_seed(12)
    q = torch.randn(1, 2, 9, 8, generator=gen, dtype=torch.float64, requires_grad=True)
    k = torch.randn(1, 1, 9, 8, generator=gen, dtype=torch.float64, requires_grad=True)
    v = torch.randn(1, 1, 9, 8, generator=gen, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda q, k, v: sliding_window_attention(q, k, v, window=(2, 1)), (q, k, v))
    assert torch.autograd.gradcheck(lambda q, k, v: block_sliding_window_attention(q, k, v, 3, 2), (q, k, v))


# ------------------------------------------------------------------------------------------------
# Errors: every bad argument raises, naming it
# ------------------------------------------------------------------------------------------------


def _t(*shape, dtype=torch.float32, device="cpu"):
    return torch.randn(*shape, dtype=torch.float32, device=device).to(dtype)


Q, K, V = _t(1, 4, 10, 16), _t(1, 2, 10, 16), _t(1, 2, 10, 16)

BAD_PUBLIC = [
    # (id, callable, exception, fragments of the message)
    ("q_not_tensor", lambda: sliding_window_attention([1.0], K, V), TypeError, ["q must be a torch.Tensor", "list"]),
    ("k_not_tensor", lambda: block_sliding_window_attention(Q, None, V, 2, 2), TypeError, ["k must be", "NoneType"]),
    ("v_not_tensor", lambda: sliding_window_attention(Q, K, 3), TypeError, ["v must be", "int"]),
    ("window_int", lambda: sliding_window_attention(Q, K, V, window=5), TypeError, ["window must be a pair", "5"]),
    ("window_triple", lambda: sliding_window_attention(Q, K, V, window=(1, 2, 3)), TypeError, ["window must be a pair"]),
    ("window_str", lambda: sliding_window_attention(Q, K, V, window="ab"), TypeError, ["window must be a pair"]),
    ("window_float", lambda: sliding_window_attention(Q, K, V, window=(2.0, 0)), TypeError,
     ["window[0] (left) must be an int", "float"]),
    ("window_bool", lambda: sliding_window_attention(Q, K, V, window=(2, True)), TypeError,
     ["window[1] (right) must be an int", "bool"]),
    ("window_left_neg", lambda: sliding_window_attention(Q, K, V, window=(-2, 0)), ValueError,
     ["window[0] (left) must be >= 0, or -1", "-2"]),
    ("window_right_neg", lambda: sliding_window_attention(Q, K, V, window=(3, -5)), ValueError,
     ["window[1] (right)", "-5"]),
    ("causal_not_bool", lambda: sliding_window_attention(Q, K, V, causal=1), TypeError, ["causal must be a bool", "int"]),
    ("scale_str", lambda: sliding_window_attention(Q, K, V, scale="0.1"), TypeError, ["scale must be a real number", "str"]),
    ("scale_bool", lambda: block_sliding_window_attention(Q, K, V, 2, 2, scale=True), TypeError, ["scale must be a real"]),
    ("scale_inf", lambda: sliding_window_attention(Q, K, V, scale=math.inf), ValueError, ["scale must be a finite", "inf"]),
    ("scale_nan", lambda: sliding_window_attention(Q, K, V, scale=math.nan), ValueError, ["scale must be a finite", "nan"]),
    ("scale_huge_int", lambda: sliding_window_attention(Q, K, V, scale=10 ** 400), ValueError, ["scale must be a finite"]),
    ("block_size_zero", lambda: block_sliding_window_attention(Q, K, V, 0, 2), ValueError,
     ["block_size must be >= 1", "block_size = 0"]),
    ("block_size_float", lambda: block_sliding_window_attention(Q, K, V, 2.5, 2), TypeError,
     ["block_size must be an int", "float"]),
    ("window_blocks_zero", lambda: block_sliding_window_attention(Q, K, V, 4, 0), ValueError,
     ["window_blocks must be >= 1", "window_blocks = 0"]),
    ("window_blocks_neg", lambda: block_sliding_window_attention(Q, K, V, 4, -1), ValueError, ["window_blocks must be >= 1"]),
    ("window_blocks_none", lambda: block_sliding_window_attention(Q, K, V, 4, None), TypeError, ["window_blocks must be an int"]),
]


@pytest.mark.parametrize("name,fn,exc,frags", BAD_PUBLIC, ids=[b[0] for b in BAD_PUBLIC])
def test_bad_public_arguments(name, fn, exc, frags):
    with pytest.raises(exc) as info:
        fn()
    for f in frags:
        assert f in str(info.value), (f, str(info.value))


def _fwd(q=None, k=None, v=None, left=2, right=0, block=1, scale=0.25):
    return fwd_op(Q if q is None else q, K if k is None else k, V if v is None else v, left, right, block, scale)


BAD_OP = [
    ("q_rank", lambda: _fwd(q=_t(4, 10, 16)), ValueError, ["q must be a 4-D tensor", "(B, H, L, d)", "3-D"]),
    ("k_rank", lambda: _fwd(k=_t(2, 10, 16)), ValueError, ["k must be a 4-D tensor", "(B, Hkv, L, d)"]),
    ("v_rank", lambda: _fwd(v=_t(1, 1, 2, 10, 16)), ValueError, ["v must be a 4-D tensor", "5-D"]),
    ("q_int_dtype", lambda: _fwd(q=torch.ones(1, 4, 10, 16, dtype=torch.int32)), TypeError,
     ["q must have dtype float16, bfloat16 or float32", "Int"]),
    ("q_complex", lambda: _fwd(q=torch.ones(1, 4, 10, 16, dtype=torch.complex64)), TypeError, ["q must have dtype"]),
    ("k_dtype", lambda: _fwd(k=_t(1, 2, 10, 16, dtype=torch.float64)), TypeError, ["k has dtype Double but q has dtype Float"]),
    ("v_dtype", lambda: _fwd(v=_t(1, 2, 10, 16, dtype=torch.bfloat16)), TypeError, ["v has dtype BFloat16"]),
    ("k_batch", lambda: _fwd(k=_t(2, 2, 10, 16)), ValueError, ["k must have shape (B, Hkv, L, d)", "[2, 2, 10, 16]"]),
    ("k_len", lambda: _fwd(k=_t(1, 2, 9, 16)), ValueError, ["k must have shape", "(1, Hkv, 10, 16)", "[1, 2, 9, 16]"]),
    ("v_headdim", lambda: _fwd(v=_t(1, 2, 10, 24)), ValueError, ["v must have shape", "[1, 2, 10, 24]"]),
    ("v_heads", lambda: _fwd(v=_t(1, 4, 10, 16)), ValueError, ["v must have k's number of heads Hkv = 2", "[1, 4, 10, 16]"]),
    ("gqa_ratio", lambda: _fwd(k=_t(1, 3, 10, 16), v=_t(1, 3, 10, 16)), ValueError,
     ["H = q.size(1) = 4 must be a multiple of", "Hkv = k.size(1) = 3"]),
    ("hkv_zero", lambda: _fwd(q=_t(1, 0, 10, 16), k=_t(1, 0, 10, 16), v=_t(1, 0, 10, 16)), ValueError,
     ["at least one head", "Hkv = 0"]),
    ("d_not_mult8", lambda: _fwd(q=_t(1, 4, 10, 12), k=_t(1, 2, 10, 12), v=_t(1, 2, 10, 12)), ValueError,
     ["head dim d = q.size(3) must be a multiple of 8 in [8, 256]", "d = 12"]),
    ("d_too_big", lambda: _fwd(q=_t(1, 1, 2, 264), k=_t(1, 1, 2, 264), v=_t(1, 1, 2, 264)), ValueError,
     ["[8, 256]", "d = 264"]),
    ("d_zero", lambda: _fwd(q=_t(1, 1, 2, 0), k=_t(1, 1, 2, 0), v=_t(1, 1, 2, 0)), ValueError, ["d = 0"]),
    ("q_stride", lambda: _fwd(q=_t(1, 4, 16, 10).transpose(2, 3)), ValueError,
     ["q must have a unit stride in its last dimension", "stride(-1) = 10"]),
    ("k_stride", lambda: _fwd(k=_t(1, 2, 10, 32)[..., ::2]), ValueError, ["k must have a unit stride", "stride(-1) = 2"]),
    ("v_stride", lambda: _fwd(v=_t(1, 2, 16, 10).transpose(2, 3)), ValueError, ["v must have a unit stride"]),
    ("left", lambda: _fwd(left=-2), ValueError, ["left must be >= -1", "left = -2"]),
    ("right", lambda: _fwd(right=-3), ValueError, ["right must be >= -1", "right = -3"]),
    ("block", lambda: _fwd(block=0), ValueError, ["block must be >= 1", "block = 0"]),
    ("scale_nan", lambda: _fwd(scale=math.nan), ValueError, ["scale must be a finite number"]),
]


@pytest.mark.parametrize("name,fn,exc,frags", BAD_OP, ids=[b[0] for b in BAD_OP])
def test_bad_op_arguments(name, fn, exc, frags):
    with pytest.raises(exc) as info:
        fn()
    for f in frags:
        assert f in str(info.value), (f, str(info.value))


def test_bad_arguments_reach_the_op_through_the_public_functions():
    with pytest.raises(ValueError, match="must be a multiple of the number of key/value heads"):
        sliding_window_attention(Q, _t(1, 3, 10, 16), _t(1, 3, 10, 16))
    with pytest.raises(TypeError, match="k has dtype"):
        block_sliding_window_attention(Q, K.double(), V, 2, 2)
    with pytest.raises(ValueError, match="q must be a 4-D tensor"):
        sliding_window_attention(_t(10, 16), K, V)


def _bwd_args(**over):
    out, lse = fwd_op(Q, K, V, 2, 0, 1, 0.25)
    args = dict(dout=torch.randn_like(out), q=Q, k=K, v=V, out=out, lse=lse)
    args.update(over)
    return (args["dout"], args["q"], args["k"], args["v"], args["out"], args["lse"], 2, 0, 1, 0.25)


BAD_BWD = [
    ("dout_shape", dict(dout=_t(1, 4, 10, 8)), ValueError, ["dout must have q's shape", "[1, 4, 10, 8]"]),
    ("dout_rank", dict(dout=_t(4, 10, 16)), ValueError, ["dout must be a 4-D tensor"]),
    ("dout_dtype", dict(dout=_t(1, 4, 10, 16, dtype=torch.float16)), TypeError, ["dout has dtype Half"]),
    ("dout_stride", dict(dout=_t(1, 4, 16, 10).transpose(2, 3)), ValueError, ["dout must have a unit stride"]),
    ("out_shape", dict(out=_t(1, 4, 11, 16)), ValueError, ["out must have q's shape", "[1, 4, 11, 16]"]),
    ("out_dtype", dict(out=_t(1, 4, 10, 16, dtype=torch.float64)), TypeError, ["out must have q's dtype", "Double"]),
    ("lse_shape", dict(lse=torch.zeros(1, 4, 9)), ValueError, ["lse must have shape (B, H, L) = (1, 4, 10)", "[1, 4, 9]"]),
    ("lse_dtype", dict(lse=torch.zeros(1, 4, 10, dtype=torch.float64)), TypeError, ["lse must have dtype float32", "Double"]),
]


@pytest.mark.parametrize("name,over,exc,frags", BAD_BWD, ids=[b[0] for b in BAD_BWD])
def test_bad_bwd_arguments(name, over, exc, frags):
    with pytest.raises(exc) as info:
        bwd_op(*_bwd_args(**over))
    for f in frags:
        assert f in str(info.value), (f, str(info.value))


BAD_OUT_LO = [
    ("shape", _t(1, 4, 9, 16, dtype=torch.bfloat16), ValueError, ["out_lo must be None, empty, or have q's shape",
                                                                   "[1, 4, 9, 16]"]),
    ("dtype", _t(1, 4, 10, 16), TypeError, ["out_lo must have dtype bfloat16", "Float"]),
    ("strides", _t(1, 4, 16, 10, dtype=torch.bfloat16).transpose(2, 3), ValueError, ["out_lo must be contiguous"]),
]


@pytest.mark.parametrize("name,out_lo,exc,frags", BAD_OUT_LO, ids=[b[0] for b in BAD_OUT_LO])
def test_bad_bwd_out_lo(name, out_lo, exc, frags):
    """The backward's optional out_lo: None or an empty tensor mean none; anything else must be what
    local_attention_fwd_res returns (q's shape, bfloat16, contiguous), on every device."""
    with pytest.raises(exc) as info:
        bwd_op(*_bwd_args(), out_lo=out_lo)
    for f in frags:
        assert f in str(info.value), (f, str(info.value))
    args = _bwd_args()
    ref = bwd_op(*args)
    for none in (None, torch.empty(0, dtype=torch.bfloat16)):
        for a, b in zip(bwd_op(*args, out_lo=none), ref):
            assert torch.equal(a, b)


@pytest.mark.cuda
def test_bad_devices():
    qc = Q.cuda()
    with pytest.raises(ValueError, match="k is on device cpu but q is on device cuda"):
        fwd_op(qc, K, V.cuda(), 2, 0, 1, 0.25)
    with pytest.raises(TypeError, match="float64 inputs are supported on CPU only"):
        fwd_op(qc.double(), K.cuda().double(), V.cuda().double(), 2, 0, 1, 0.25)
    out, lse = fwd_op(qc, K.cuda(), V.cuda(), 2, 0, 1, 0.25)
    with pytest.raises(ValueError, match="lse is on device cpu"):
        bwd_op(torch.randn_like(out), qc, K.cuda(), V.cuda(), out, lse.cpu(), 2, 0, 1, 0.25)
    with pytest.raises(ValueError, match="dout is on device cpu"):
        bwd_op(torch.randn_like(out).cpu(), qc, K.cuda(), V.cuda(), out, lse, 2, 0, 1, 0.25)


# ------------------------------------------------------------------------------------------------
# The forward that autograd records (local_attention_fwd_res) and the residual-D backward
# ------------------------------------------------------------------------------------------------

# (B, H, Hkv, L, d, kind, kwargs, band): on an H100 / H200 the first two run the warp-specialised
# forward and both warp-specialised backward kernels (their grids fill the GPU), so the residual-D
# backward; the others the one-warpgroup wgmma forward (d = 64) and the mma.sync one (d = 32).
_RES_CASES = [
    (1, 12, 12, 4096, 64, "block", dict(block_size=256, window_blocks=16), (15, 0, 256)),
    (1, 8, 4, 8192, 128, "sliding", dict(window=(1024, 0)), (1024, 0, 1)),
    (2, 4, 2, 300, 64, "sliding", dict(window=(50, 20)), (50, 20, 1)),
    (1, 4, 4, 200, 32, "block", dict(block_size=30, window_blocks=2), (1, 0, 30)),
]


class _LocalOpLog(torch.utils._python_dispatch.TorchDispatchMode):
    """The flash_window_attn ops called below autograd (their names without the namespace)."""

    def __init__(self):
        super().__init__()
        self.names = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        name = func._schema.name
        if name.startswith("flash_window_attn::"):
            self.names.append(name.split("::")[1])
        return func(*args, **(kwargs or {}))


def _autograd_forward_ops(kind, q, k, v, kwargs):
    with _LocalOpLog() as log:
        call_public(kind, q, k, v, kwargs)
    return log.names


@pytest.mark.parametrize("device", DEVICES)
def test_autograd_forward_computes_out_lo_where_the_backward_reads_it(device):
    """The autograd forward calls local_attention_fwd_res (out_lo) only where its backward can run
    the residual-D form: fp16 / bf16 on CUDA where both warp-specialised backward sides run (on a
    compute capability 9.0 GPU the first two _RES_CASES, whose grids fill it); elsewhere the plain
    forward (no out_lo written or saved), as without grad."""
    if device == "cuda" and not torch.cuda.is_available():
        pytest.skip("CUDA GPU not available")
    sm90 = device == "cuda" and torch.cuda.get_device_capability() == (9, 0)
    dts = [torch.float16, torch.bfloat16] + ([torch.float32] if device == "cuda" else [torch.float64])
    for dt in dts:
        for i, (B, H, Hkv, L, d, kind, kwargs, band) in enumerate(_RES_CASES):
            if device == "cpu" and L > 300:
                continue
            q, k, v, _ = make_qkv(B, H, Hkv, L, d, dtype=dt, device=device, seed=40 + i)
            want = sm90 and i < 2 and dt in (torch.float16, torch.bfloat16)
            expected = ["local_attention_fwd_res" if want else "local_attention_fwd"]
            assert _autograd_forward_ops(kind, q, k, v, kwargs) == expected, (dt, kind, kwargs)
            with torch.no_grad():
                assert _autograd_forward_ops(kind, q, k, v, kwargs) == ["local_attention_fwd"]


@pytest.mark.cuda
def test_out_lo_rule_follows_the_ws_switches_in_subprocess():
    """FWA_LOCAL_BWD_Q_WS / FWA_LOCAL_BWD_KV_WS (read once per process) move the rule with the
    backward: with both = 1 every 16-bit grid's autograd forward writes out_lo (on a compute
    capability 9.0 GPU, where the wgmma backward runs), with either = 0 none does."""
    code = (
        "import torch, flash_window_attn as t\n"
        "from torch.utils._python_dispatch import TorchDispatchMode\n"
        "class Log(TorchDispatchMode):\n"
        "    def __init__(self):\n"
        "        super().__init__(); self.names = []\n"
        "    def __torch_dispatch__(self, func, types, args=(), kwargs=None):\n"
        "        self.names.append(func._schema.name); return func(*args, **(kwargs or {}))\n"
        "import os\n"
        "sm90 = torch.cuda.get_device_capability() == (9, 0)\n"
        "want = sm90 and os.environ['FWA_LOCAL_BWD_Q_WS'] == '1' and os.environ['FWA_LOCAL_BWD_KV_WS'] == '1'\n"
        "for L, d in ((100, 64), (1000, 128), (8192, 64)):\n"
        "    g = torch.Generator(device='cuda').manual_seed(L)\n"
        "    q, k, v = (torch.randn(1, 8, L, d, device='cuda', generator=g, dtype=torch.bfloat16).requires_grad_()\n"
        "               for _ in range(3))\n"
        "    with Log() as log:\n"
        "        t.sliding_window_attention(q, k, v, window=(64, 0))\n"
        "    res = 'flash_window_attn::local_attention_fwd_res' in log.names\n"
        "    assert res == want, (L, d, log.names)\n"
        "print('ok')\n")
    for env in ({"FWA_LOCAL_BWD_Q_WS": "1", "FWA_LOCAL_BWD_KV_WS": "1"},
                {"FWA_LOCAL_BWD_Q_WS": "1", "FWA_LOCAL_BWD_KV_WS": "0"},
                {"FWA_LOCAL_BWD_Q_WS": "0", "FWA_LOCAL_BWD_KV_WS": "1"}):
        run_in_child(code, env, f"out_lo rule with {env}", 120)


# (B, H, L, d, window): d = 128 grids on which the forward runs its one-warpgroup 64-key-step wgmma
# kernel (the first is the benchmark's win(256, 256)), too small for the warp-specialised backward
# sides by default.
_NORM16_CASES = [(1, 4, 4096, 128, (256, 256)), (1, 8, 1000, 128, (64, 0))]


@pytest.mark.cuda
def test_fwd_norm16_follows_the_residual_rule_in_subprocess(tmp_path):
    """The 64-key-step wgmma forward normalises out by the row sums of the 16-bit P (what the
    residual-D backward's D needs) only where both warp-specialised backward sides run
    (LocalFwdParams::norm16), by the fp32 sums elsewhere. With FWA_LOCAL_BWD_Q_WS and _KV_WS = 1 (read
    once per process) every grid takes the 16-bit sums; with either = 0 none does: those two give
    the same bits, and on a compute capability 9.0 GPU differ from the first. Every form is right
    against float64, and fwd_res's out is the plain forward's in each."""
    import os

    forms = {"both": {"FWA_LOCAL_BWD_Q_WS": "1", "FWA_LOCAL_BWD_KV_WS": "1"},
             "none": {"FWA_LOCAL_BWD_Q_WS": "0", "FWA_LOCAL_BWD_KV_WS": "0"},
             "q_only": {"FWA_LOCAL_BWD_Q_WS": "1", "FWA_LOCAL_BWD_KV_WS": "0"}}
    results = {}
    for form, env in forms.items():
        path = str(tmp_path / f"norm16-{form}.pt")
        code = (
            "import sys, torch\n"
            f"sys.path.insert(0, {os.path.dirname(os.path.abspath(__file__))!r})\n"
            "import test_local_attention as t\n"
            "res = []\n"
            "for i, (B, H, L, d, w) in enumerate(t._NORM16_CASES):\n"
            "    for dt in (torch.float16, torch.bfloat16):\n"
            "        q, k, v, _ = t.make_qkv(B, H, H, L, d, dtype=dt, device='cuda', seed=3300 + i,\n"
            "                                requires_grad=False)\n"
            "        out, lse = t.fwd_op(q, k, v, w[0], w[1], 1, d ** -0.5)\n"
            "        out2, lse2, _ = t.fwd_res_op(q, k, v, w[0], w[1], 1, d ** -0.5)\n"
            "        assert torch.equal(out, out2) and torch.equal(lse, lse2), (i, dt)\n"
            "        res.append(out.cpu())\n"
            f"torch.save(res, {path!r})\n"
            "print('ok', len(res))\n"
        )
        run_in_child(code, env, f"forward normalisation with {env}", timeout=300)
        results[form] = torch.load(path)
    sm90 = torch.cuda.get_device_capability() == (9, 0)
    n = 0
    for i, (B, H, L, d, w) in enumerate(_NORM16_CASES):
        for dt in (torch.float16, torch.bfloat16):
            q, k, v, _ = make_qkv(B, H, H, L, d, dtype=dt, device="cuda", seed=3300 + i, requires_grad=False)
            band = (w[0], w[1], 1)
            ref64 = {"out": local_attention_reference(q.double(), k.double(), v.double(), *band, d ** -0.5).cpu()}
            reflp = {"out": local_attention_reference(q, k, v, *band, d ** -0.5).cpu()}
            outs = {form: results[form][n] for form in forms}
            n += 1
            for form, out in outs.items():
                ok, lines = compare_to_reference({"out": out}, ref64, reflp, dt)
                assert ok, f"{form} {(B, H, L, d, w)} {dt}\n" + "\n".join(lines)
            assert torch.equal(outs["none"], outs["q_only"]), ((B, H, L, d, w), dt)
            if sm90:
                assert not torch.equal(outs["both"], outs["none"]), ((B, H, L, d, w), dt)


@pytest.mark.parametrize("device", DEVICES)
def test_fwd_res_cpu_and_fp32(device):
    """out and lse of local_attention_fwd_res are bitwise the plain forward's; out_lo is an empty
    (0,) bfloat16 tensor where it does not apply (CPU, float32)."""
    if device == "cuda" and not torch.cuda.is_available():
        pytest.skip("CUDA GPU not available")
    dts = [torch.float32] if device == "cuda" else [torch.float32, torch.float16, torch.bfloat16, torch.float64]
    for dt in dts:
        q, k, v, _ = make_qkv(1, 4, 2, 70, 32, dtype=dt, device=device, seed=61, requires_grad=False)
        out, lse, out_lo = fwd_res_op(q, k, v, 5, 2, 1, 0.3)
        out0, lse0 = fwd_op(q, k, v, 5, 2, 1, 0.3)
        assert torch.equal(out, out0) and torch.equal(lse, lse0)
        assert out_lo.shape == (0,) and out_lo.dtype == torch.bfloat16 and out_lo.device == q.device


@pytest.mark.cuda
@pytest.mark.parametrize("dt", ["fp16", "bf16"])
def test_fwd_res_residual_cuda(dt):
    """On CUDA in 16 bits out_lo is the residual of out's rounding: out and lse bitwise the plain
    forward's, |out_lo| at most half a unit in out's last place, not all zero, and out + out_lo
    nearer the float64 result than out on average."""
    dtype = DTYPES[dt]
    mant = 8 if dtype == torch.bfloat16 else 11   # out's significand bits
    for i, (B, H, Hkv, L, d, kind, kwargs, band) in enumerate(_RES_CASES):
        q, k, v, _ = make_qkv(B, H, Hkv, L, d, dtype=dtype, device="cuda", seed=70 + i, requires_grad=False)
        out, lse, out_lo = fwd_res_op(q, k, v, *band, d ** -0.5)
        out0, lse0 = fwd_op(q, k, v, *band, d ** -0.5)
        assert torch.equal(out, out0) and torch.equal(lse, lse0), (kind, kwargs)
        assert out_lo.shape == out.shape and out_lo.dtype == torch.bfloat16 and out_lo.is_contiguous()
        o, lo = out.double(), out_lo.double()
        half_ulp = torch.exp2(torch.floor(torch.log2(o.abs().clamp_min(2.0 ** -14))) - mant)
        assert (lo.abs() <= half_ulp * (1 + 2 ** -7)).all(), (kind, kwargs, (lo.abs() / half_ulp).max().item())
        assert (lo != 0).double().mean().item() > 0.5, (kind, kwargs)
        ref = local_attention_reference(q.double(), k.double(), v.double(), *band, d ** -0.5)
        err_out = (o - ref).abs().mean().item()   # (mean: the rounding adds to every element)
        err_res = (o + lo - ref).abs().mean().item()
        assert err_res < err_out, (kind, kwargs, err_res, err_out)


@pytest.mark.cuda
@pytest.mark.parametrize("dt", ["fp16", "bf16"])
def test_residual_d_backward_cuda(dt):
    """The backward through autograd (which gives it the forward's out_lo) and with
    FWA_LOCAL_BWD_RESIDUAL=0 (the exact-D sums; read per call): both right against float64 and
    deterministic. Where the residual-D form runs (a compute capability 9.0 GPU, the first two cases)
    dq differs from the exact-D form's; the op called without out_lo gives the exact-D form's bits."""
    import os

    dtype = DTYPES[dt]
    sm90 = torch.cuda.get_device_capability() == (9, 0)
    for i, (B, H, Hkv, L, d, kind, kwargs, band) in enumerate(_RES_CASES):
        q, k, v, dout = make_qkv(B, H, Hkv, L, d, dtype=dtype, device="cuda", seed=90 + i)
        res = check_case(kind, kwargs, band, q, k, v, dout, dtype, desc=f"residual D {kind} {kwargs} {dt}")
        again = _grads(call_public(kind, q, k, v, kwargs), (q, k, v), dout)
        os.environ["FWA_LOCAL_BWD_RESIDUAL"] = "0"
        try:
            exact = check_case(kind, kwargs, band, q, k, v, dout, dtype, desc=f"exact D {kind} {kwargs} {dt}")
        finally:
            os.environ.pop("FWA_LOCAL_BWD_RESIDUAL")
        for name in ("dq", "dk", "dv"):
            assert torch.equal(res[name], again[name]), (kind, name)
        assert torch.equal(res["out"], exact["out"]) and torch.equal(res["dv"], exact["dv"])
        if sm90 and i < 2:
            assert not torch.equal(res["dq"], exact["dq"]), "the residual-D backward did not run"
        qd, kd, vd = (t.detach() for t in (q, k, v))
        out, lse = fwd_op(qd, kd, vd, *band, d ** -0.5)
        direct = bwd_op(dout, qd, kd, vd, out, lse, *band, d ** -0.5)
        for name, x in zip(("dq", "dk", "dv"), direct):
            assert torch.equal(x, exact[name]), (kind, name)
        # out_lo given to the op directly: the autograd path's bits, also from a contiguous view
        # whose data pointer is 2 bytes off 16-byte alignment (copied by the op)
        out2, lse2, out_lo = fwd_res_op(qd, kd, vd, *band, d ** -0.5)
        shifted = torch.empty(out_lo.numel() + 1, dtype=out_lo.dtype, device="cuda")[1:].view(out_lo.shape)
        shifted.copy_(out_lo)
        for lo in (out_lo, shifted):
            given = bwd_op(dout, qd, kd, vd, out2, lse2, *band, d ** -0.5, out_lo=lo)
            for name, x in zip(("dq", "dk", "dv"), given):
                assert torch.equal(x, res[name]), (kind, name)
