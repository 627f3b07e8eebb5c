"""Where a model step's GPU time goes when the step runs as one CUDA graph (developer tool): the
step of tools/model_profile.py (bench_models.py's construction, bf16 autocast, its cast cache off
as capture needs) captured once and replayed under torch.profiler, each replay after a 256 MiB L2
flush, as bench_models.py's GPU-time figure. Per replay: its span (first kernel start -> last
kernel end), the kernels' busy time (their union) and the idle time between them; then the idle
time by the kernel that ends it (the gap before a launch: launch latency, a programmatic
dependent's wait, a memset node) and the kernels' time by name, medians over the replays; then
every kernel of this package.

    python tools/graph_step_timeline.py [--model swinv2_tiny_window16_256] [--batch 64]
        [--variants swap,ceiling] [--mode train|infer] [--replays 10] [--top 25]
"""
import argparse
import collections
import os
import statistics
import sys

import torch
from torch.profiler import ProfilerActivity, profile

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, here)
sys.path.insert(0, os.path.join(here, "..", "benchmarks"))
import _bench_common  # noqa: E402
from model_profile import add_step_args, short, variant_step  # noqa: E402

FLUSH_NAME = "FillFunctor<signed char>"   # the flush's zero_ of an int8 buffer (the model has none)


def replays(events):
    """The profiled kernels split into replays at each flush (the flushes themselves dropped)."""
    out, cur = [], None
    for e in sorted(events, key=lambda e: e.time_range.start):
        if FLUSH_NAME in e.name:
            cur = []
            out.append(cur)
        elif cur is not None:
            cur.append(e)
    return [r for r in out if r]


def analyse(rep):
    """(span, busy, idle by the next kernel's name, time by name) of one replay, in us."""
    t0 = rep[0].time_range.start
    end = t0
    busy = 0.0
    idle = collections.Counter()
    per = collections.Counter()
    for e in rep:
        a, b = e.time_range.start, e.time_range.end
        name = short(e.name)
        per[name] += b - a
        if a > end:
            idle[name] += a - end
        if b > end:
            busy += b - max(a, end)
            end = b
    return end - t0, busy, idle, per


def main() -> None:
    ap = argparse.ArgumentParser()
    add_step_args(ap, "swap,ceiling")
    ap.add_argument("--replays", type=int, default=10)
    ap.add_argument("--top", type=int, default=25)
    args = ap.parse_args()
    dev = torch.device("cuda")
    flush = torch.empty(256 << 20, dtype=torch.int8, device=dev)
    for key in args.variants.split(","):
        step, keep = variant_step(args.model, key, args.batch, args.mode, dev, amp_cache=False)
        graph, out = _bench_common.cuda_graph_capture(step)
        for _ in range(3):
            flush.zero_()
            graph.replay()
        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            for _ in range(args.replays):
                flush.zero_()
                graph.replay()
            torch.cuda.synchronize()
        reps = replays(e for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA)
        res = [analyse(r) for r in reps]
        if not res:
            print(f"== {key}: no replay found in the profile")
            continue
        med = statistics.median
        span, busy = med(r[0] for r in res), med(r[1] for r in res)
        names = set().union(*(r[2].keys() for r in res)) | set().union(*(r[3].keys() for r in res))
        idle = {n: med(r[2].get(n, 0.0) for r in res) for n in names}
        per = {n: med(r[3].get(n, 0.0) for r in res) for n in names}
        ours = sum(t for n, t in per.items() if n.startswith("fwa::"))
        ours_idle = sum(t for n, t in idle.items() if n.startswith("fwa::"))
        print(f"\n== {args.model} bs{args.batch} {key} {args.mode} (CUDA graph, {len(res)} replays): span "
              f"{span / 1e3:.3f} ms, busy {busy / 1e3:.3f} ms, idle {(span - busy) / 1e3:.3f} ms "
              f"({med(len(r) for r in reps)} kernels per replay); flash_window_attn kernels "
              f"{ours / 1e3:.3f} ms, idle before them {ours_idle / 1e3:.3f} ms")
        print("  idle before (us per step, by the kernel that ends the gap):")
        for n, t in sorted(idle.items(), key=lambda kv: -kv[1])[: args.top]:
            print(f"    {t:8.1f}  {n}")
        print("  kernel time (ms per step):")
        for n, t in sorted(per.items(), key=lambda kv: -kv[1])[: args.top]:
            print(f"    {t / 1e3:8.3f}  {n}")
        print("  this package's kernels (ms per step, idle before them in us):")
        for n, t in sorted(((n, t) for n, t in per.items() if n.startswith("fwa::")), key=lambda kv: -kv[1]):
            print(f"    {t / 1e3:8.3f}  {idle.get(n, 0.0):7.1f}  {n}")
        graph = out = step = keep = None
        torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
