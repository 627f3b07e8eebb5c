"""Pieces shared by the benchmark scripts (bench_window_attention, bench_sliding_window,
bench_models): CUDA timing and peak memory, the peer result check, error descriptions, file names.
Imports only torch (flash_window_attn is imported lazily where needed)."""

from __future__ import annotations

import gc
import math
import re
import statistics
import time
from typing import Callable, Dict, Optional

import torch


def slug(name: str) -> str:
    """A device name as a file-name part: 'NVIDIA H100 80GB HBM3' -> 'nvidia-h100-80gb-hbm3'."""
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")


def describe_error(exc: BaseException, *, prefix: str = "error: ", max_len: int = 200) -> str:
    """'OOM', or the exception's type and the first line of its message."""
    if isinstance(exc, torch.cuda.OutOfMemoryError):
        return "OOM"
    msg = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return f"{prefix}{type(exc).__name__}: {msg[:max_len]}"


def cuda_bench_ms(fn: Callable, warmup_ms: int, rep_ms: int, fallback_runs: int) -> float:
    """Median time of fn in ms on the GPU: triton.testing.do_bench (CUDA events, L2 flushed before
    each run, after warm-up) when triton is installed, else the same by hand over fallback_runs."""
    try:
        from triton.testing import do_bench

        return float(do_bench(fn, warmup=warmup_ms, rep=rep_ms, return_mode="median"))
    except ImportError:
        pass
    return cuda_event_median_ms(fn, fallback_runs, flush_l2=True)


def cuda_event_median_ms(fn: Callable, runs: int, *, flush_l2: bool, warmup: int = 5) -> float:
    """Median time of fn in ms over `runs` runs, each between two CUDA events and synchronised,
    after `warmup` runs; with flush_l2, a 256 MiB buffer is zeroed before each run (outside the
    events) so that no run finds its inputs in the L2."""
    flush = torch.empty(256 << 20, dtype=torch.int8, device="cuda") if flush_l2 else None
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(runs):
        if flush is not None:
            flush.zero_()
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        fn()
        e.record()
        torch.cuda.synchronize()
        times.append(s.elapsed_time(e))
    return statistics.median(times)


def cuda_graph_capture(fn: Callable, *, warmup: int = 3):
    """(graph, result): fn captured once in a CUDA graph, after `warmup` calls on a side stream
    (allocator, autotuning and compilation stay outside the capture). Keep ``result`` (fn's
    outputs) alive while the graph is replayed. Raises where fn cannot be captured."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(warmup):
            fn()
    torch.cuda.current_stream().wait_stream(side)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        result = fn()
    return graph, result


def cuda_graph_median_ms(fn: Callable, runs: int, *, flush_l2: bool = True, warmup: int = 3) -> float:
    """GPU time of fn in ms with no host time in it: fn captured once in a CUDA graph
    (cuda_graph_capture), then the median over `runs` replays, each between two CUDA events and
    synchronised, with a 256 MiB buffer zeroed before each (outside the events: no replay finds its
    inputs in the L2, as cuda_bench_ms). A replay is one launch, so the time is the kernels' and the
    gaps between them, whatever the host's speed. Raises where fn cannot be captured."""
    graph, result = cuda_graph_capture(fn, warmup=warmup)  # noqa: F841 (outputs alive while replayed)
    return cuda_event_median_ms(graph.replay, runs, flush_l2=flush_l2, warmup=1)


def graph_times(res: Dict, fns: Dict[str, Callable], runs: int) -> None:
    """Into result dict ``res``: ``{mode}_graph_ms`` = cuda_graph_median_ms(fn) for each mode ->
    fn of ``fns``; where a capture fails, ``graph_status`` says why (the other times stand)."""
    try:
        for mode, fn in fns.items():
            res[f"{mode}_graph_ms"] = cuda_graph_median_ms(fn, runs)
    except Exception as exc:  # noqa: BLE001 (not capturable: a result, not a crash)
        res["graph_status"] = describe_error(exc)


# A timed call is host-bound when the host takes at least this fraction of its measured time to
# issue it: the GPU then waits for the host, and the time measures the host (as bench_models.py).
HOST_BOUND_FRACTION = 0.9


def host_issue_ms(fn: Callable, calls: int = 20) -> float:
    """Median host time in ms to issue one call of fn (back-to-back calls, no synchronisation
    between them; CUDA only)."""
    torch.cuda.synchronize()
    times = []
    for _ in range(calls):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1e3)
    torch.cuda.synchronize()
    return statistics.median(times)


def host_bound(r: Optional[Dict], mode: str) -> bool:
    """True if record ``r``'s ``{mode}_host_ms`` (the host's issue time) is at least
    HOST_BOUND_FRACTION of its ``{mode}_ms``; False where either is missing or not a number."""
    def num(key):
        v = (r or {}).get(key)
        return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) and not math.isnan(v) else None

    t, h = num(f"{mode}_ms"), num(f"{mode}_host_ms")
    return t is not None and h is not None and h >= HOST_BOUND_FRACTION * t


def cuda_peak_extra_mb(fn: Callable) -> float:
    """Peak CUDA memory allocated by fn beyond what was allocated before it, in MiB."""
    gc.collect()
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    base = torch.cuda.memory_allocated()
    result = fn()
    torch.cuda.synchronize()
    peak = torch.cuda.max_memory_allocated() - base
    del result
    return peak / 2**20


def peer_mismatch(got: Dict[str, torch.Tensor], ref: Dict[str, object]) -> Optional[str]:
    """A peer must compute the same function: each result in ``got`` (keys 'out...' compare with
    the reference 'out') within max(10 x PyTorch's own error, 5e-2) of the float64 reference.
    Loose on purpose: peers round differently; this catches a different result. None if all pass."""
    from flash_window_attn.testing import normalized_error

    bad = []
    for name, x in got.items():
        key = "out" if name.startswith("out") else name
        err = normalized_error(x, ref["ref64"][key])
        if not err <= max(10 * ref["pytorch_err"][key], 5e-2):
            bad.append(f"{name} err {err:.2e} (pytorch {ref['pytorch_err'][key]:.2e})")
    return "wrong result: " + ", ".join(bad) if bad else None
