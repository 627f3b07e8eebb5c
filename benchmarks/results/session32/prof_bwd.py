"""Session 32: the CUDA kernels of the op's forward + backward (torch.profiler, 20 calls after
warm-up), average time per call of each, at bench config 3 (N = 144), fp16 and bf16."""
import os
import sys

import torch
from torch.profiler import ProfilerActivity, profile

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", ".."))
import bench_window_attention as bw  # noqa: E402

for dt in (torch.float16, torch.bfloat16):
    cfg = bw.CONFIGS[3]
    inp = bw.make_inputs(cfg, dt)
    a = (inp["q"], inp["k"], inp["v"], inp["bias"], inp["mask"], inp["logit_scale"])
    leaves = [inp["q"], inp["k"], inp["v"], inp["bias"], inp["logit_scale"]]

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
    for ev in prof.key_averages():
        if ev.device_time_total > 0:
            print(f"{cfg.name} {str(dt)[6:]}: {ev.key[:80]:80s} {ev.device_time_total / 20:8.1f} us/call", flush=True)
