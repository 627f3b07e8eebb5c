"""Session 29: where the host time of a window16 model step goes (torch.profiler CPU operators by
self CPU time per step, with counts), for the given variants and mode: the compiled swapped model
issued ~8.6 ms more per training step than the compiled ceiling on run J's host.

    python benchmarks/results/session29/host_ops.py swap_compile,ceiling_compile [train|infer]"""
import os
import sys
import time

import torch
from torch.profiler import ProfilerActivity, profile

sys.path.insert(0, os.path.join(os.getcwd(), "tools"))
from model_profile import variant_step  # noqa: E402

dev = torch.device("cuda")
mode = sys.argv[2] if len(sys.argv) > 2 else "train"
for key in sys.argv[1].split(","):
    step, keep = variant_step("swinv2_tiny_window16_256", key, 64, mode, dev)
    for _ in range(5): step()
    torch.cuda.synchronize()
    t = time.perf_counter()
    for _ in range(10): step()
    host = (time.perf_counter() - t) / 10 * 1e3
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        for _ in range(3): step()
        torch.cuda.synchronize()
    ka = sorted(prof.key_averages(), key=lambda e: -e.self_cpu_time_total)
    tot = sum(e.self_cpu_time_total for e in ka) / 3 / 1e3
    print(f"\n=== {key} {mode}: host issue {host:.2f} ms/step; profiled self CPU {tot:.2f} ms/step")
    for e in ka[:30]:
        print(f"  {e.self_cpu_time_total / 3 / 1e3:7.3f} ms  x{e.count / 3:6.1f}  {e.key[:90]}")
    step = keep = None
    torch.cuda.empty_cache()
