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
    for _ in range(warmup):
        step()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(iters):
            step()
        torch.cuda.synchronize()
    per: Dict[str, float] = collections.OrderedDict()
    calls: Dict[str, int] = collections.Counter()
    for ev in prof.events():
        if ev.device_type == torch.autograd.DeviceType.CUDA:
            name = rename(ev.name)
            per[name] = per.get(name, 0.0) + ev.device_time / iters
            calls[name] += 1
    return per, {k: v // iters for k, v in calls.items()}
