"""Concurrency and lifecycle on CUDA (all marked ``cuda``).

- several CUDA streams (and several host threads) running the op forward and backward at the same
  time give bitwise the results of serial runs;
- CUDA graph capture of forward + backward, replayed with new data copied into the static inputs,
  gives bitwise the eager results;
- 10**4 repeated calls: no growth of allocated memory, a stable peak, no host memory growth;
- tensors on cuda:1 run on cuda:1 while the current device is cuda:0 (and the reverse), with the
  results of cuda:0 (skipped with fewer than 2 GPUs);
- determinism: two forward + backward runs are bitwise equal (out, dq, dk, dv, dbias,
  dlogit_scale) over shapes of both backward paths (N <= 64 and N > 64) and every dtype.
"""

from __future__ import annotations

import pytest
import torch

from flash_window_attn import window_attention
from flash_window_attn.testing import check_problem, make_problem, poison_cuda_allocator, run_ours

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

# (B_, H, N, d, dtype, make_problem kwargs): both backward paths, all head-dim buckets, all dtypes
CASES = [
    (256, 3, 49, 32, "fp16", dict(version="v2", bias="hnn", mask="shift", nW=4, layout="packed")),
    (64, 4, 144, 64, "bf16", dict(version="v2", bias="1hnn", mask="random", nW=2)),
    (32, 2, 256, 128, "fp16", dict(version="v1", bias="hnn", mask=None)),
    (128, 2, 64, 16, "fp32", dict(version="v2", bias="hnn", mask="shift", nW=2)),
    (8, 1, 576, 32, "bf16", dict(version="v2", bias="hnn", mask="shift", nW=2, layout="packed")),
    (16, 2, 100, 96, "fp32", dict(version="v1", bias="1hnn", mask="dead", nW=4)),
    # the wgmma forward's two kernels on sm_90a (the main grid, then the 16 rows of the last query
    # block as its programmatic dependent)
    (96, 3, 144, 32, "bf16", dict(version="v2", bias="hnn", mask="shift", nW=4, layout="packed")),
]
CASE_IDS = [f"B{c[0]}-H{c[1]}-N{c[2]}-d{c[3]}-{c[4]}-{c[5]['version']}" for c in CASES]


def _problem(case, seed, device="cuda"):
    B_, H, N, d, dt, kw = case
    return make_problem(B_, H, N, d, dtype=FP[dt], device=device, seed=seed, **kw)


# ------------------------------------------------------------------------------------------------
# Streams and threads
# ------------------------------------------------------------------------------------------------


def _run(problem):
    return run_ours(problem, window_attention)


def test_streams_concurrent_equal_serial():
    """One stream per problem (six different problems at once, forward and backward), three rounds:
    every result is bitwise the serial one."""
    assert_streams_equal_serial(_run, [_problem(c, seed=10 + i) for i, c in enumerate(CASES)], CASE_IDS)


def test_streams_same_inputs_concurrent():
    """Four streams reading the same inputs at once (the kernels only read q, k, v, bias, mask)."""
    assert_streams_same_inputs(_run, _problem(CASES[0], seed=20))


def test_threads_with_own_streams():
    """Four host threads, each with its own stream and problem, 10 forward + backward each: the op's
    host side (plans, cached kernel attributes) is thread safe and the results are the serial ones."""
    assert_threads_equal_serial(_run, [_problem(c, seed=30 + i) for i, c in enumerate(CASES[:4])])


# ------------------------------------------------------------------------------------------------
# CUDA graphs
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_cuda_graph_capture_and_replay(case):
    """Capture forward + backward in a CUDA graph, then for three new problems copy their data into
    the static inputs and replay: the static outputs equal eager runs on the new data bitwise."""
    static = _problem(case, seed=40)
    inputs = static.grad_inputs()
    # warm up on a side stream (kernel attributes, occupancy caches, autograd state) before capture
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            run_ours(static, window_attention)
    torch.cuda.current_stream().wait_stream(s)
    torch.cuda.synchronize()

    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        if static.qkv is not None:
            # Packed problems: take q, k, v views of the packed leaf inside the capture, as a model's
            # forward does. The views make_problem made outside it belong to an autograd node
            # recorded on the legacy default stream, and the backward engine would make that
            # stream wait on the capturing one (cudaErrorStreamCaptureImplicit) -- a property of
            # capture (the whole forward must run in it), not of the op.
            B_, H, N, d = static.q.shape
            q, k, v = static.qkv.reshape(B_, N, 3, H, d).permute(2, 0, 3, 1, 4).unbind(0)
            inputs = {**inputs, "dq": q, "dk": k, "dv": v}
            args = (q, k, v) + static.args()[3:]
        else:
            args = static.args()
        static_out = window_attention(*args, **static.kwargs())
        static_grads = torch.autograd.grad(static_out, list(inputs.values()), static.dout)
    static_result = {"out": static_out, **dict(zip(inputs.keys(), static_grads))}

    def copy_into_static(src):
        with torch.no_grad():
            if static.qkv is not None:
                static.qkv.copy_(src.qkv)
            else:
                for name in ("q", "k", "v"):
                    getattr(static, name).copy_(getattr(src, name))
            for name in ("bias", "mask", "logit_scale", "dout"):
                if getattr(static, name) is not None:
                    getattr(static, name).copy_(getattr(src, name))

    for trial in range(3):
        fresh = _problem(case, seed=41 + trial)
        copy_into_static(fresh)
        graph.replay()
        torch.cuda.synchronize()
        eager = run_ours(fresh, window_attention)
        torch.cuda.synchronize()
        _assert_same(eager, {k: v.clone() for k, v in static_result.items()}, f"replay {trial}")
    # and the replayed results are right, not only consistent
    ok, lines = check_problem(fresh)
    assert ok, "\n".join(lines)
    del graph


# ------------------------------------------------------------------------------------------------
# Repeated calls: no memory growth
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("case", [CASES[0], CASES[1], CASES[3]], ids=[CASE_IDS[0], CASE_IDS[1], CASE_IDS[3]])
def test_repeated_calls_no_memory_growth(case):
    """10**4 forward + backward calls: memory_allocated returns to its starting value, the peak after
    10**4 calls equals the peak after the first 100, the reserved pool does not grow, and the host
    resident set grows by less than 64 MiB (a per-call host leak of ~6 KiB would exceed it)."""
    problem = _problem(case, seed=50)
    inputs = list(problem.grad_inputs().values())

    def step():
        out = window_attention(*problem.args(), **problem.kwargs())
        grads = torch.autograd.grad(out, inputs, problem.dout)
        del out, grads

    assert_no_memory_growth(step)


def test_repeated_inference_calls_no_memory_growth():
    problem = _problem(CASES[2], seed=51)
    assert_no_inference_memory_growth(lambda: window_attention(*problem.args(), **problem.kwargs()))


# ------------------------------------------------------------------------------------------------
# A second device
# ------------------------------------------------------------------------------------------------

two_gpus = pytest.mark.skipif(not torch.cuda.is_available() or torch.cuda.device_count() < 2,
                              reason="needs 2 CUDA devices")


@two_gpus
@pytest.mark.parametrize("case", [CASES[0], CASES[1], CASES[3]], ids=[CASE_IDS[0], CASE_IDS[1], CASE_IDS[3]])
@pytest.mark.parametrize("current,target", [(0, 1), (1, 0)])
def test_other_device_than_current(case, current, target):
    """Tensors on cuda:<target> while the current device is cuda:<current>: the op runs on the
    tensors' device (results there, correct, and equal to a run with that device current), and the
    current device is left unchanged. Run on the other device first so that per-device kernel
    set-up (shared-memory attributes, occupancy caches) is exercised in both orders."""
    with torch.cuda.device(current):
        on_current = run_ours(_problem(case, seed=60, device=f"cuda:{current}"), window_attention)
        problem = _problem(case, seed=60, device=f"cuda:{target}")
        got = run_ours(problem, window_attention)
        torch.cuda.synchronize(target)
        assert torch.cuda.current_device() == current
        for name, t in got.items():
            assert t.device == torch.device(f"cuda:{target}"), (name, t.device)
        ok, lines = check_problem(problem)
        assert ok, "\n".join(lines)
    with torch.cuda.device(target):
        native = run_ours(_problem(case, seed=60, device=f"cuda:{target}"), window_attention)
        torch.cuda.synchronize(target)
    _assert_same(native, got, f"cuda:{target} with cuda:{current} current vs cuda:{target} current")
    if torch.cuda.get_device_name(current) == torch.cuda.get_device_name(target):
        # same GPU model: same plans, so bitwise the results of the other device
        _assert_same({k: v.to(f"cuda:{target}") for k, v in on_current.items()}, got,
                     f"cuda:{target} vs cuda:{current}")


@two_gpus
def test_other_device_side_stream():
    """A non-default current stream on the tensors' device is the one the op runs on."""
    problem = _problem(CASES[0], seed=61, device="cuda:1")
    expected = run_ours(problem, window_attention)
    torch.cuda.synchronize(1)
    with torch.cuda.device(0):
        s = torch.cuda.Stream(device=1)
        s.wait_stream(torch.cuda.current_stream(1))
        with torch.cuda.stream(s):  # also makes cuda:1 current inside the block
            got = run_ours(problem, window_attention)
        torch.cuda.current_stream(1).wait_stream(s)
        torch.cuda.synchronize(1)
    _assert_same(expected, got, "side stream on cuda:1")


# ------------------------------------------------------------------------------------------------
# Determinism
# ------------------------------------------------------------------------------------------------

DETERMINISM = [
    (1024, 2, 49, 32, "fp16", dict(version="v2", bias="hnn", mask="shift", nW=64)),
    (512, 3, 64, 64, "bf16", dict(version="v2", bias="1hnn", mask="random", nW=4, layout="packed")),
    (64, 2, 65, 16, "fp16", dict(version="v2", bias="hnn", mask=None)),
    (64, 4, 144, 128, "bf16", dict(version="v1", bias="hnn", mask="shift", nW=4)),
    (16, 2, 577, 32, "fp16", dict(version="v2", bias="hnn", mask="dead", nW=2)),
    (4, 1, 1024, 64, "bf16", dict(version="v2", bias="hnn", mask="shift", nW=2)),
    (256, 3, 49, 32, "fp32", dict(version="v2", bias="hnn", mask="shift", nW=4)),
    (32, 2, 256, 48, "fp32", dict(version="v2", bias="1hnn", mask="random", nW=2)),
    (2048, 1, 1, 16, "fp16", dict(version="v2", bias="hnn", mask=None)),
]


@pytest.mark.parametrize("case", DETERMINISM,
                         ids=[f"B{c[0]}-H{c[1]}-N{c[2]}-d{c[3]}-{c[4]}-{c[5]['version']}" for c in DETERMINISM])
def test_backward_bitwise_deterministic(case):
    """Two forward + backward runs (the allocator poisoned with NaN in between, so that a buffer read
    before it is written would differ) are bitwise equal: out, dq, dk, dv, dbias, dlogit_scale."""
    problem = _problem(case, seed=70)
    B_, H, N, d = problem.q.shape
    nbytes = 8 * B_ * H * N * d * problem.q.element_size() + (64 << 20)
    poison_cuda_allocator(nbytes)
    first = run_ours(problem, window_attention)
    torch.cuda.synchronize()
    assert {"out", "dq", "dk", "dv", "dbias"} <= set(first)
    for rep in range(2):
        poison_cuda_allocator(nbytes)
        again = run_ours(problem, window_attention)
        torch.cuda.synchronize()
        _assert_same(first, again, f"run {rep + 2} vs run 1")
    for name, t in first.items():
        assert torch.isfinite(t).all() or problem.desc.get("mask") == "dead", name
