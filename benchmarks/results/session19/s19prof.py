"""Per-kernel CUDA time of fwd+bwd for one bench config (s19prof.py LABEL CONFIG_INDEX [dtype])."""
import os, sys
import torch
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "benchmarks"))
import bench_window_attention as bw
label, ci = sys.argv[1], int(sys.argv[2])
dtype = torch.bfloat16 if (len(sys.argv) < 4 or sys.argv[3] == "bf16") else torch.float16
cfg = bw.CONFIGS[ci]
inp = bw.make_inputs(cfg, dtype)
a = (inp["q"], inp["k"], inp["v"], inp["bias"], inp["mask"], inp["logit_scale"])
def fb():
    out = bw.impl_ours(*a)
    out.backward(inp["dout"])
for _ in range(10): fb()
torch.cuda.synchronize()
from torch.profiler import profile, ProfilerActivity
with profile(activities=[ProfilerActivity.CUDA, ProfilerActivity.CPU]) as prof:
    for _ in range(20): fb()
    torch.cuda.synchronize()
tot = {}
for e in prof.events():
    if e.device_type == torch.autograd.DeviceType.CUDA:
        tot[e.name] = tot.get(e.name, 0.0) + e.device_time / 20
for n, t in sorted(tot.items(), key=lambda x: -x[1])[:10]:
    print(f"[{label}] {cfg.name} {t*1e-3:8.4f} ms  {n[:110]}", flush=True)
print(f"[{label}] fwd+bwd median {bw.bench_ms(fb, quick=True):.4f} ms", flush=True)
