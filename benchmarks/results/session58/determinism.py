"""Session 58 run D: which stage of the sliding op's residual-D path is not bitwise repeatable
(run C: test_residual_d_backward_cuda[fp16] saw dq differ between two autograd calls at
block256x16). Each iteration runs the forward with out_lo and the backward (with the first
forward's saved tensors, with and without out_lo) at two cases in turn, and counts the tensors
that differ from the first iteration's."""
import sys

import torch

import flash_window_attn  # noqa: F401

fwd_res = torch.ops.flash_window_attn.local_attention_fwd_res.default
bwd = torch.ops.flash_window_attn.local_attention_bwd.default
CASES = [(1, 12, 12, 4096, 64, (15, 0, 256)), (1, 8, 4, 8192, 128, (1024, 0, 1))]
iters = int(sys.argv[1]) if len(sys.argv) > 1 else 100
for dt in (torch.float16, torch.bfloat16):
    probs = []
    for i, (B, H, Hkv, L, d, band) in enumerate(CASES):
        g = torch.Generator().manual_seed(90 + i)
        q, k, v = (torch.randn(B, n, L, d, generator=g).to("cuda", dt) for n in (H, Hkv, Hkv))
        dout = torch.randn(B, H, L, d, generator=g).to("cuda", dt)
        out, lse, lo = fwd_res(q, k, v, *band, d ** -0.5)
        first = [out, lse, lo, *bwd(dout, q, k, v, out, lse, *band, d ** -0.5, out_lo=lo),
                 *bwd(dout, q, k, v, out, lse, *band, d ** -0.5)]
        probs.append((q, k, v, dout, band, d, [t.clone() for t in first], [0] * len(first), [0.0] * len(first)))
    names = ["out", "lse", "out_lo", "dq_res", "dk_res", "dv_res", "dq_exact", "dk_exact", "dv_exact"]
    for it in range(iters):
        for (q, k, v, dout, band, d, first, bad, diff) in probs:
            out, lse, lo = fwd_res(q, k, v, *band, d ** -0.5)
            o = [out, lse, lo, *bwd(dout, q, k, v, first[0], first[1], *band, d ** -0.5, out_lo=first[2]),
                 *bwd(dout, q, k, v, first[0], first[1], *band, d ** -0.5)]
            for j, (a, b) in enumerate(zip(o, first)):
                if not torch.equal(a, b):
                    bad[j] += 1
                    diff[j] = max(diff[j], (a.float() - b.float()).abs().max().item())
    torch.cuda.synchronize()
    for (q, k, v, dout, band, d, first, bad, diff), c in zip(probs, CASES):
        print(dt, c, "differing iterations of", iters, {n: (b, f"{x:.3g}") for n, b, x in zip(names, bad, diff) if b})
print("done")
