"""Session 48: the CUDA kernels of the window op's fwd+bwd step (torch.profiler, 20 steps after
warm-up), average time per step of each, bf16, at specs B,H,N,d,nW,window,version (graph_ab.py's).

    python benchmarks/results/session48/prof_specs.py LABEL SPEC ...
"""
import os
import sys

import torch
from torch.profiler import ProfilerActivity, profile

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", ".."))
sys.path.insert(0, os.path.join(here, "..", "session36"))
import bench_window_attention as bw  # noqa: E402
from graph_ab import parse  # noqa: E402

label, specs = sys.argv[1], sys.argv[2:]
for spec in specs:
    cfg = parse(spec)
    inp = bw.make_inputs(cfg, torch.bfloat16)
    a = (inp["q"], inp["k"], inp["v"], inp["bias"], inp["mask"], inp["logit_scale"])
    leaves = bw.grad_leaves(inp)

    def step():
        out = bw.impl_ours(*a)
        torch.autograd.grad(out, leaves, inp["dout"])

    for _ in range(10):
        step()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(20):
            step()
        torch.cuda.synchronize()
    tot = 0.0
    for ev in prof.key_averages():
        if ev.device_time_total > 0:
            t = ev.device_time_total / 20
            tot += t
            name = ev.key.replace("void fwa::", "").split("(")[0][:60]
            print(f"{label} {cfg.name}: {name:60s} {t:8.1f} us/step", flush=True)
    print(f"{label} {cfg.name}: {'sum of kernel times':60s} {tot:8.1f} us/step", flush=True)
