"""One V2 + bias + mask fwd+bwd of (B, H, N, 32) bf16 (for ncu): s20fb.py B H N nW."""
import sys
import torch
import flash_window_attn as fwa
B, H, N, nW = (int(x) for x in sys.argv[1:5])
g = torch.Generator(device="cuda").manual_seed(0)
q, k, v = (torch.randn(B, H, N, 32, device="cuda", generator=g).to(torch.bfloat16).requires_grad_() for _ in range(3))
bias = (4 * torch.randn(H, N, N, device="cuda", generator=g)).requires_grad_()
mask = torch.where(torch.rand(nW, N, N, device="cuda", generator=g) < 0.3, -100.0, 0.0)
ls = torch.log(10 * torch.rand(H, 1, 1, device="cuda", generator=g) + 1).requires_grad_()
out = fwa.window_attention(q, k, v, bias, mask, logit_scale=ls)
out.backward(torch.randn_like(out))
torch.cuda.synchronize()
print("ok", float(q.grad.float().abs().sum()))
