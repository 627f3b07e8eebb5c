"""Session 32: host time of the op's forward + backward at bench config 3 (N = 144, bf16): host
issue time per call (no synchronisation, 200 calls back to back, after warm-up), the CUDA-event
median of the bench (L2 flushed), and the CPU operators by self CPU time (torch.profiler, 20 calls)."""
import os
import sys
import time

import torch
from torch.profiler import ProfilerActivity, profile

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", ".."))
import bench_window_attention as bw  # noqa: E402
from _bench_common import cuda_event_median_ms  # noqa: E402

cfg = bw.CONFIGS[3]
inp = bw.make_inputs(cfg, torch.bfloat16)
a = (inp["q"], inp["k"], inp["v"], inp["bias"], inp["mask"], inp["logit_scale"])
leaves = [inp["q"], inp["k"], inp["v"], inp["bias"], inp["logit_scale"]]


def step():
    out = bw.impl_ours(*a)
    torch.autograd.grad(out, leaves, inp["dout"])


for _ in range(20):
    step()
torch.cuda.synchronize()
for rnd in range(3):
    t0 = time.perf_counter()
    for _ in range(200):
        step()
    t1 = time.perf_counter()
    torch.cuda.synchronize()
    t2 = time.perf_counter()
    print(f"round {rnd}: host issue {1e3 * (t1 - t0) / 200:.3f} ms/call, wall {1e3 * (t2 - t0) / 200:.3f} ms/call")
print(f"bench median (L2 flushed): {cuda_event_median_ms(step, 100, flush_l2=True, warmup=10):.4f} ms")
with profile(activities=[ProfilerActivity.CPU]) as prof:
    for _ in range(20):
        step()
    torch.cuda.synchronize()
print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=25))
