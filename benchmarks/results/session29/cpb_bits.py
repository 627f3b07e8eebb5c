"""Session 29: the swin_cpb_bias op's outputs (bias, dw1, db1, dw2) on the benchmark's layer shapes,
saved (save PATH) or compared bitwise with a saved file (cmp PATH)."""
import sys

import torch
from torch import nn

sys.path.insert(0, "tests")
from test_cpb import _coords_index  # noqa: E402

OP = torch.ops.flash_window_attn.swin_cpb_bias
out = {}
for window, H in [((16, 16), 3), ((16, 16), 6), ((16, 16), 12), ((16, 16), 24), ((8, 8), 24), ((12, 12), 32),
                  ((24, 24), 32), ((7, 7), 3), ((5, 6), 9), ((8, 8), 48)]:
    coords, index = _coords_index(*window, "cuda", torch.float32)
    torch.manual_seed(H)
    mlp = nn.Sequential(nn.Linear(2, 512), nn.ReLU(), nn.Linear(512, H, bias=False)).cuda()
    params = [mlp[0].weight, mlp[0].bias, mlp[2].weight]
    n = index.shape[0]
    g = torch.randn(H, n, n, device="cuda")
    b = OP(coords, params[0], params[1], params[2], index)
    grads = torch.autograd.grad(b, params, g)
    out[f"{window}-{H}"] = [b.detach().cpu()] + [x.cpu() for x in grads]
mode, path = sys.argv[1], sys.argv[2]
if mode == "save":
    torch.save(out, path)
else:
    ref = torch.load(path)
    bad = 0
    for k, v in out.items():
        for i, (a, r) in enumerate(zip(v, ref[k])):
            same = torch.equal(a.view(torch.int32), r.view(torch.int32))
            bad += not same
            if not same:
                print(f"{k} output {i}: NOT bitwise equal, max |diff| {(a - r).abs().max().item():.3e}")
    print(f"cpb bitwise: {sum(len(v) for v in out.values()) - bad} of {sum(len(v) for v in out.values())} tensors equal")
