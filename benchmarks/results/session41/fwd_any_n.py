"""Session 41: the op's forward alone (median of 300 CUDA-event times, L2 flushed, as
bench_window_attention.op_forward_us) at an N that need not be a square (fwd_ab.py's specs derive
the shift mask from a square window): V2 with an fp32 bias and a 0 / -100 mask of nW windows.

    python benchmarks/results/session41/fwd_any_n.py LABEL B,H,N,d,nW [...]
"""
import math
import os
import sys

import torch

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", ".."))
from _bench_common import cuda_event_median_ms  # noqa: E402
from flash_window_attn import window_attention  # noqa: E402


def forward_us(B, H, N, d, nW, dtype):
    g = torch.Generator(device="cuda").manual_seed(0)
    q, k, v = (torch.randn(B, H, N, d, generator=g, device="cuda", dtype=dtype) for _ in range(3))
    bias = 16 * torch.sigmoid(torch.randn(H, N, N, generator=g, device="cuda"))
    mask = torch.where(torch.rand(nW, N, N, generator=g, device="cuda") < 0.3, -100.0, 0.0)
    ls = math.log(10.0) + 0.3 * torch.randn(H, 1, 1, generator=g, device="cuda")

    def fwd():
        with torch.no_grad():
            return window_attention(q, k, v, bias, mask, logit_scale=ls)

    return 1000 * cuda_event_median_ms(fwd, 300, flush_l2=True, warmup=20)


if __name__ == "__main__":
    label, specs = sys.argv[1], sys.argv[2:]
    for spec in specs:
        B, H, N, d, nW = (int(x) for x in spec.split(","))
        for dt in (torch.float16, torch.bfloat16):
            print(f"[{label}] v2 B{B} H{H} N{N} d{d} {str(dt)[6:]:9s} forward {forward_us(B, H, N, d, nW, dt):8.1f} us", flush=True)
