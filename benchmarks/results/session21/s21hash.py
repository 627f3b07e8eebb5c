"""Print one line per sliding-window problem: sha1 of out, lse and the grads' bytes (compare builds)."""
import hashlib
import sys

import torch

import flash_window_attn  # noqa: F401

fwd = torch.ops.flash_window_attn.local_attention_fwd.default
label = sys.argv[1]
cases = []
for dt in (torch.bfloat16, torch.float16):
    for d in (64, 128):
        for (L, band) in ((1000, (-1, 0, 1)), (1024, (-1, 0, 1)), (2048, (-1, 0, 1)), (960, (-1, 0, 1)),
                          (4096, (-1, 0, 256)), (1100, (-1, 0, 128)), (700, (3, -1, 64)), (900, (100, 0, 1)),
                          (777, (200, 50, 1)), (130, (-1, -1, 1)), (65, (-1, 0, 1))):
            cases.append((dt, d, L, band))
for i, (dt, d, L, band) in enumerate(cases):
    g = torch.Generator().manual_seed(i)
    H, Hkv = 4, 2
    q = torch.randn(2, H, L, d, generator=g).to("cuda", dt).requires_grad_()
    k = torch.randn(2, Hkv, L, d, generator=g).to("cuda", dt).requires_grad_()
    v = torch.randn(2, Hkv, L, d, generator=g).to("cuda", dt).requires_grad_()
    do = torch.randn(2, H, L, d, generator=g).to("cuda", dt)
    out, lse = fwd(q, k, v, *band, d ** -0.5)
    grads = torch.autograd.grad(out, (q, k, v), do)
    h = hashlib.sha1()
    for t in (out, lse, *grads):
        t = t.detach().contiguous()
        t = torch.where(t == 0, torch.zeros_like(t), t)   # +0 and -0 alike
        h.update(t.view(torch.uint8).cpu().numpy().tobytes())
    print(label, str(dt)[6:], d, L, band, h.hexdigest()[:16], flush=True)
