import sys, torch, flash_window_attn as fwa
sys.path.insert(0, "benchmarks"); sys.path.insert(0, "tools")
import bench_window_attention as bw
from _kernel_times import gpu_time_by_kernel
cfg = bw.Config(1024, 4, 100, 32, 16, 10, "v2")
inp = bw.make_inputs(cfg, torch.bfloat16)
a = (inp["q"], inp["k"], inp["v"], inp["bias"], inp["mask"], inp["logit_scale"])
def step():
    out = bw.impl_ours(*a)
    torch.autograd.grad(out, bw.grad_leaves(inp), inp["dout"])
per, _ = gpu_time_by_kernel(step, 20, lambda n: n.split("<")[0].split("(")[0][-40:])
for k, v in sorted(per.items(), key=lambda kv: -kv[1]): print(f"{v / 1000:8.3f} ms  {k}")
