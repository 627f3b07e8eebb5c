"""Session 40: where the host time of one window-attention fwd+bwd goes (the benchmark's host-bound
fwd+bwd cells: (256, 12, 64) bf16 0.457 ms against ~95 us of GPU time, session 38). Per config:
the host's issue time per fwd+bwd (200 iterations timed before the final synchronize; the GPU keeps
up, so the loop is host-bound), the GPU time per iteration, then cProfile's top functions by their
own time and torch.profiler's CPU ops by self time.

    python benchmarks/results/session40/host_profile.py [CONFIG ...]   (bench_window_attention indices)
"""
import cProfile
import os
import pstats
import sys

import torch
from torch.profiler import ProfilerActivity, profile

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", ".."))
sys.path.insert(0, os.path.join(here, "..", "..", "..", "tools"))
import bench_window_attention as bw  # noqa: E402
from module_host import host_issue_us  # noqa: E402


def main():
    for spec in sys.argv[1:] or ["6"]:
        cfg = bw.CONFIGS[int(spec)]
        inp = bw.make_inputs(cfg, torch.bfloat16)
        a = (inp["q"], inp["k"], inp["v"], inp["bias"], inp["mask"], inp["logit_scale"])
        leaves = bw.grad_leaves(inp)

        def step():
            out = bw.impl_ours(*a)
            return torch.autograd.grad(out, leaves, inp["dout"])

        host, wall = host_issue_us(step, 200)
        print(f"== config {spec} {cfg.name} bf16: host issue {host:.1f} us per fwd+bwd, wall {wall:.1f} us")
        pr = cProfile.Profile()
        pr.enable()
        for _ in range(100):
            step()
        pr.disable()
        torch.cuda.synchronize()
        st = pstats.Stats(pr)
        st.sort_stats("tottime").print_stats(18)
        with profile(activities=[ProfilerActivity.CPU]) as prof:
            for _ in range(50):
                step()
            torch.cuda.synchronize()
        print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=22))


if __name__ == "__main__":
    main()
