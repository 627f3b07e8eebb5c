"""Session 59 (mode `other` added in session 60): repeatability of the sliding-window op's fwd+bwd
in 16 bits with other GPU work between two calls (session 58 run C saw dq differ once between two
autograd calls at block256x16, with the float64 reference between them; 400 back-to-back repeats
in run D all matched).

usage: stress.py ITERS MODE [MODE...]; MODE fill (the test suite's _fill_freed_memory between
calls) or ref64 (test_residual_d_backward_cuda's sequence: call, float64 and 16-bit references,
call) or other (cuBLAS, SDPA and window-op kernels between the calls, leaving other contents
in shared memory and L2, then _fill_freed_memory). Prints per case and mode how many of ITERS
pairs differed in out / dq / dk / dv, and the largest difference."""
import os
import sys
import time

import torch

import flash_window_attn as fwa

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "tests"))
from test_local_attention import _RES_CASES, _fill_freed_memory, call_public, make_qkv, reference_results  # noqa: E402

iters = int(sys.argv[1])
modes = sys.argv[2:] or ["fill"]


def call(kind, kw, q, k, v, dout):
    out = call_public(kind, q, k, v, kw)
    return [out.detach(), *torch.autograd.grad(out, (q, k, v), dout)]


gen = torch.Generator(device="cuda").manual_seed(5)
t0 = time.time()
for mode in modes:
    for dt in (torch.float16, torch.bfloat16):
        for i, (B, H, Hkv, L, d, kind, kw, band) in enumerate(_RES_CASES[:2]):
            q, k, v, dout = make_qkv(B, H, Hkv, L, d, dtype=dt, device="cuda", seed=90 + i)
            first = call(kind, kw, q, k, v, dout)
            bad, diff = [0] * 4, [0.0] * 4
            for it in range(iters):
                if mode == "fill":
                    _fill_freed_memory(gen, "cuda")
                    o = call(kind, kw, q, k, v, dout)
                elif mode == "other":
                    a16 = torch.randn(2048, 2048, device="cuda", dtype=dt, generator=gen)
                    (a16 @ a16).sum().item()
                    qq = torch.randn(4, 8, 1024, 64, device="cuda", dtype=dt, generator=gen)
                    torch.nn.functional.scaled_dot_product_attention(qq, qq, qq)
                    wq = torch.randn(256, 4, 64, 32, device="cuda", dtype=dt, generator=gen)
                    fwa.window_attention(wq, wq, wq)
                    del a16, qq, wq
                    _fill_freed_memory(gen, "cuda")
                    o = call(kind, kw, q, k, v, dout)
                else:   # the test's order: call, references, call (compare both with the first)
                    a = call(kind, kw, q, k, v, dout)
                    reference_results(q, k, v, dout, band, d ** -0.5, torch.float64)
                    reference_results(q, k, v, dout, band, d ** -0.5, dt)
                    o = call(kind, kw, q, k, v, dout)
                    for j, (x, y) in enumerate(zip(a, first)):
                        if not torch.equal(x, y):
                            bad[j] += 1
                            diff[j] = max(diff[j], (x.float() - y.float()).abs().max().item())
                for j, (x, y) in enumerate(zip(o, first)):
                    if not torch.equal(x, y):
                        bad[j] += 1
                        diff[j] = max(diff[j], (x.float() - y.float()).abs().max().item())
            torch.cuda.synchronize()
            print(f"{mode} {str(dt)[6:]} {kind} {kw}: differing of {iters * (2 if mode == 'ref64' else 1)}",
                  {n: (b, f"{x:.3g}") for n, b, x in zip(("out", "dq", "dk", "dv"), bad, diff) if b},
                  f"{time.time() - t0:.0f} s", flush=True)
print("done")
