"""Where a sliding-window fwd+bwd step's event time goes beyond its kernels (developer tool, CUDA).

For each benchmark config and implementation: the benchmark's event-timed median (L2 flushed
before each run, as bench_sliding_window.py), the same without the flush, and under torch.profiler
(each step alone, synchronised before and after) the GPU busy time (sum of kernel and memset
times), the span from the first kernel's start to the last one's end, and the idle gaps inside
that span longer than --gap us with the activities on either side.

    python tools/step_gaps.py [--configs 2,4] [--impls ours,flex] [--dtype bf16] [--gap 3]
"""
import argparse
import os
import statistics
import sys

import torch
from torch.profiler import ProfilerActivity, profile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from local_breakdown import config_steps, short  # noqa: E402  (puts benchmarks/ on sys.path)
from _bench_common import cuda_bench_ms, cuda_event_median_ms  # noqa: E402


def profile_steps(step, iters: int, gap_us: float):
    for _ in range(3):
        step()
    torch.cuda.synchronize()
    spans, busies, gaps = [], [], []
    for _ in range(iters):
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            step()
            torch.cuda.synchronize()
        evs = sorted(((ev.time_range.start, ev.time_range.end, short(ev.name)) for ev in prof.events()
                      if ev.device_type == torch.autograd.DeviceType.CUDA), key=lambda t: t[0])
        if not evs:
            continue
        spans.append(evs[-1][1] - evs[0][0])
        busies.append(sum(e - s for s, e, _ in evs))
        step_gaps = []
        end, prev = evs[0][1], evs[0][2]
        for s, e, n in evs[1:]:
            if s - end > gap_us:
                step_gaps.append((s - end, prev, n))
            if e > end:
                end, prev = e, n
        gaps.append(step_gaps)
    return statistics.median(spans) / 1e3, statistics.median(busies) / 1e3, gaps


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--configs", default="2,4")
    ap.add_argument("--dtype", default="bf16", choices=["fp16", "bf16"])
    ap.add_argument("--impls", default="ours,flex")
    ap.add_argument("--iters", type=int, default=7)
    ap.add_argument("--gap", type=float, default=3.0)
    args = ap.parse_args()
    for i, cfg, name, fwd, step in config_steps(args.configs, args.impls, args.dtype):
        bench = cuda_bench_ms(step, 10, 60, 30)
        bench_f = cuda_bench_ms(fwd, 10, 60, 30)
        plain = cuda_event_median_ms(step, args.iters * 3, flush_l2=False, warmup=3)
        span, busy, gaps = profile_steps(step, args.iters, args.gap)
        print(f"== config {i} {cfg.name} {args.dtype} {name}: fwd bench {bench_f:.3f} ms | fwd+bwd bench "
              f"{bench:.3f} ms, events no flush {plain:.3f}, profiled span {span:.3f}, GPU busy {busy:.3f}")
        for g in gaps[len(gaps) // 2]:
            print(f"      gap {g[0]:7.1f} us  after {g[1]}  before {g[2]}")


if __name__ == "__main__":
    main()
