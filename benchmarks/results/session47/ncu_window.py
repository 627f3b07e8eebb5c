"""Session 47: one fwd+bwd of the packed window op at swinv2_tiny_window16_256's stage-1 shape (bs 64:
B_ = 1024 windows, H = 3, N = 256, d = 32, V2 with its bias and the shift mask of 16 windows),
bf16, for ncu.

    python benchmarks/results/session47/ncu_window.py
"""
import math

import torch

import flash_window_attn as fwa

B_, H, N, d, nW = 1024, 3, 256, 32, 16
g = torch.Generator(device="cuda").manual_seed(0)
qkv = torch.randn(B_, N, 3 * H * d, device="cuda", generator=g, dtype=torch.bfloat16).requires_grad_(True)
bias = (16 * torch.sigmoid(torch.randn(H, N, N, device="cuda", generator=g))).requires_grad_(True)
mask = torch.where(torch.rand(nW, N, N, device="cuda", generator=g) < 0.3, -100.0, 0.0)
logit_scale = torch.full((H, 1, 1), math.log(10.0), device="cuda").requires_grad_(True)
out = fwa.window_attention_qkvpacked(qkv, H, bias, mask, logit_scale=logit_scale)
out.backward(torch.randn_like(out))
torch.cuda.synchronize()
