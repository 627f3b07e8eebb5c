"""Session 34: GPU time of one op fwd+bwd step (CUDA graph, median of 200 replays), bf16, at the
window sizes whose last 64-query block is narrow (N = 100, 196, 225, 81) besides the benchmark's
configs: the key side's narrow last query block (kTailQ 48, 16, 48, 32). Run once per build.

    python benchmarks/results/session34/step_graph_more.py LABEL
"""
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", ".."))
import bench_window_attention as bw  # noqa: E402

label = sys.argv[1] if len(sys.argv) > 1 else "build"
for cfg in [bw.Config(1024, 4, 100, 32, 16, 10, "v2"), bw.Config(256, 6, 196, 32, 4, 14, "v2"),
            bw.Config(256, 4, 225, 32, 4, 15, "v2"), bw.Config(1024, 4, 81, 32, 16, 9, "v2")]:
    inp = bw.make_inputs(cfg, torch.bfloat16)
    a = (inp["q"], inp["k"], inp["v"], inp["bias"], inp["mask"], inp["logit_scale"])
    leaves = bw.grad_leaves(inp)

    def step():
        out = bw.impl_ours(*a)
        return torch.autograd.grad(out, leaves, inp["dout"])

    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            step()
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        step()
    for _ in range(10):
        g.replay()
    torch.cuda.synchronize()
    times = []
    for _ in range(200):
        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        e0.record()
        g.replay()
        e1.record()
        e1.synchronize()
        times.append(e0.elapsed_time(e1) * 1000)
    times.sort()
    print(f"{label:8s} {cfg.name:28s} fwd+bwd step (graph) {times[len(times) // 2]:8.1f} us", flush=True)
