"""One causal sliding-window fwd+bwd, B8 H16 L2048 d64 bf16 (for ncu)."""
import torch
import flash_window_attn as fwa
g = torch.Generator(device="cuda").manual_seed(0)
q, k, v = (torch.randn(8, 16, 2048, 64, device="cuda", generator=g).to(torch.bfloat16).requires_grad_() for _ in range(3))
out = fwa.sliding_window_attention(q, k, v, window=(-1, 0))
out.backward(torch.randn_like(out))
torch.cuda.synchronize()
print("ok", float(q.grad.float().abs().sum()))
