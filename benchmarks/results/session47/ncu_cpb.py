"""Session 47: the CPB op's forward and backward at swinv2_tiny_window16_256's shapes (window 16:
T = 961 table rows, hidden 512, N = 256; H = 3 and 12), float32, for ncu.

    python benchmarks/results/session47/ncu_cpb.py
"""
import torch

import flash_window_attn  # noqa: F401 (registers the ops)
from flash_window_attn.modules import _relative_position_index

OP = torch.ops.flash_window_attn.swin_cpb_bias
wh = ww = 16
rh = torch.arange(-(wh - 1), wh, dtype=torch.float32)
table = torch.stack(torch.meshgrid(rh, rh, indexing="ij")).permute(1, 2, 0).unsqueeze(0) / (wh - 1) * 8
table = (torch.sign(table) * torch.log2(table.abs() + 1.0) / 3).cuda()
index = _relative_position_index(wh, ww).cuda()
for H in (3, 12):
    torch.manual_seed(H)
    mlp = torch.nn.Sequential(torch.nn.Linear(2, 512), torch.nn.ReLU(), torch.nn.Linear(512, H, bias=False)).cuda()
    params = list(mlp.parameters())
    g = torch.randn(H, 256, 256, device="cuda")
    for _ in range(2):   # the second call reads the cached CSR
        torch.autograd.grad(OP(table, mlp[0].weight, mlp[0].bias, mlp[2].weight, index), params, g)
torch.cuda.synchronize()
