"""Host time of the sliding-window op's fwd+bwd on a benchmark config (developer tool, CUDA): the
wall time per step of back-to-back steps (no sync between them: for a small problem this is the
host's issue time), the GPU time per step, and torch.profiler's CPU operators and CUDA API calls
by self CPU time.

    python tools/host_profile_local.py [--config 1] [--impl ours] [--dtype bf16] [--steps 200]
"""
import argparse
import os
import sys
import time

import torch
from torch.profiler import ProfilerActivity, profile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from local_breakdown import config_steps  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--config", type=int, default=1)
    ap.add_argument("--impl", default="ours")
    ap.add_argument("--dtype", default="bf16", choices=["fp16", "bf16"])
    ap.add_argument("--steps", type=int, default=200)
    args = ap.parse_args()
    for _, cfg, _, _, step in config_steps(str(args.config), args.impl, args.dtype):
        run(args, cfg, step)


def run(args, cfg, step) -> None:
    for _ in range(20):
        step()
    torch.cuda.synchronize()
    for label in ("pass 1", "pass 2", "pass 3"):
        t0 = time.perf_counter()
        for _ in range(args.steps):
            step()
        t1 = time.perf_counter()
        torch.cuda.synchronize()
        t2 = time.perf_counter()
        print(f"{label}: host issue {1e6 * (t1 - t0) / args.steps:.1f} us/step, wall {1e6 * (t2 - t0) / args.steps:.1f} us/step")
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        for _ in range(10):
            step()
        torch.cuda.synchronize()
    gpu = sum(e.device_time for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA) / 10
    print(f"== config {args.config} {cfg.name} {args.dtype} {args.impl}: GPU {gpu:.1f} us per step")
    print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=30, max_name_column_width=60))


if __name__ == "__main__":
    main()
