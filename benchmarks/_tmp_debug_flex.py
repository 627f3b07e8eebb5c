import sys, torch, math, functools
sys.path.insert(0,'benchmarks')
import bench_window_attention as b
from flash_window_attn.reference import *
from flash_window_attn.testing import normalized_error
from torch.nn.attention.flex_attention import flex_attention
dev, dt = "cuda", torch.float16
def unclamped(q, k, v, bias, mask, ls, nW):
    qs, ks = b._fold_scale(q, k, ls)
    def sm(score, bb, h, qi, kj):
        return score + bias[h, qi, kj] + mask[bb % nW, qi, kj]
    return flex_attention(qs, ks, v, score_mod=sm, scale=1.0)
for rep in range(2):
  for B, nW in [(256, 64), (4096, 64)]:
    g = torch.Generator().manual_seed(rep)
    q, k, v = [torch.randn(B, 3, 49, 32, generator=g).to(dev, dt) for _ in range(3)]
    bias = (0.02 * torch.randn(3, 49, 49, generator=g)).to(dev)
    mask = swin_shift_mask(56, 7, device=dev)
    r = window_attention_reference(q, k, v, bias, mask)
    torch._dynamo.reset()
    f = torch.compile(functools.partial(b._flex_fn, nW=nW), fullgraph=True)
    fu = torch.compile(functools.partial(unclamped, nW=nW), fullgraph=True)
    with torch.no_grad():
        print(rep, B, "clamped", normalized_error(f(q, k, v, bias, mask, None), r), "unclamped", normalized_error(fu(q, k, v, bias, mask, None), r))
