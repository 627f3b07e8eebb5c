"""Session 44: host time per call of the packed window op alone (CUDA, one small problem: the GPU
keeps up, so back-to-back calls measure the host): inference (no_grad) forward, and a training
forward + backward (qkv, bias and logit scale requiring grad). Minimum and median over REPS
passes of CALLS calls, each timed before its synchronize. Run once per build, alternating builds.

    python benchmarks/results/session44/op_micro.py LABEL [REPS] [CALLS]
"""
import statistics
import sys
import time

import torch

import flash_window_attn as fwa

label = sys.argv[1]
reps = int(sys.argv[2]) if len(sys.argv) > 2 else 7
calls = int(sys.argv[3]) if len(sys.argv) > 3 else 1000
B_, H, N, d = 4, 3, 256, 32
g = torch.Generator().manual_seed(0)
qkv = torch.randn(B_, N, 3 * H * d, generator=g).cuda().half()
bias = torch.randn(H, N, N, generator=g).cuda()
mask = torch.where(torch.rand(2, N, N, generator=g) < 0.3, -100.0, 0.0).cuda()
ls = (torch.rand(H, 1, 1, generator=g) + 1.5).cuda()
qkv_t, bias_t, ls_t = (t.clone().requires_grad_(True) for t in (qkv, bias, ls))


def infer():
    with torch.no_grad():
        fwa.window_attention_qkvpacked(qkv, H, bias, mask, logit_scale=ls)


def train():
    y = fwa.window_attention_qkvpacked(qkv_t, H, bias_t, mask, logit_scale=ls_t)
    y.backward(y)   # (a cotangent of out's layout: no sum kernel)


def passes(fn, n):
    for _ in range(50):
        fn()
    torch.cuda.synchronize()
    res = []
    for _ in range(reps):
        t = time.perf_counter()
        for _ in range(n):
            fn()
        res.append((time.perf_counter() - t) / n * 1e6)
        torch.cuda.synchronize()
    return min(res), statistics.median(res)


i = passes(infer, calls)
t = passes(train, calls // 4)
print(f"{label}: host us/call infer min {i[0]:6.1f} median {i[1]:6.1f} | train fwd+bwd min {t[0]:6.1f} "
      f"median {t[1]:6.1f}", flush=True)
