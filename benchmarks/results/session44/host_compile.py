"""Session 44 run B: where the host time of a compiled swapped Swin step goes (developer script).

For each variant (bench_models keys) and mode: host issue time per step (10 steps, no sync inside),
then torch.profiler over 3 steps: CPU ops by self time per step, the kernels by launches per step
and the GPU time per step.

    python benchmarks/results/session44/host_compile.py swap_compile,ceiling_compile infer
"""
import collections
import os
import sys
import time

import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..", "tools"))
from model_profile import variant_step  # noqa: E402
from torch.profiler import ProfilerActivity, profile  # noqa: E402

dev = torch.device("cuda")
mode = sys.argv[2] if len(sys.argv) > 2 else "infer"
for key in sys.argv[1].split(","):
    step, keep = variant_step("swinv2_tiny_window16_256", key, 64, mode, dev)
    for _ in range(4):
        step()
    torch.cuda.synchronize()
    passes = []
    for _ in range(3):
        t = time.perf_counter()
        for _ in range(10):
            step()
        host = (time.perf_counter() - t) / 10 * 1e3
        torch.cuda.synchronize()
        passes.append((round((time.perf_counter() - t) / 10 * 1e3, 2), round(host, 2)))
    print(f"\n=== {key} {mode}: ms per step (wall, host issue) {passes}", flush=True)
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        for _ in range(3):
            step()
        torch.cuda.synchronize()
    ka = prof.key_averages()
    gpu = sum(e.self_device_time_total for e in ka if e.self_device_time_total > 0) / 3 / 1e3
    print(f"GPU time per step {gpu:.2f} ms")
    rows = sorted((e for e in ka if e.self_cpu_time_total > 0), key=lambda e: -e.self_cpu_time_total)
    print(f"{'CPU op':70} {'calls/step':>10} {'self us/step':>12} {'self us/call':>12} {'total us/call':>13}")
    for e in rows[:40]:
        print(f"{e.key[:70]:70} {e.count / 3:10.1f} {e.self_cpu_time_total / 3:12.1f} "
              f"{e.self_cpu_time_total / e.count:12.1f} {e.cpu_time_total / e.count:13.1f}")
    kern = collections.Counter()
    for ev in prof.events():
        if ev.device_type == torch.autograd.DeviceType.CUDA:
            kern[ev.name[:90]] += 1
    print("kernels per step:", sum(kern.values()) / 3)
    for n, c in kern.most_common(30):
        print(f"  {c / 3:6.1f}  {n}")
    step = keep = None
    torch.cuda.empty_cache()
