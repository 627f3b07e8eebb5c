"""Where a model step leaves the GPU idle (developer tool, CUDA): torch.profiler (CUDA activity
only) over back-to-back steps of a timm Swin variant of benchmarks/bench_models.py, the GPU busy
time, the span and the idle gaps between kernels per step, summed by the kernel that ended before
the gap and by the one that started after it (an idle GPU waits for the host: the kernel after a
gap is the one the host issued late).

    python tools/model_gaps.py [--model swinv2_tiny_window16_256] [--variants swap,ceiling]
        [--mode train|infer] [--steps 5] [--gap 2] [--top 25]
"""
import argparse
import collections
import os
import sys

import torch
from torch.profiler import ProfilerActivity, profile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from model_profile import add_step_args, short, variant_step  # noqa: E402  (also puts benchmarks/ on sys.path)


def main() -> None:
    ap = argparse.ArgumentParser()
    add_step_args(ap, "swap,ceiling")
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--gap", type=float, default=2.0, help="idle gaps shorter than this (us) are ignored")
    ap.add_argument("--top", type=int, default=25)
    args = ap.parse_args()
    dev = torch.device("cuda")
    for key in args.variants.split(","):
        step, keep = variant_step(args.model, key, args.batch, args.mode, dev)
        for _ in range(5):
            step()
        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            for _ in range(args.steps):
                step()
            torch.cuda.synchronize()
        evs = sorted(((ev.time_range.start, ev.time_range.end, short(ev.name)) for ev in prof.events()
                      if ev.device_type == torch.autograd.DeviceType.CUDA), key=lambda t: t[0])
        busy = sum(e - s for s, e, _ in evs)
        span = evs[-1][1] - evs[0][0]
        before, after, total = collections.Counter(), collections.Counter(), 0.0
        count = collections.Counter()
        end, prev = evs[0][1], evs[0][2]
        for s, e, n in evs[1:]:
            g = s - end
            if g > args.gap:
                before[n] += g
                after[prev] += g
                count[n] += 1
                total += g
            if e > end:
                end, prev = e, n
        k = args.steps
        print(f"\n== {args.model} bs{args.batch} {key} {args.mode}: per step span {span / k / 1e3:.2f} ms, "
              f"GPU busy {busy / k / 1e3:.2f} ms, idle in gaps > {args.gap:g} us {total / k / 1e3:.2f} ms "
              f"({sum(count.values()) / k:.0f} gaps)")
        print("  idle before (the kernel issued late):")
        for n, g in before.most_common(args.top):
            print(f"    {g / k:8.1f} us  x{count[n] / k:<5.1f} {n}")
        print("  idle after:")
        for n, g in after.most_common(args.top):
            print(f"    {g / k:8.1f} us  {n}")
        step = keep = None
        torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
