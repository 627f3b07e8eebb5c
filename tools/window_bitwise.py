"""Bitwise comparison of the window-attention op's outputs and gradients between two builds
(developer tool, CUDA), as tools/local_bitwise.py does for the sliding-window op: run it once with
the reference build to save, once with the candidate to compare. A refactor or a scheduling change
of the kernels must leave every bit unchanged.

    python tools/window_bitwise.py save /tmp/ref.pt     # with the reference build's _C.abi3.so
    python tools/window_bitwise.py cmp /tmp/ref.pt      # with the candidate's; exit 1 on any difference

Cases: fp16 and bf16; Swin V2 (cosine, bias, shift mask, logit_scale) and V1 (scale, bias) and no
bias / mask; N 49 (the small path), 100, 144, 256, 300 and 576 (key ranges); d 16, 32, 64, 128;
B_ not a multiple of the kernels' row groups. Outputs: out, dq, dk, dv, dbias, dlogit_scale. Inputs
come from a seeded CUDA generator, so both runs see the same values.
"""
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
import flash_window_attn as fwa  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _bitwise import bitwise_main  # noqa: E402

CASES = [  # (B_, H, N, d, nW, mode)
    (64, 3, 49, 32, 4, "v2"),
    (30, 4, 100, 32, 5, "v2"),
    (24, 4, 144, 32, 4, "v1"),
    (64, 3, 256, 32, 16, "v2"),
    (17, 2, 256, 16, 1, "plain"),
    (12, 2, 300, 32, 3, "v2"),
    (8, 6, 576, 32, 4, "v2"),
    (20, 4, 64, 64, 4, "v2"),
    (10, 2, 200, 128, 2, "v1"),
]


def run_cases():
    out = []
    for dt in (torch.float16, torch.bfloat16):
        for (B, H, N, d, nW, mode) in CASES:
            g = torch.Generator(device="cuda").manual_seed(B * 1000 + N + d)
            q, k, v, do = (torch.randn(B, H, N, d, device="cuda", dtype=dt, generator=g) for _ in range(4))
            for t in (q, k, v):
                t.requires_grad_()
            leaves = [q, k, v]
            kw = {}
            bias = mask = None
            if mode != "plain":
                bias = (torch.randn(H, N, N, device="cuda", generator=g) * 2).requires_grad_()
                leaves.append(bias)
            if mode == "v2":
                mask = torch.where(torch.rand(nW, N, N, device="cuda", generator=g) < 0.3, -100.0, 0.0)
                ls = torch.log(10 * torch.rand(H, 1, 1, device="cuda", generator=g) + 1).requires_grad_()
                kw["logit_scale"] = ls
                leaves.append(ls)
            o = fwa.window_attention(q, k, v, bias, mask, **kw)
            grads = torch.autograd.grad(o, leaves, do)
            out.append([o.detach().cpu()] + [t.detach().cpu() for t in grads])
    return out


def main() -> int:
    return bitwise_main(run_cases, __doc__, "window_bitwise")


if __name__ == "__main__":
    sys.exit(main())
