"""One sliding-window fwd+bwd of a bench config (for ncu): s21lfb.py CONFIG_INDEX [dtype]."""
import sys

import torch

sys.path.insert(0, "benchmarks")
import bench_sliding_window as bs  # noqa: E402
import flash_window_attn  # noqa: E402

bs.fwa = flash_window_attn
cfg = bs.CONFIGS[int(sys.argv[1])]
dt = torch.float16 if len(sys.argv) > 2 and sys.argv[2] == "fp16" else torch.bfloat16
inp = bs.make_inputs(cfg, dt, "cuda")
fn = bs.impl_ours(cfg)
out = fn(inp["q"], inp["k"], inp["v"])
torch.autograd.grad(out, (inp["q"], inp["k"], inp["v"]), inp["dout"])
torch.cuda.synchronize()
print("ok")
