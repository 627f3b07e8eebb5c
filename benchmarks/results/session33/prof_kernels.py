"""Session 33: the CUDA kernels of the op's forward + backward (torch.profiler, 20 steps after
warm-up), average time per step of each, at the benchmark's configs given on the command line
(indices into bench_window_attention.CONFIGS; default 1, 2, 3, 4; or, since session 48, specs
B,H,N,d,nW,window,version as session36/graph_ab.py takes), bf16 (fp16 with --fp16).

    python benchmarks/results/session33/prof_kernels.py LABEL [--fp16] [config | spec ...]
"""
import os
import sys

import torch
from torch.profiler import ProfilerActivity, profile

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", ".."))
sys.path.insert(0, os.path.join(here, "..", "session36"))
import bench_window_attention as bw  # noqa: E402
from graph_ab import parse  # noqa: E402  (a config index or a spec)

args = sys.argv[1:]
label = args.pop(0) if args else "build"
dt = torch.float16 if "--fp16" in args else torch.bfloat16
specs = [a for a in args if not a.startswith("--")] or ["1", "2", "3", "4"]
for spec in specs:
    cfg = parse(spec)
    inp = bw.make_inputs(cfg, dt)
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
            name = ev.key.replace("void fwa::", "").split("(")[0][:70]
            print(f"{label} {cfg.name} {str(dt)[6:]}: {name:70s} {t:8.1f} us/step", flush=True)
    print(f"{label} {cfg.name} {str(dt)[6:]}: {'sum of kernel times':70s} {tot:8.1f} us/step", flush=True)
