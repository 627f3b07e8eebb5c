"""Randomized differential testing of the local (sliding-window / block-sliding-window) attention ops.

Each problem (``flash_window_attn.testing_local.local_random_problem``) draws B, H and Hkv (GQA ratios
1, 2, 4, 8), L in [1, 4096] (biased toward the kernels' 64-row tile boundaries), d, the dtype, the
window pattern (full, causal, symmetric, causal local, right-only, right-unbounded, asymmetric,
diagonal, block-causal, block-diagonal, general block bands; windows from 1 to far beyond L, block
sizes that do and do not divide L and 64), the entry point (public function or the op, which also
returns lse), the scale, the memory layout of q / k / v and of the output gradient, and which inputs
require grad. out, lse and every gradient are held to the project's rule against the float64 dense
reference with the explicit mask (error <= 2 x PyTorch's own error in the same precision + atol),
and the backward must be bitwise deterministic (run twice).

- CPU (CI): ``CPU_SEEDS`` seeds, fp32 and fp64 (a few seconds on 2 cores).
- CUDA: at least 1000 seeds (``FWA_LOCAL_RANDOM_PROBLEMS``, default 1000, starting at
  ``FWA_LOCAL_RANDOM_SEED_START``, default 0), fp16 / bf16 / fp32; every failure is collected and
  all failing seeds are reported at the end, each with a one-line reproducer:

      python -m flash_window_attn.testing_local --repro SEED --device cuda
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections import Counter

import pytest
import torch

from flash_window_attn.local_reference import local_attention_mask
from flash_window_attn.testing import random_suite_on_gpu
from flash_window_attn.testing_local import (
    LOCAL_BOUNDARY_LS,
    LOCAL_DOUT_LAYOUTS,
    LOCAL_GQA_RATIOS,
    LOCAL_LAYOUTS,
    LOCAL_PATTERN_KINDS,
    LOCAL_RANDOM_DTYPES,
    check_local_random_problem,
    local_problem_spec,
    local_random_problem,
    local_random_problem_repro,
)

CPU_SEEDS = range(120)
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.mark.parametrize("seed", CPU_SEEDS, ids=[f"seed{s}" for s in CPU_SEEDS])
def test_local_random_problem_cpu(seed):
    ok, report = check_local_random_problem(seed, "cpu")
    assert ok, report


@pytest.mark.cuda
def test_local_random_problems_cuda():
    summary, failure = random_suite_on_gpu(check_local_random_problem, local_random_problem_repro,
                                           "FWA_LOCAL_RANDOM_PROBLEMS", "FWA_LOCAL_RANDOM_SEED_START",
                                           "local problems")
    print(summary)
    if failure:
        pytest.fail(failure, pytrace=False)


# ------------------------------------------------------------------------------------------------
# The generator itself: deterministic, covers every window pattern and layout, the reproducer works
# ------------------------------------------------------------------------------------------------


def test_generator_is_deterministic():
    for seed in (0, 7, 123, 999):
        a, b = local_random_problem(seed, "cpu"), local_random_problem(seed, "cpu")
        assert a.desc == b.desc and a.band == b.band and a.call == b.call and a.call_kwargs == b.call_kwargs
        for name in ("q", "k", "v", "dout"):
            x, y = getattr(a, name), getattr(b, name)
            assert x.stride() == y.stride() and x.storage_offset() == y.storage_offset(), name
            assert torch.equal(x.detach(), y.detach()), name
            assert x.requires_grad == y.requires_grad, name
    assert local_problem_spec(1, "cpu") != local_problem_spec(2, "cpu")
    # specs are pure functions of (seed, device type, options)
    assert [local_problem_spec(s, "cuda") for s in range(50)] == [local_problem_spec(s, "cuda") for s in range(50)]
    assert local_problem_spec(5, "cuda:0") == {**local_problem_spec(5, "cuda"), "device": "cuda:0"}


def _coverage(specs):
    return {
        "kind": Counter(s["kind"] for s in specs),
        "layout": Counter(s["layout"] for s in specs),
        "tensor_layout": Counter(t for s in specs for t in s["tensor_layouts"]),
        "dtype": Counter(s["dtype"] for s in specs),
        "ratio": Counter(s["ratio"] for s in specs),
        "call": Counter(s["call"] for s in specs),
        "causal_flag": Counter(bool(s["call_kwargs"].get("causal")) for s in specs if s["call"] == "sliding"),
        "dout": Counter(s["dout_layout"] for s in specs),
        "L": Counter(s["L"] for s in specs),
        "d": Counter(s["d"] for s in specs),
        "wide_kind": Counter(s["kind"] for s in specs if s["wide"]),
        "block_div": Counter((s["block_divides_L"], s["block_divides_64"]) for s in specs if s["block"] > 1),
        "block_gt_L": sum(s["block"] > s["L"] for s in specs),
        "huge_window": sum(max(s["left"], s["right"]) >= 2 ** 31 for s in specs),
        "qkv_grad": Counter(tuple(s["qkv_requires_grad"]) for s in specs),
        "scale": Counter("default" if s["scale"] is None else "negative" if s["scale"] < 0 else "given"
                         for s in specs),
    }


def _check_coverage(specs, dtypes, *, min_count=1):
    c = _coverage(specs)
    assert all(c["kind"][k] >= min_count for k in LOCAL_PATTERN_KINDS), c["kind"]
    assert set(c["layout"]) == set(LOCAL_LAYOUTS), c["layout"]
    assert set(c["dtype"]) == set(dtypes), c["dtype"]
    assert all(c["ratio"][r] >= min_count for r in LOCAL_GQA_RATIOS), c["ratio"]
    assert set(c["call"]) == {"op", "sliding", "block"}
    assert set(c["causal_flag"]) == {True, False}
    assert set(c["dout"]) == set(LOCAL_DOUT_LAYOUTS), c["dout"]
    assert set(c["scale"]) == {"default", "given", "negative"}
    # every combination of "block divides L" x "block divides 64"; blocks longer than L
    assert set(c["block_div"]) == {(True, True), (True, False), (False, True), (False, False)}, c["block_div"]
    assert c["block_gt_L"] > 0 and c["huge_window"] > 0
    # windows wider than the sequence, for the sliding and the block patterns alike
    assert {"symmetric", "causal_local", "right_only", "block_causal"} <= set(c["wide_kind"]), c["wide_kind"]
    assert (True, True, True) in c["qkv_grad"] and (False, False, False) in c["qkv_grad"]
    assert any(t[0] != t[1] or t[1] != t[2] for t in c["qkv_grad"])  # some but not all
    return c


def test_generator_covers_the_cuda_range():
    """Over 2000 CUDA specs (no tensors built) every window pattern, layout, dout layout, dtype,
    GQA ratio and entry point appears, with the tile-boundary sequence lengths and head dims."""
    specs = [local_problem_spec(seed, "cuda") for seed in range(2000)]
    c = _check_coverage(specs, LOCAL_RANDOM_DTYPES["cuda"], min_count=20)
    assert all(c["L"][n] > 0 for n in (1, 2, 63, 64, 65, 127, 128, 129, 1000, 4096)), c["L"]
    assert sum(v for n, v in c["L"].items() if n > 1024) >= 100
    assert sum(v for n, v in c["L"].items() if n % 64 != 0) >= 1000
    assert set(c["d"]) == set(range(8, 257, 8))
    for s in specs:
        B, H, Hkv, L, d = s["B"], s["H"], s["Hkv"], s["L"], s["d"]
        assert 1 <= L <= 4096 and d % 8 == 0 and 8 <= d <= 256 and H == Hkv * s["ratio"]
        assert d <= 128 or s["dtype"] == "fp32", s  # fp16 / bf16 kernels stop at 128
        assert B * H * L * max(L, d) * max(1, d // 64) <= s["max_elems"], s
        assert s["left"] >= -1 and s["right"] >= -1 and s["block"] >= 1
    assert any(s["B"] == 0 for s in specs)
    # GQA at the longest sequences
    assert any(s["L"] == 4096 and s["ratio"] == 8 for s in specs)


def test_generator_covers_the_cpu_range():
    specs = [local_problem_spec(seed, "cpu") for seed in range(2000)]
    c = _check_coverage(specs, LOCAL_RANDOM_DTYPES["cpu"], min_count=20)
    assert all(c["L"][n] > 0 for n in LOCAL_BOUNDARY_LS if n <= 1024), c["L"]
    assert 256 in c["d"] and 8 in c["d"]


def test_cpu_slice_coverage():
    """The CI slice alone reaches every pattern kind, every problem-level layout and both dtypes."""
    specs = [local_problem_spec(seed, "cpu") for seed in CPU_SEEDS]
    c = _coverage(specs)
    assert set(c["kind"]) == set(LOCAL_PATTERN_KINDS), c["kind"]
    assert set(c["dtype"]) == set(LOCAL_RANDOM_DTYPES["cpu"])
    assert set(c["ratio"]) == set(LOCAL_GQA_RATIOS)
    assert set(c["layout"]) == set(LOCAL_LAYOUTS), c["layout"]


def test_call_reaches_the_band_of_the_spec():
    """The public call a spec makes (window / causal / block_size / window_blocks) selects exactly
    the band (left, right, block) the reference is given."""
    for seed in range(400):
        s = local_problem_spec(seed, "cpu")
        L, kw = s["L"], s["call_kwargs"]
        want = local_attention_mask(L, s["left"], s["right"], s["block"])
        if s["call"] == "sliding":
            left, right = kw.get("window", (-1, -1))
            if kw.get("causal"):
                right = 0
            got = local_attention_mask(L, left, right, 1)
        elif s["call"] == "block":
            got = local_attention_mask(L, kw["window_blocks"] - 1, 0, kw["block_size"])
        else:
            continue
        assert torch.equal(got, want), s


def test_reproducer_command_runs():
    """The one-line reproducer a failing seed prints is a working command."""
    cmd = local_random_problem_repro(3, "cpu")
    assert cmd == "python -m flash_window_attn.testing_local --repro 3 --device cpu"
    argv = [sys.executable] + cmd.split()[1:]
    res = subprocess.run(argv, capture_output=True, text=True, timeout=300, cwd=REPO)
    assert res.returncode == 0, res.stdout + res.stderr
    assert "reproduce with: " + cmd in res.stdout and "1 / 1 local problems ok" in res.stdout, res.stdout
    assert local_random_problem_repro(3, "cuda") == "python -m flash_window_attn.testing_local --repro 3 --device cuda"
    assert local_random_problem_repro(3, "cpu", dtypes=["fp16"]).endswith("--dtypes fp16")


def test_failure_report_names_the_reproducer():
    """A mismatch (an op that returns wrong values), a nondeterministic backward and an exception
    are each reported with the reproducer line."""
    seed = next(s for s in range(100) if local_problem_spec(s, "cpu")["B"] > 0
                and any(local_problem_spec(s, "cpu")["qkv_requires_grad"]))
    repro = local_random_problem_repro(seed, "cpu")

    def wrong(problem):
        out, lse = problem.forward()
        return out * 1.01, lse

    ok, report = check_local_random_problem(seed, "cpu", fn=wrong)
    assert not ok
    assert report.splitlines()[0].endswith(f"reproduce with: {repro}  [MISMATCH]")
    assert "FAIL" in report

    calls = []

    def flaky(problem):
        out, lse = problem.forward()

        class Noisy(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x.view_as(x)

            @staticmethod
            def backward(ctx, g):
                calls.append(1)
                return g * (1.0 + 1e-3 * len(calls))

        return Noisy.apply(out), lse

    ok, report = check_local_random_problem(seed, "cpu", fn=flaky)
    assert not ok and "not bitwise deterministic" in report, report

    def broken(problem):
        raise RuntimeError("boom")

    ok, report = check_local_random_problem(seed, "cpu", fn=broken)
    assert not ok and "boom" in report and "reproduce with:" in report
