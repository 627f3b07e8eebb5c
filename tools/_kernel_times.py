"""GPU time per kernel of a callable (shared by tools/kernel_breakdown.py and tools/model_profile.py)."""
import collections
from typing import Callable, Dict, Tuple

import torch
from torch.profiler import ProfilerActivity, profile


def gpu_time_by_kernel(step: Callable[[], object], iters: int, rename: Callable[[str], str],
                       warmup: int = 5) -> Tuple[Dict[str, float], Dict[str, int]]:
    """Runs ``step`` ``warmup`` times, then ``iters`` times under torch.profiler (CUDA activity).
    Returns the mean CUDA time per iteration in us and the launches per iteration, both keyed by
    ``rename(kernel name)``."""
    per, calls, _ = kernel_times(step, iters, rename, warmup)
    return per, calls


def kernel_times(step: Callable[[], object], iters: int, rename: Callable[[str], str],
                 warmup: int = 5) -> Tuple[Dict[str, float], Dict[str, int], float]:
    """gpu_time_by_kernel's two tables and the GPU's busy time per iteration in us: the union of
    the kernels' intervals, where kernels that overlap (a programmatic dependent launch, streams)
    count once (their times' sum counts them twice)."""
    for _ in range(warmup):
        step()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(iters):
            step()
        torch.cuda.synchronize()
    per: Dict[str, float] = collections.OrderedDict()
    calls: Dict[str, int] = collections.Counter()
    spans = []
    for ev in prof.events():
        if ev.device_type == torch.autograd.DeviceType.CUDA:
            name = rename(ev.name)
            per[name] = per.get(name, 0.0) + ev.device_time / iters
            calls[name] += 1
            spans.append((ev.time_range.start, ev.time_range.end))
    busy, end = 0.0, float("-inf")
    for a, b in sorted(spans):
        if b > end:
            busy += b - max(a, end)
            end = b
    return per, {k: v // iters for k, v in calls.items()}, busy / iters
