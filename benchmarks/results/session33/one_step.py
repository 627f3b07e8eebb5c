"""Session 33: one fwd+bwd step of the op at a benchmark config (for ncu): config index (default 1), bf16."""
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", ".."))
import bench_window_attention as bw  # noqa: E402

cfg = bw.CONFIGS[int(sys.argv[1]) if len(sys.argv) > 1 else 1]
inp = bw.make_inputs(cfg, torch.bfloat16)
a = (inp["q"], inp["k"], inp["v"], inp["bias"], inp["mask"], inp["logit_scale"])
for _ in range(3):
    out = bw.impl_ours(*a)
    torch.autograd.grad(out, bw.grad_leaves(inp), inp["dout"])
torch.cuda.synchronize()
