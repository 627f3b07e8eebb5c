"""Session 33: GPU time of one op fwd+bwd step, captured in a CUDA graph (no host time in it) and
replayed: the median of 200 replays' CUDA-event times, at bench configs (default 1, 2, 3, 4),
bf16. Run once per setting of an environment switch (read once per process).

    python benchmarks/results/session33/step_graph_ab.py LABEL [config ...]
"""
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", ".."))
import bench_window_attention as bw  # noqa: E402


def graph_step_us(cfg, dtype=torch.bfloat16) -> float:
    """Median CUDA-event time (us) of 200 replays of one op fwd+bwd step at ``cfg``, captured in a
    CUDA graph after 3 warm-up steps on a side stream."""
    inp = bw.make_inputs(cfg, dtype)
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
    return times[len(times) // 2]


if __name__ == "__main__":
    args = sys.argv[1:]
    label = args.pop(0) if args else "form"
    idx = [int(a) for a in args] or [1, 2, 3, 4]
    for ci in idx:
        cfg = bw.CONFIGS[ci]
        print(f"{label:8s} {cfg.name:28s} fwd+bwd step (graph) {graph_step_us(cfg):8.1f} us", flush=True)
