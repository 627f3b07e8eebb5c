"""Session 46: one fwd+bwd of the sliding-window op at a bench_sliding_window config (for ncu).

    python benchmarks/results/session46/ncu_local.py CONFIG DTYPE
"""
import os
import sys

import torch

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", ".."))
import bench_sliding_window as bs  # noqa: E402
import flash_window_attn  # noqa: E402

bs.fwa = flash_window_attn
cfg = bs.CONFIGS[int(sys.argv[1])]
dt = {"fp16": torch.float16, "bf16": torch.bfloat16}[sys.argv[2]]
inp = bs.make_inputs(cfg, dt, "cuda")
fn = bs.impl_ours(cfg)
torch.autograd.grad(fn(inp["q"], inp["k"], inp["v"]), (inp["q"], inp["k"], inp["v"]), inp["dout"])
torch.cuda.synchronize()
