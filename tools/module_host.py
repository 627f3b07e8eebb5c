"""Host time of one attention layer's training forward + backward (developer tool, CUDA): a timm
Swin V2 WindowAttention as it is, swapped (flash_window_attn.WindowAttention.from_timm) and as the
benchmark's ceiling (attention core removed), on a problem small enough that the host issue time
is the whole step (a few windows), bf16 autocast. Prints the host issue time per iteration
(back-to-back, no sync) of each, then torch.profiler's CPU operators of the swapped layer and the
Python functions (cProfile) that take its host time.

    python tools/module_host.py [--windows 4] [--window 16] [--dim 96] [--heads 3] [--iters 300]
"""
import argparse
import cProfile
import os
import pstats
import sys
import time

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "benchmarks"))


def host_issue_us(step, iters: int, warmup: int = 30):
    """(host issue, wall) time of ``step`` in us per call: ``warmup`` calls and a synchronize, then
    ``iters`` back-to-back calls timed before (host issue: the GPU keeps up, so a host-bound loop
    measures the host) and after the final synchronize (wall)."""
    for _ in range(warmup):
        step()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(iters):
        step()
    t1 = time.perf_counter()
    torch.cuda.synchronize()
    t2 = time.perf_counter()
    return 1e6 * (t1 - t0) / iters, 1e6 * (t2 - t0) / iters


def build(kind, args):
    from timm.models.swin_transformer_v2 import WindowAttention as TimmWA

    torch.manual_seed(0)
    m = TimmWA(dim=args.dim, window_size=(args.window, args.window), num_heads=args.heads).cuda().train()
    if kind == "swap":
        import flash_window_attn

        m = flash_window_attn.WindowAttention.from_timm(m)
    elif kind == "ceiling":
        from _model_variants import apply_ceiling

        holder = torch.nn.Sequential(m)
        apply_ceiling(holder)
    return m


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--windows", type=int, default=4)
    ap.add_argument("--window", type=int, default=16)
    ap.add_argument("--dim", type=int, default=96)
    ap.add_argument("--heads", type=int, default=3)
    ap.add_argument("--iters", type=int, default=300)
    args = ap.parse_args()
    n = args.window * args.window
    x = torch.randn(args.windows, n, args.dim, device="cuda", requires_grad=True)
    mask = torch.zeros(args.windows, n, n, device="cuda")
    mask[:, :, n // 2:] = -100.0
    steps = {}
    for kind in ("timm", "swap", "ceiling"):
        m = build(kind, args)

        def step(m=m):
            with torch.autocast("cuda", dtype=torch.bfloat16):
                y = m(x, mask)
            y.float().sum().backward()

        steps[kind] = step
    for rnd in range(2):
        for kind, step in steps.items():
            host, wall = host_issue_us(step, args.iters)
            print(f"round {rnd} {kind:8s} host issue {host:7.1f} us/iter, wall {wall:7.1f} us/iter")
    step = steps["swap"]
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        for _ in range(20):
            step()
        torch.cuda.synchronize()
    print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=40, max_name_column_width=70))
    pr = cProfile.Profile()
    pr.enable()
    for _ in range(200):
        step()
    pr.disable()
    torch.cuda.synchronize()
    pstats.Stats(pr).sort_stats("tottime").print_stats(30)


if __name__ == "__main__":
    main()
