"""Session 35: the op's forward alone (bench_window_attention.op_forward_us: median of 300 CUDA-event
times, L2 flushed) where the row-tail kernel runs (last query block of <= 16 rows at Npad 128 / 192),
under the launch-order and chunking switches read once per process (FWA_WINDOW_ROW_TAIL_FIRST,
FWA_WINDOW_ROW_TAIL_SLOTS, FWA_WINDOW_ROW_TAIL): run once per setting."""
import os
import sys

import math

import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", ".."))
import bench_window_attention as bw  # noqa: E402

CFGS = [(bw.CONFIGS[3], (torch.float16, torch.bfloat16)),
        (bw.Config(2048, 4, 144, 32, 16, 12, "v2"), (torch.bfloat16,)),
        ]
tag = " ".join(f"{k[len('FWA_WINDOW_'):]}={os.environ[k]}" for k in
               ("FWA_WINDOW_ROW_TAIL_FIRST", "FWA_WINDOW_ROW_TAIL_SLOTS", "FWA_WINDOW_ROW_TAIL") if k in os.environ) or "default"
for cfg, dts in CFGS:
    for dt in dts:
        print(f"{tag:28s} {cfg.name:28s} {str(dt)[6:]:9s} fwd {bw.op_forward_us(cfg, dt):7.1f} us", flush=True)

# N = 80 (Npad 128, 16 rows in the last query block; not a square window: a random 0 / -100 mask)
from _bench_common import cuda_event_median_ms  # noqa: E402

import flash_window_attn as fwa  # noqa: E402

g = torch.Generator(device="cuda").manual_seed(0)
B, H, N = 2048, 4, 80
for dt in (torch.bfloat16,):
    q, k, v = (torch.randn(B, H, N, 32, generator=g, device="cuda", dtype=dt) for _ in range(3))
    bias = 16 * torch.sigmoid(torch.randn(H, N, N, generator=g, device="cuda"))
    mask = torch.where(torch.rand(4, N, N, generator=g, device="cuda") < 0.3, -100.0, 0.0)
    ls = torch.full((H, 1, 1), math.log(10.0), device="cuda")

    def fwd():
        with torch.no_grad():
            return fwa.window_attention(q, k, v, bias, mask, logit_scale=ls)

    print(f"{tag:28s} {'v2 B2048 H4 N80 d32 (mask 4)':28s} {str(dt)[6:]:9s} fwd {1000 * cuda_event_median_ms(fwd, 300, flush_l2=True, warmup=20):7.1f} us", flush=True)
