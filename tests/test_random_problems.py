"""Randomized differential testing: seeded random problems against the float64 reference.

Each problem (``flash_window_attn.testing.random_problem``) draws N in [1, 1024] (biased toward
Swin's window sizes, small odd sizes and the kernels' tile boundaries), d, H, B_ and nW, the dtype,
the memory layout of q / k / v (contiguous, packed-qkv views, permuted, sliced with larger strides,
or a mix), the bias (shape, dtype, values, strides), the mask (Swin shift 0 / -100, random with
-inf entries, rows entirely -inf, 0 / -inf), V1 (scale given or default) or V2 (per-head logit
scales below, at and above the clamp), the layout of the output gradient, and which inputs require
grad. The output and every gradient are held to the project's rule (``testing.compare_to_reference``:
error <= 2 x PyTorch's own error in the same precision + atol); the op has no dropout.

- CPU (CI): ``CPU_SEEDS`` seeds, fp32 and fp64.
- CUDA: at least 1000 seeds (``FWA_RANDOM_PROBLEMS``, default 1000, starting at
  ``FWA_RANDOM_SEED_START``, default 0), fp16 / bf16 / fp32; every failure is collected and all
  failing seeds are reported at the end, each with a one-line reproducer:

      python -m flash_window_attn.testing --repro SEED --device cuda
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections import Counter

import pytest
import torch

from flash_window_attn.testing import (
    RANDOM_DTYPES,
    SWIN_NS,
    check_random_problem,
    random_problem,
    random_problem_repro,
    random_problem_spec,
    random_suite_on_gpu,
)

CPU_SEEDS = range(60)


@pytest.mark.parametrize("seed", CPU_SEEDS, ids=[f"seed{s}" for s in CPU_SEEDS])
def test_random_problem_cpu(seed):
    ok, report = check_random_problem(seed, "cpu")
    assert ok, report


@pytest.mark.cuda
def test_random_problems_cuda():
    summary, failure = random_suite_on_gpu(check_random_problem, random_problem_repro, "FWA_RANDOM_PROBLEMS",
                                           "FWA_RANDOM_SEED_START", "problems")
    print(summary)
    if failure:
        pytest.fail(failure, pytrace=False)


# ------------------------------------------------------------------------------------------------
# The generator itself: deterministic, covers the range, and the reproducer works
# ------------------------------------------------------------------------------------------------


def test_generator_is_deterministic():
    for seed in (0, 7, 123):
        a, b = random_problem(seed, "cpu"), random_problem(seed, "cpu")
        assert a.desc == b.desc
        for name in ("q", "k", "v", "bias", "mask", "logit_scale", "dout"):
            x, y = getattr(a, name), getattr(b, name)
            assert (x is None) == (y is None), name
            if x is not None:
                assert x.stride() == y.stride(), name
                assert torch.equal(x.detach(), y.detach()), name
    # the spec depends on the seed
    assert random_problem_spec(1, "cpu") != random_problem_spec(2, "cpu")


def _coverage(specs):
    c = {
        "dtype": Counter(s["dtype"] for s in specs),
        "layout": Counter(s["layout"] for s in specs),
        "tensor_layout": Counter(t for s in specs for t in s["tensor_layouts"]),
        "mask": Counter(s["mask"] and s["mask"]["kind"] for s in specs),
        "bias": Counter(s["bias"] and s["bias"]["shape"] for s in specs),
        "bias_strided": Counter(bool(s["bias"] and s["bias"]["transposed"]) for s in specs),
        "version": Counter(s["version"] for s in specs),
        "v1_scale_given": Counter(s["scale"] is not None for s in specs if s["version"] == "v1"),
        "ls_kind": Counter(k for s in specs if s["logit_scale"] for k in s["logit_scale"]["kinds"]),
        "ls_shape": Counter(s["logit_scale"]["shape"] for s in specs if s["logit_scale"]),
        "dout": Counter(s["dout_layout"] for s in specs),
        "N": Counter(s["N"] for s in specs),
        "d": Counter(s["d"] for s in specs),
        "H": Counter(s["H"] for s in specs),
        "qkv_grad": Counter(tuple(s["qkv_requires_grad"]) for s in specs),
    }
    return c


def test_generator_covers_the_cuda_range():
    """The >= 1000 problems of the CUDA run span the whole supported range (checked on the specs,
    without building tensors)."""
    specs = [random_problem_spec(seed, "cuda") for seed in range(1000)]
    c = _coverage(specs)
    assert set(c["dtype"]) == set(RANDOM_DTYPES["cuda"])
    assert set(c["layout"]) == {"contiguous", "packed", "permuted", "sliced", "mixed"}
    assert set(c["mask"]) == {None, "shift", "random", "dead", "neginf"}
    assert set(c["bias"]) == {None, "hnn", "1hnn"} and c["bias_strided"][True] > 0
    assert set(c["version"]) == {"v1", "v2"} and set(c["v1_scale_given"]) == {True, False}
    assert set(c["ls_kind"]) == {"below", "at", "above"} and set(c["ls_shape"]) == {"h", "h11", "1h11"}
    assert set(c["dout"]) == {"contiguous", "out", "sliced"}
    assert all(c["N"][n] > 0 for n in SWIN_NS + (1, 1024, 64, 65))
    assert sum(v for n, v in c["N"].items() if n > 256) >= 50
    assert sum(v for n, v in c["N"].items() if n <= 64) >= 200
    assert sum(v for n, v in c["N"].items() if n < 64 and n % 2 == 1) >= 100
    assert set(c["d"]) == set(range(16, 129, 8))
    assert set(c["H"]) == set(range(1, 17))
    assert (False, False, False) in c["qkv_grad"] and (True, True, True) in c["qkv_grad"]
    assert any(s["B_"] == 0 for s in specs)
    assert sum(s["B_"] >= 512 for s in specs) >= 50  # several windows per CTA on the GPU
    for s in specs:
        B_, H, N, d, nW = s["B_"], s["H"], s["N"], s["d"], s["nW"]
        assert 1 <= N <= 1024 and d % 8 == 0 and 16 <= d <= 128 and 1 <= H <= 16
        assert B_ % nW == 0
        assert B_ * H * N * max(N, d) <= s["max_elems"] or B_ <= nW


def test_generator_covers_the_cpu_slice():
    specs = [random_problem_spec(seed, "cpu") for seed in CPU_SEEDS]
    c = _coverage(specs)
    assert set(c["dtype"]) == set(RANDOM_DTYPES["cpu"])
    assert set(c["layout"]) == {"contiguous", "packed", "permuted", "sliced", "mixed"}
    assert set(c["mask"]) == {None, "shift", "random", "dead", "neginf"}
    assert set(c["version"]) == {"v1", "v2"}
    assert set(c["ls_kind"]) == {"below", "at", "above"}
    assert any(n > 256 for n in c["N"]) and any(n < 64 and n % 2 for n in c["N"])


def test_reproducer_command_runs():
    """The one-line reproducer a failing seed prints is a working command."""
    cmd = random_problem_repro(3, "cpu")
    assert cmd == "python -m flash_window_attn.testing --repro 3 --device cpu"
    argv = [sys.executable] + cmd.split()[1:]
    res = subprocess.run(argv, capture_output=True, text=True, timeout=300,
                         cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    assert res.returncode == 0, res.stdout + res.stderr
    assert "reproduce with: " + cmd in res.stdout and "1 / 1 problems ok" in res.stdout, res.stdout


def test_failure_report_names_the_reproducer():
    """A mismatch (here: an op that returns wrong values) is reported with the reproducer line."""
    from flash_window_attn import window_attention

    def wrong(q, k, v, bias=None, mask=None, **kw):
        return window_attention(q, k, v, bias, mask, **kw) * 1.01

    seed = next(s for s in range(100) if random_problem_spec(s, "cpu")["B_"] > 0)
    ok, report = check_random_problem(seed, "cpu", fn=wrong)
    assert not ok
    assert report.splitlines()[0].endswith(f"reproduce with: {random_problem_repro(seed, 'cpu')}  [MISMATCH]")
    assert "FAIL" in report

    def broken(*args, **kw):
        raise RuntimeError("boom")

    ok, report = check_random_problem(seed, "cpu", fn=broken)
    assert not ok and "boom" in report and "reproduce with:" in report
