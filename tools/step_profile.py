"""Host vs GPU of a timm Swin model step (developer tool, CUDA): per variant of
benchmarks/bench_models.py, the wall time per step (3 passes of 10 steps, one sync each) next to
the time the host takes to issue them (equal: the step is host-bound), the GPU time per step and
the launch / memset / memcpy API calls per step (torch.profiler over 3 steps), and the kernels by
launches per step. Batch 64, the model's input size, bf16 autocast, SGD, as the benchmark.

    python tools/step_profile.py VARIANTS [MODEL] [train|infer]
        VARIANTS: comma-separated keys of bench_models.VARIANT_BY_KEY (swap, swap_compile,
        ceiling, ceiling_compile, eager, compile); MODEL default swinv2_tiny_window16_256

Environment switches it was used with (benchmarks/NOTES.md, session 13): FWA_CPB_ATEN=1 (the
position-bias op's ATen implementation instead of its fused CUDA kernels), FWA_CPB_OP_UNDER_COMPILE=0
(the plain-op MLP under torch.compile)."""
import collections
import os
import sys
import time

import torch

if len(sys.argv) < 2:
    sys.exit(__doc__)
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from model_profile import variant_step  # noqa: E402  (also puts benchmarks/ on sys.path)
from torch.profiler import profile, ProfilerActivity  # noqa: E402

dev = torch.device("cuda")
name = sys.argv[2] if len(sys.argv) > 2 else "swinv2_tiny_window16_256"
mode = sys.argv[3] if len(sys.argv) > 3 else "train"
for key in sys.argv[1].split(","):
    step, keep = variant_step(name, key, 64, mode, dev)
    t0 = time.perf_counter()
    for _ in range(5): step()
    torch.cuda.synchronize()
    warm = time.perf_counter() - t0
    walls = []
    for rep in range(3):
        t = time.perf_counter()
        for _ in range(10): step()
        t_host = time.perf_counter() - t
        torch.cuda.synchronize(); walls.append(((time.perf_counter() - t) / 10 * 1e3, t_host / 10 * 1e3))
    print(f"\n=== {key} {mode}: warm-up {warm:.0f} s; wall ms/step (total, host issue) "
          f"{[(round(a, 2), round(b, 2)) for a, b in walls]}", flush=True)
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        for _ in range(3): step()
        torch.cuda.synchronize()
    ka = prof.key_averages()
    gpu = sum(e.self_device_time_total for e in ka if e.self_device_time_total > 0) / 3 / 1e3
    launches = sum(e.count for e in ka if e.key in ("cudaLaunchKernel", "cuLaunchKernel", "cuLaunchKernelEx",
                                                     "cudaLaunchKernelExC", "cudaMemsetAsync", "cudaMemcpyAsync")) / 3
    print(f"GPU time/step {gpu:.2f} ms, launch+memset+memcpy API calls/step {launches:.0f}")
    kern = collections.Counter()
    for e in prof.events():
        if e.device_type == torch.autograd.DeviceType.CUDA: kern[e.name[:70]] += 1
    print("kernels by launches per step:", sum(kern.values()) / 3)
    for n, c in kern.most_common(25): print(f"  {c/3:6.1f}  {n}")
    step = keep = None; torch.cuda.empty_cache()
