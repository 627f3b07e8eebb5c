"""Session 47: the CPB op's forward and backward outputs at several shapes, saved with one build and
compared bitwise with another (`save PATH` / `cmp PATH`).

    python benchmarks/results/session47/cpb_bitwise.py save /tmp/cpb_ref.pt
    python benchmarks/results/session47/cpb_bitwise.py cmp /tmp/cpb_ref.pt
"""
import sys

import torch

import flash_window_attn  # noqa: F401 (registers the ops)
from flash_window_attn.modules import _relative_position_index

OP = torch.ops.flash_window_attn.swin_cpb_bias


def outputs():
    res = []
    for (wh, ww), H, hidden, b1 in [((16, 16), 3, 512, True), ((16, 16), 12, 512, True), ((12, 12), 4, 512, True),
                                    ((8, 8), 24, 512, False), ((7, 7), 6, 40, True), ((8, 8), 5, 1000, True),
                                    ((12, 12), 33, 512, True), ((6, 10), 7, 512, True)]:
        rh = torch.arange(-(wh - 1), wh, dtype=torch.float32)
        rw = torch.arange(-(ww - 1), ww, dtype=torch.float32)
        table = torch.stack(torch.meshgrid(rh, rw, indexing="ij")).permute(1, 2, 0).unsqueeze(0)
        table = table / torch.tensor([max(wh - 1, 1), max(ww - 1, 1)]) * 8
        table = (torch.sign(table) * torch.log2(table.abs() + 1.0) / 3).cuda()
        index = _relative_position_index(wh, ww).cuda()
        torch.manual_seed(H * 1000 + hidden)
        mlp = torch.nn.Sequential(torch.nn.Linear(2, hidden, bias=b1), torch.nn.ReLU(),
                                  torch.nn.Linear(hidden, H, bias=False)).cuda()
        params = [p for p in mlp.parameters()]
        n = index.shape[0]
        g = torch.randn(H, n, n, device="cuda")
        bias = OP(table, mlp[0].weight, mlp[0].bias, mlp[2].weight, index)
        res.append(bias.detach().cpu())
        res.extend(x.cpu() for x in torch.autograd.grad(bias, params, g))
    return res


if __name__ == "__main__":
    mode, path = sys.argv[1], sys.argv[2]
    got = outputs()
    if mode == "save":
        torch.save(got, path)
        print(f"saved {len(got)} tensors")
    else:
        ref = torch.load(path)
        same = sum(torch.equal(a, b) for a, b in zip(got, ref))
        print(f"bitwise equal: {same} of {len(ref)} tensors")
