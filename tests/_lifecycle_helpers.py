"""Op-independent checks shared by tests/test_lifecycle.py (window attention) and
tests/test_local_lifecycle.py (sliding-window attention); not a test file.

Each check takes ``run(problem) -> Dict[str, Tensor]`` (one forward + backward of the op under test,
returning the outputs and gradients by name) or a zero-argument ``step`` / ``call``.
"""

from __future__ import annotations

import gc
import threading
import time
from typing import Callable, Dict, Sequence

import torch

Results = Dict[str, torch.Tensor]


def bitwise_equal(a: torch.Tensor, b: torch.Tensor) -> bool:
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    return torch.equal(a.detach().contiguous().view(torch.uint8), b.detach().contiguous().view(torch.uint8))


def assert_same(expected: Results, got: Results, what: str) -> None:
    """Same names, and every tensor bitwise equal (``got`` moved to ``expected``'s device)."""
    assert set(expected) == set(got), (what, set(expected), set(got))
    for name in expected:
        e, g = expected[name], got[name].to(expected[name].device)
        assert bitwise_equal(e, g), (
            f"{what}: {name} differs (max abs diff {(e.double() - g.double()).abs().max().item():.3e})")


# ------------------------------------------------------------------------------------------------
# Streams and threads
# ------------------------------------------------------------------------------------------------


def assert_streams_equal_serial(run: Callable[[object], Results], problems: Sequence, ids: Sequence[str],
                                rounds: int = 3) -> None:
    """One stream per problem, all at once (forward and backward on that stream), ``rounds``
    times: every result is bitwise the serial one."""
    serial = [run(p) for p in problems]
    torch.cuda.synchronize()
    streams = [torch.cuda.Stream() for _ in problems]
    for rnd in range(rounds):
        cur = torch.cuda.current_stream()
        for s in streams:
            s.wait_stream(cur)
        results = [None] * len(problems)
        for i, (p, s) in enumerate(zip(problems, streams)):
            with torch.cuda.stream(s):
                results[i] = run(p)  # backward runs on s too
        for s in streams:
            cur.wait_stream(s)
        torch.cuda.synchronize()
        for i, (e, g) in enumerate(zip(serial, results)):
            assert_same(e, g, f"round {rnd}, {ids[i]}")


def assert_streams_same_inputs(run: Callable[[object], Results], problem, n_streams: int = 4) -> None:
    """``n_streams`` streams running the same problem (the same input tensors) at once, twice each."""
    expected = run(problem)
    torch.cuda.synchronize()
    streams = [torch.cuda.Stream() for _ in range(n_streams)]
    cur = torch.cuda.current_stream()
    for s in streams:
        s.wait_stream(cur)
    results = []
    for _ in range(2):
        for s in streams:
            with torch.cuda.stream(s):
                results.append(run(problem))
    for s in streams:
        cur.wait_stream(s)
    torch.cuda.synchronize()
    for i, r in enumerate(results):
        assert_same(expected, r, f"stream run {i}")


def assert_threads_equal_serial(run: Callable[[object], Results], problems: Sequence, iters: int = 10) -> None:
    """One host thread per problem, each with its own stream, ``iters`` runs each: the op's host
    side is thread safe and the results are the serial ones."""
    serial = [run(p) for p in problems]
    torch.cuda.synchronize()
    errors = []
    barrier = threading.Barrier(len(problems))

    def worker(i):
        try:
            torch.cuda.set_device(0)
            s = torch.cuda.Stream()
            s.wait_stream(torch.cuda.default_stream())
            barrier.wait()
            with torch.cuda.stream(s):
                for it in range(iters):
                    r = run(problems[i])
                    s.synchronize()
                    assert_same(serial[i], r, f"thread {i} iteration {it}")
        except Exception as e:  # noqa: BLE001 (reported below)
            errors.append(f"thread {i}: {type(e).__name__}: {e}")

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(len(problems))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=600)
    assert not any(t.is_alive() for t in threads), "a worker thread hung"
    assert not errors, "\n".join(errors)


# ------------------------------------------------------------------------------------------------
# Repeated calls: no memory growth
# ------------------------------------------------------------------------------------------------


def rss_bytes() -> int:
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return -1


def settled_memory_allocated() -> int:
    """torch.cuda.memory_allocated() once it has stopped changing (synchronize, collect, then up to
    0.5 s of polling). The autograd engine's device thread can still hold the last backward's input
    buffers for a moment after torch.autograd.grad has returned to Python (seen on the H100: the
    previous call's dk and dv, exactly, were still allocated when the baseline was read, and
    freed later, so the count went *down* over the run): a leak shows as growth after settling,
    a straggling free does not."""
    torch.cuda.synchronize()
    gc.collect()
    prev = torch.cuda.memory_allocated()
    stable = 0
    for _ in range(250):
        time.sleep(0.002)
        cur = torch.cuda.memory_allocated()
        stable = stable + 1 if cur == prev else 0
        if stable >= 3:
            break
        prev = cur
    return torch.cuda.memory_allocated()


def assert_no_memory_growth(step: Callable[[], None]) -> None:
    """10**4 calls of ``step`` (after 20 warm-up calls): memory_allocated returns to its starting
    value, the peak after 10**4 calls equals the peak after the first 100, the reserved pool does not
    grow, and the host resident set grows by less than 64 MiB (a per-call host leak of ~6 KiB would
    exceed it)."""
    for _ in range(20):
        step()
    base = settled_memory_allocated()
    torch.cuda.reset_peak_memory_stats()
    for _ in range(100):
        step()
    torch.cuda.synchronize()
    peak_100 = torch.cuda.max_memory_allocated()
    reserved_100 = torch.cuda.memory_reserved()
    rss_100 = rss_bytes()
    for i in range(10 ** 4 - 100):
        step()
        if i % 1000 == 0:
            torch.cuda.synchronize()  # keep the host from queueing thousands of launches
    after = settled_memory_allocated()
    peak = torch.cuda.max_memory_allocated()
    reserved = torch.cuda.memory_reserved()
    rss = rss_bytes()
    report = (f"allocated {base} -> {after}, peak after 100 calls {peak_100}, after 10**4 {peak}, "
              f"reserved {reserved_100} -> {reserved}, rss {rss_100} -> {rss}")
    assert after == base, report
    assert peak == peak_100, report
    assert reserved <= reserved_100, report
    if rss_100 > 0 and rss > 0:
        assert rss - rss_100 < (64 << 20), report


def assert_no_inference_memory_growth(call: Callable[[], object]) -> None:
    """10**4 calls of ``call`` under no_grad (after 20 warm-up calls): memory_allocated returns to
    its starting value and the peak after 10**4 calls equals the peak after the first 100."""
    with torch.no_grad():
        for _ in range(20):
            call()
        torch.cuda.synchronize()
        base = torch.cuda.memory_allocated()
        torch.cuda.reset_peak_memory_stats()
        for i in range(10 ** 4):
            out = call()
            del out
            if i == 99:
                torch.cuda.synchronize()
                peak_100 = torch.cuda.max_memory_allocated()
        torch.cuda.synchronize()
    assert torch.cuda.memory_allocated() == base
    assert torch.cuda.max_memory_allocated() == peak_100
