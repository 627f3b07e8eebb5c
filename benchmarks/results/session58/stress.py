"""Session 58 run E: test_residual_d_backward_cuda[fp16] (run C) saw dq differ between two
autograd calls at block256x16 with the float64 reference run between them; determinism.py (run D,
the same calls back to back) saw no difference in 400 iterations. Here the two calls have other
work between them that leaves other contents in reused memory (the test suite's
_fill_freed_memory), and each pair is compared tensor by tensor (out, dq, dk, dv)."""
import os
import sys

import torch

import flash_window_attn as fwa

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "tests"))
from test_local_attention import _fill_freed_memory  # noqa: E402

CASES = [(1, 12, 12, 4096, 64, dict(block_size=256, window_blocks=16)), (1, 8, 4, 8192, 128, dict(window=(1024, 0)))]
iters = int(sys.argv[1]) if len(sys.argv) > 1 else 50


def call(kind_kw, q, k, v, dout):
    out = (fwa.block_sliding_window_attention(q, k, v, **kind_kw) if "block_size" in kind_kw
           else fwa.sliding_window_attention(q, k, v, **kind_kw))
    return [out.detach(), *torch.autograd.grad(out, (q, k, v), dout)]


gen = torch.Generator(device="cuda").manual_seed(5)
for dt in (torch.float16, torch.bfloat16):
    for i, (B, H, Hkv, L, d, kw) in enumerate(CASES):
        g = torch.Generator().manual_seed(90 + i)
        q, k, v = (torch.randn(B, n, L, d, generator=g).to("cuda", dt).requires_grad_() for n in (H, Hkv, Hkv))
        dout = torch.randn(B, H, L, d, generator=g).to("cuda", dt)
        first = call(kw, q, k, v, dout)
        bad = [0] * 4
        diff = [0.0] * 4
        for it in range(iters):
            _fill_freed_memory(gen, "cuda")
            o = call(kw, q, k, v, dout)
            for j, (a, b) in enumerate(zip(o, first)):
                if not torch.equal(a, b):
                    bad[j] += 1
                    diff[j] = max(diff[j], (a.float() - b.float()).abs().max().item())
        torch.cuda.synchronize()
        print(dt, (B, H, Hkv, L, d, kw), "differing of", iters,
              {n: (b, f"{x:.3g}") for n, b, x in zip(("out", "dq", "dk", "dv"), bad, diff) if b}, flush=True)
print("done")
