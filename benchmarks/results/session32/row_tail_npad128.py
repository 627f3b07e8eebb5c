"""Session 32: the op's forward with and without the row-tail kernel (FWA_WINDOW_ROW_TAIL read once
per process: run once per setting) where N is not a square window: N = 72 and 80 (Npad 128, 8 and
16 rows in the last query block), 136 and 144 (Npad 192), V2 with an fp32 bias, a random 0 / -100
mask (nW = 4) and a logit scale, fp16 and bf16, CUDA-event medians of 300 runs, L2 flushed."""
import math
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", ".."))
from _bench_common import cuda_event_median_ms  # noqa: E402

import flash_window_attn as fwa  # noqa: E402

tag = os.environ.get("FWA_WINDOW_ROW_TAIL", "1")
g = torch.Generator(device="cuda").manual_seed(0)
for B, H, N in ((2048, 4, 72), (2048, 4, 80), (512, 4, 136), (512, 4, 144)):
    for dt in (torch.float16, torch.bfloat16):
        q, k, v = (torch.randn(B, H, N, 32, generator=g, device="cuda", dtype=dt) for _ in range(3))
        bias = 16 * torch.sigmoid(torch.randn(H, N, N, generator=g, device="cuda"))
        mask = torch.where(torch.rand(4, N, N, generator=g, device="cuda") < 0.3, -100.0, 0.0)
        ls = torch.full((H, 1, 1), math.log(10.0), device="cuda")

        def fwd():
            with torch.no_grad():
                return fwa.window_attention(q, k, v, bias, mask, logit_scale=ls)

        ms = cuda_event_median_ms(fwd, 300, flush_l2=True, warmup=20)
        print(f"ROW_TAIL={tag} B{B} H{H} N{N} {str(dt)[6:]}: fwd {1000 * ms:.1f} us", flush=True)
