"""Concurrency and lifecycle on CUDA of the sliding-window ops (all marked ``cuda``): the counterpart
of tests/test_lifecycle.py for ``sliding_window_attention`` and ``block_sliding_window_attention``.

- several CUDA streams (and several host threads) running the ops forward and backward at the
  same time give bitwise the results of serial runs;
- CUDA graph capture of forward + backward, replayed with new data copied into the static inputs,
  gives bitwise the eager results (and correct ones: checked against the float64 reference);
- 10**4 repeated calls: no growth of allocated memory, a stable peak, no host memory growth;
- tensors on cuda:1 run on cuda:1 while the current device is cuda:0 (and the reverse), with the
  results of a run with that device current (bitwise those of cuda:0 on the same GPU model), also
  on a side stream of cuda:1; the same for the packed window op ``window_attention_qkvpacked`` and
  the CPB op ``swin_cpb_bias`` (skipped with fewer than 2 GPUs);
- determinism: two forward + backward runs (the allocator poisoned with NaN in between) are bitwise
  equal (out, dq, dk, dv; lse where the op is called directly) over fp16 / bf16 / fp32, GQA ratios
  1, 2 and 8, and causal, local (sliding) and block-sliding windows.
"""

from __future__ import annotations

import dataclasses

import pytest
import torch

from flash_window_attn import window_attention, window_attention_qkvpacked
from flash_window_attn.testing import poison_cuda_allocator
from flash_window_attn.testing_local import check_local_problem, make_local_problem, run_local

from _lifecycle_helpers import (
    assert_no_inference_memory_growth,
    assert_no_memory_growth,
    assert_same as _assert_same,
    assert_streams_equal_serial,
    assert_streams_same_inputs,
    assert_threads_equal_serial,
)

pytestmark = pytest.mark.cuda

FP = {"fp16": torch.float16, "bf16": torch.bfloat16, "fp32": torch.float32}

# (id, B, H, Hkv, L, d, dtype, call, call kwargs, layout). call: "sliding" (sliding_window_attention
# with the kwargs window / causal), "block" (block_sliding_window_attention with block_size /
# window_blocks) or "op" (local_attention_fwd with kwargs band = (left, right, block); returns lse).
CASES = [
    ("causal-fp16-gqa2-L1000", 2, 8, 4, 1000, 64, "fp16", "sliding", dict(causal=True), "packed"),
    ("sym128-bf16-L777", 1, 4, 4, 777, 128, "bf16", "sliding", dict(window=(128, 128)), "blhd"),
    ("block100x3-fp16-gqa4-L1500", 1, 8, 2, 1500, 64, "fp16", "block", dict(block_size=100, window_blocks=3),
     "contiguous"),
    ("local200-fp32-gqa2-L513", 2, 4, 2, 513, 96, "fp32", "sliding", dict(window=(200, 0)), "sliced"),
    ("block64x4-fp32-gqa2-L2000", 1, 2, 1, 2000, 32, "fp32", "block", dict(block_size=64, window_blocks=4),
     "misaligned"),
    ("asym-bf16-gqa8-L300", 2, 16, 2, 300, 32, "bf16", "sliding", dict(window=(31, 17)), "contiguous"),
]
CASE_IDS = [c[0] for c in CASES]


def _band(call, kw):
    """(left, right, block) selected by a call with these kwargs (the reference's band)."""
    if call == "sliding":
        left, right = kw.get("window", (-1, -1))
        return (left, 0 if kw.get("causal") else right, 1)
    if call == "block":
        return (kw["window_blocks"] - 1, 0, kw["block_size"])
    return tuple(kw["band"])


def _problem(case, seed, device="cuda"):
    _, B, H, Hkv, L, d, dt, call, kw, layout = case
    call_kwargs = {} if call == "op" else dict(kw)
    return make_local_problem(B, H, Hkv, L, d, dtype=FP[dt], device=device, band=_band(call, kw), layout=layout,
                              seed=seed, call=call, call_kwargs=call_kwargs)


def _run(problem):
    """out (and lse for op calls), dq, dk, dv of one forward + backward."""
    ours, _ = run_local(problem, repeat_backward=False)
    return ours


def _check(problem):
    ok, lines = check_local_problem(problem)
    assert ok, f"{problem.desc}\n" + "\n".join(lines)


# ------------------------------------------------------------------------------------------------
# Streams and threads
# ------------------------------------------------------------------------------------------------


def test_streams_concurrent_equal_serial():
    """One stream per problem (six different problems at once, forward and backward), three rounds:
    every result is bitwise the serial one."""
    assert_streams_equal_serial(_run, [_problem(c, seed=10 + i) for i, c in enumerate(CASES)], CASE_IDS)


def test_streams_same_inputs_concurrent():
    """Four streams reading the same inputs at once (the kernels only read q, k, v, out, dout)."""
    assert_streams_same_inputs(_run, _problem(CASES[0], seed=20))


def test_threads_with_own_streams():
    """Four host threads, each with its own stream and problem, 10 forward + backward each: the ops'
    host side (cached kernel attributes, occupancy) is thread safe and the results are the serial
    ones."""
    assert_threads_equal_serial(_run, [_problem(c, seed=30 + i) for i, c in enumerate(CASES[:4])])


# ------------------------------------------------------------------------------------------------
# CUDA graphs
# ------------------------------------------------------------------------------------------------


def _root(t: torch.Tensor) -> torch.Tensor:
    """The leaf a q / k / v view was taken from (the tensor itself for a leaf)."""
    return t if t._base is None else t._base


def _views_taken_in_capture(problem):
    """The problem with q, k, v re-taken from their leaves (to be called inside the capture).

    Views make_local_problem took outside the capture belong to autograd nodes recorded on the
    legacy default stream, and the backward engine would make that stream wait on the capturing
    one (cudaErrorStreamCaptureImplicit) -- a property of capture (the whole forward must run in
    it), not of the op; so, as a model's forward does, the views are taken inside it: the packed
    q, k, v as make_local_problem takes them, other views as the same strided view of their leaf.
    Leaves (contiguous layout) are used as they are."""
    q, k, v = problem.q, problem.k, problem.v
    if problem.qkv is not None:
        B, H, L, d = q.shape
        Hkv = k.shape[1]
        heads = problem.qkv.view(B, L, H + 2 * Hkv, d).transpose(1, 2)
        q, k, v = heads[:, :H], heads[:, H:H + Hkv], heads[:, H + Hkv:]
    else:
        q, k, v = (t if t._base is None else t._base.as_strided(t.size(), t.stride(), t.storage_offset())
                   for t in (q, k, v))
    for new, old in zip((q, k, v), (problem.q, problem.k, problem.v)):
        assert new.shape == old.shape and new.stride() == old.stride() and new.data_ptr() == old.data_ptr()
    return dataclasses.replace(problem, q=q, k=k, v=v)


@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_cuda_graph_capture_and_replay(case):
    """Capture forward + backward in a CUDA graph, then for three new problems copy their data into
    the static inputs and replay: the static outputs equal eager runs on the new data bitwise."""
    static = _problem(case, seed=40)
    # warm up on a side stream (kernel attributes, occupancy caches, autograd state) before capture
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            _run(static)
    torch.cuda.current_stream().wait_stream(s)
    torch.cuda.synchronize()

    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        static_result = _run(_views_taken_in_capture(static))
    assert {"out", "dq", "dk", "dv"} <= set(static_result)

    def copy_into_static(src):
        with torch.no_grad():
            done = set()
            for name in ("q", "k", "v"):
                dst = _root(getattr(static, name))
                if id(dst) not in done:
                    dst.copy_(_root(getattr(src, name)))
                    done.add(id(dst))
            static.dout.copy_(src.dout)

    for trial in range(3):
        fresh = _problem(case, seed=41 + trial)
        copy_into_static(fresh)
        graph.replay()
        torch.cuda.synchronize()
        eager = _run(fresh)
        torch.cuda.synchronize()
        _assert_same(eager, {k: v.clone() for k, v in static_result.items()}, f"replay {trial}")
    # and the replayed results are right, not only consistent
    _check(fresh)
    del graph


# ------------------------------------------------------------------------------------------------
# Repeated calls: no memory growth
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("case", [CASES[0], CASES[2], CASES[3]], ids=[CASE_IDS[0], CASE_IDS[2], CASE_IDS[3]])
def test_repeated_calls_no_memory_growth(case):
    """10**4 forward + backward calls: memory_allocated returns to its starting value, the peak after
    10**4 calls equals the peak after the first 100, the reserved pool does not grow, and the host
    resident set grows by less than 64 MiB (a per-call host leak of ~6 KiB would exceed it)."""
    problem = _problem(case, seed=50)
    inputs = list(problem.grad_inputs().values())
    assert inputs

    def step():
        out, _ = problem.forward()
        grads = torch.autograd.grad(out, inputs, problem.dout)
        del out, grads

    assert_no_memory_growth(step)


@pytest.mark.parametrize("case", [CASES[1], CASES[4]], ids=[CASE_IDS[1], CASE_IDS[4]])
def test_repeated_inference_calls_no_memory_growth(case):
    problem = _problem(case, seed=51)
    assert_no_inference_memory_growth(problem.forward)


# ------------------------------------------------------------------------------------------------
# A second device
# ------------------------------------------------------------------------------------------------

two_gpus = pytest.mark.skipif(not torch.cuda.is_available() or torch.cuda.device_count() < 2,
                              reason="needs 2 CUDA devices")
DIRECTIONS = pytest.mark.parametrize("current,target", [(0, 1), (1, 0)])


def _same_model(a: int, b: int) -> bool:
    return torch.cuda.get_device_name(a) == torch.cuda.get_device_name(b)


def _assert_on(result, target, current):
    torch.cuda.synchronize(target)
    assert torch.cuda.current_device() == current
    for name, t in result.items():
        assert t.device == torch.device(f"cuda:{target}"), (name, t.device)


@two_gpus
@pytest.mark.parametrize("case", [CASES[0], CASES[2], CASES[3]], ids=[CASE_IDS[0], CASE_IDS[2], CASE_IDS[3]])
@DIRECTIONS
def test_other_device_than_current(case, current, target):
    """Tensors on cuda:<target> while the current device is cuda:<current>: the op runs on the
    tensors' device (results there, correct, and equal to a run with that device current), and the
    current device is left unchanged. Run on the other device first so that per-device kernel
    set-up (shared-memory attributes, occupancy caches) is exercised in both orders."""
    with torch.cuda.device(current):
        on_current = _run(_problem(case, seed=60, device=f"cuda:{current}"))
        problem = _problem(case, seed=60, device=f"cuda:{target}")
        got = _run(problem)
        _assert_on(got, target, current)
        _check(problem)
        assert torch.cuda.current_device() == current
    with torch.cuda.device(target):
        native = _run(_problem(case, seed=60, device=f"cuda:{target}"))
        torch.cuda.synchronize(target)
    _assert_same(native, got, f"cuda:{target} with cuda:{current} current vs cuda:{target} current")
    if _same_model(current, target):
        # same GPU model: same kernels and launch configurations, so bitwise the other device's results
        _assert_same({k: v.to(f"cuda:{target}") for k, v in on_current.items()}, got,
                     f"cuda:{target} vs cuda:{current}")


@two_gpus
@pytest.mark.parametrize("case", [CASES[0], CASES[4]], ids=[CASE_IDS[0], CASE_IDS[4]])
def test_other_device_side_stream(case):
    """A non-default current stream on the tensors' device is the one the op runs on."""
    problem = _problem(case, seed=61, device="cuda:1")
    expected = _run(problem)
    torch.cuda.synchronize(1)
    with torch.cuda.device(0):
        s = torch.cuda.Stream(device=1)
        s.wait_stream(torch.cuda.current_stream(1))
        with torch.cuda.stream(s):  # also makes cuda:1 current inside the block
            got = _run(problem)
        torch.cuda.current_stream(1).wait_stream(s)
        torch.cuda.synchronize(1)
    _assert_same(expected, got, "side stream on cuda:1")


def _packed_inputs(device, dtype, seed=80):
    """qkv (B_, N, 3 H d), bias (H, N, N), a shift-like mask (nW, N, N), logit_scale (H, 1, 1) and
    dout, drawn on the CPU (the same values on every device), as tests/test_qkvpacked.py makes them."""
    B_, H, N, d, nW = 8, 3, 49, 32, 4
    g = torch.Generator().manual_seed(seed)
    qkv = torch.randn(B_, N, 3 * H * d, generator=g).to(device=device, dtype=dtype).requires_grad_(True)
    bias = torch.randn(H, N, N, generator=g).to(device).requires_grad_(True)
    mask = torch.where(torch.rand(nW, N, N, generator=g) < 0.3, -100.0, 0.0).to(device)
    logit_scale = (torch.rand(H, 1, 1, generator=g) + 1.5).to(device).requires_grad_(True)
    dout = torch.randn(B_, H, N, d, generator=g).to(device=device, dtype=dtype)
    return qkv, H, bias, mask, logit_scale, dout


def _run_packed(device, dtype):
    qkv, H, bias, mask, logit_scale, dout = _packed_inputs(device, dtype)
    out = window_attention_qkvpacked(qkv, H, bias, mask, logit_scale=logit_scale)
    dqkv, dbias, dls = torch.autograd.grad(out, [qkv, bias, logit_scale], dout)
    return {"out": out.detach(), "dqkv": dqkv, "dbias": dbias, "dlogit_scale": dls}


@two_gpus
@pytest.mark.parametrize("dt", ["fp16", "fp32"])
@DIRECTIONS
def test_other_device_qkvpacked(dt, current, target):
    """window_attention_qkvpacked on cuda:<target> with cuda:<current> current: results on the
    tensors' device, equal to a run with that device current and to window_attention on the q, k, v
    views (its contract: bitwise the unpacked op)."""
    dtype = FP[dt]
    with torch.cuda.device(current):
        on_current = _run_packed(f"cuda:{current}", dtype)
        got = _run_packed(f"cuda:{target}", dtype)
        _assert_on(got, target, current)
        # the unpacked op on the views, on the same (non-current) device
        qkv, H, bias, mask, logit_scale, dout = _packed_inputs(f"cuda:{target}", dtype)
        B_, N, c3 = qkv.shape
        q, k, v = qkv.reshape(B_, N, 3, H, c3 // (3 * H)).permute(2, 0, 3, 1, 4).unbind(0)
        out = window_attention(q, k, v, bias, mask, logit_scale=logit_scale)
        grads = torch.autograd.grad(out, [qkv, bias, logit_scale], dout)
        unpacked = {"out": out.detach(), **dict(zip(("dqkv", "dbias", "dlogit_scale"), grads))}
        torch.cuda.synchronize(target)
    _assert_same(unpacked, got, f"packed vs unpacked op on cuda:{target} with cuda:{current} current")
    with torch.cuda.device(target):
        native = _run_packed(f"cuda:{target}", dtype)
        torch.cuda.synchronize(target)
    _assert_same(native, got, f"cuda:{target} with cuda:{current} current vs cuda:{target} current")
    if _same_model(current, target):
        _assert_same({k: v.to(f"cuda:{target}") for k, v in on_current.items()}, got,
                     f"cuda:{target} vs cuda:{current}")


def _cpb_inputs(device, dtype, wh=8, ww=8, H=4, hidden=64, seed=90):
    """Swin V2's log-spaced relative-coordinate table, its (N, N) index, the CPB MLP's parameters
    (w1, b1, w2, leaves) and an output gradient, drawn on the CPU."""
    from flash_window_attn.modules import _relative_position_index

    rh = torch.arange(-(wh - 1), wh, dtype=torch.float32)
    rw = torch.arange(-(ww - 1), ww, dtype=torch.float32)
    table = torch.stack(torch.meshgrid(rh, rw, indexing="ij")).permute(1, 2, 0).unsqueeze(0)
    table = table / torch.tensor([max(wh - 1, 1), max(ww - 1, 1)]) * 8
    table = torch.sign(table) * torch.log2(table.abs() + 1.0) / 3
    index = _relative_position_index(wh, ww)
    g = torch.Generator().manual_seed(seed)
    w1 = torch.randn(hidden, 2, generator=g) * 0.5
    b1 = torch.randn(hidden, generator=g) * 0.1
    w2 = torch.randn(H, hidden, generator=g) * 0.1
    n = wh * ww
    grad = torch.randn(H, n, n, generator=g)
    params = [p.to(device=device, dtype=dtype).requires_grad_(True) for p in (w1, b1, w2)]
    return table.to(device, dtype), index.to(device), params, grad.to(device, dtype)


def _run_cpb(device, dtype):
    coords, index, (w1, b1, w2), grad = _cpb_inputs(device, dtype)
    bias = torch.ops.flash_window_attn.swin_cpb_bias(coords, w1, b1, w2, index)
    dw1, db1, dw2 = torch.autograd.grad(bias, [w1, b1, w2], grad)
    return {"bias": bias.detach(), "dw1": dw1, "db1": db1, "dw2": dw2}


@two_gpus
@pytest.mark.parametrize("dt", ["fp32", "bf16"])
@DIRECTIONS
def test_other_device_cpb_bias(dt, current, target):
    """swin_cpb_bias (forward and its autograd backward) on cuda:<target> with cuda:<current>
    current: results on the tensors' device, equal to a run with that device current."""
    dtype = FP[dt]
    with torch.cuda.device(current):
        on_current = _run_cpb(f"cuda:{current}", dtype)
        got = _run_cpb(f"cuda:{target}", dtype)
        _assert_on(got, target, current)
    with torch.cuda.device(target):
        native = _run_cpb(f"cuda:{target}", dtype)
        torch.cuda.synchronize(target)
    _assert_same(native, got, f"cuda:{target} with cuda:{current} current vs cuda:{target} current")
    if _same_model(current, target):
        # same GPU model: the same cuBLAS kernels, so bitwise the other device's results
        _assert_same({k: v.to(f"cuda:{target}") for k, v in on_current.items()}, got,
                     f"cuda:{target} vs cuda:{current}")


# ------------------------------------------------------------------------------------------------
# Determinism
# ------------------------------------------------------------------------------------------------

DETERMINISM = [
    ("causal-fp16-gqa1-L1000", 2, 4, 4, 1000, 64, "fp16", "sliding", dict(causal=True), "contiguous"),
    ("local256-bf16-gqa2-L1025", 2, 8, 4, 1025, 128, "bf16", "sliding", dict(window=(256, 0)), "packed"),
    ("sym64-fp16-gqa8-L700", 1, 16, 2, 700, 32, "fp16", "sliding", dict(window=(64, 64)), "blhd"),
    ("block128x2-bf16-gqa8-L1200", 2, 8, 1, 1200, 64, "bf16", "block", dict(block_size=128, window_blocks=2),
     "contiguous"),
    ("block37x3-fp16-gqa2-L333", 1, 4, 2, 333, 16, "fp16", "block", dict(block_size=37, window_blocks=3),
     "misaligned"),
    ("full-bf16-gqa1-L65", 3, 2, 2, 65, 72, "bf16", "sliding", dict(), "contiguous"),
    ("causal-fp32-gqa8-L640", 1, 8, 1, 640, 64, "fp32", "sliding", dict(window=(-1, -1), causal=True),
     "contiguous"),
    ("sym100-fp32-gqa1-L999-d256", 2, 2, 2, 999, 256, "fp32", "sliding", dict(window=(100, 100)), "sliced"),
    ("block256x2-fp32-gqa2-L2048", 1, 4, 2, 2048, 40, "fp32", "block", dict(block_size=256, window_blocks=2),
     "contiguous"),
    ("op-band-fp16-gqa2-L129-d8", 2, 4, 2, 129, 8, "fp16", "op", dict(band=(2, 1, 16)), "packed"),
]


@pytest.mark.parametrize("case", DETERMINISM, ids=[c[0] for c in DETERMINISM])
def test_backward_bitwise_deterministic(case):
    """Two forward + backward runs (the allocator poisoned with NaN in between, so that a buffer read
    before it is written would differ) are bitwise equal: out, dq, dk, dv (and lse for the op)."""
    problem = _problem(case, seed=70)
    B, H, L, d = problem.q.shape
    nbytes = 8 * B * H * L * d * problem.q.element_size() + (64 << 20)
    poison_cuda_allocator(nbytes)
    first = _run(problem)
    torch.cuda.synchronize()
    assert {"out", "dq", "dk", "dv"} <= set(first)
    if problem.call == "op":
        assert "lse" in first
    for rep in range(2):
        poison_cuda_allocator(nbytes)
        again = _run(problem)
        torch.cuda.synchronize()
        _assert_same(first, again, f"run {rep + 2} vs run 1")
    for name, t in first.items():
        assert torch.isfinite(t).all(), name
