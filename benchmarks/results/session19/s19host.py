"""Host vs device time of one bench config (s19host.py LABEL CONFIG_INDEX): wall per iteration of
fwd (no grad), fwd (grad), fwd+bwd, and the profiler's top CPU ops for fwd+bwd."""
import os, sys, time
import torch
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "benchmarks"))
import bench_window_attention as bw
label, ci = sys.argv[1], int(sys.argv[2])
cfg = bw.CONFIGS[ci]
inp = bw.make_inputs(cfg, torch.bfloat16)
a = (inp["q"], inp["k"], inp["v"], inp["bias"], inp["mask"], inp["logit_scale"])
leaves = bw.grad_leaves(inp)
def f_ng():
    with torch.no_grad(): bw.impl_ours(*a)
def f_g():
    bw.impl_ours(*a)
def fb():
    out = bw.impl_ours(*a)
    torch.autograd.grad(out, leaves, inp["dout"])
for name, fn in (("fwd-nograd", f_ng), ("fwd-grad", f_g), ("fwd+bwd", fb)):
    for _ in range(20): fn()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(200): fn()
    t1 = time.perf_counter()
    torch.cuda.synchronize()
    t2 = time.perf_counter()
    print(f"[{label}] {cfg.name} {name:10s} host issue {1e3*(t1-t0)/200:.4f} ms/it, wall {1e3*(t2-t0)/200:.4f} ms/it", flush=True)
from torch.profiler import profile, ProfilerActivity
with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
    for _ in range(50): fb()
    torch.cuda.synchronize()
print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=14, max_name_column_width=60))
