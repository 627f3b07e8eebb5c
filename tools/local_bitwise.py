"""Bitwise comparison of the sliding-window op's outputs and gradients between two builds
(developer tool, CUDA): run it once with the reference build to save, once with the candidate to
compare. A refactor or a scheduling change of the kernels must leave every bit unchanged.

    python tools/local_bitwise.py save /tmp/ref.pt     # with the reference build's _C.abi3.so
    python tools/local_bitwise.py cmp /tmp/ref.pt      # with the candidate's; exit 1 on any difference

Cases: fp16 and bf16; d 32, 64, 72 (the 128 bucket, padded columns), 128; GQA ratios 1, 2, 8;
local, causal, full and symmetric windows; a block band; L not a multiple of 64. Inputs come from a
seeded CUDA generator, so both runs see the same values.
"""
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
import flash_window_attn as fwa  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _bitwise import bitwise_main  # noqa: E402

SLIDING = [  # (B, H, Hkv, L, d, window, causal)
    (2, 4, 2, 1000, 32, (100, 50), False),
    (1, 8, 1, 4096, 64, (512, 0), False),
    (2, 4, 4, 777, 128, (-1, -1), True),
    (1, 4, 2, 2048, 128, (256, 256), False),
    (3, 2, 2, 17, 72, (3, 2), False),
]
BLOCK = [(1, 4, 1000, 64, 100, 3)]  # (B, H, L, d, block_size, window_blocks)


def _grads(out, q, k, v, do):
    return [out] + list(torch.autograd.grad(out, (q, k, v), do))


def run_cases():
    cases = []
    for dt in (torch.float16, torch.bfloat16):
        for (B, H, Hkv, L, d, win, causal) in SLIDING:
            g = torch.Generator(device="cuda").manual_seed(B * 1000 + L + d)
            q = torch.randn(B, H, L, d, device="cuda", dtype=dt, generator=g).requires_grad_()
            k = torch.randn(B, Hkv, L, d, device="cuda", dtype=dt, generator=g).requires_grad_()
            v = torch.randn(B, Hkv, L, d, device="cuda", dtype=dt, generator=g).requires_grad_()
            do = torch.randn(B, H, L, d, device="cuda", dtype=dt, generator=g)
            cases.append(_grads(fwa.sliding_window_attention(q, k, v, window=win, causal=causal), q, k, v, do))
        for (B, H, L, d, bs, wb) in BLOCK:
            g = torch.Generator(device="cuda").manual_seed(7)
            q, k, v, do = (torch.randn(B, H, L, d, device="cuda", dtype=dt, generator=g) for _ in range(4))
            for t in (q, k, v):
                t.requires_grad_()
            cases.append(_grads(fwa.block_sliding_window_attention(q, k, v, bs, wb), q, k, v, do))
    return [[t.detach().cpu() for t in c] for c in cases]


def main() -> int:
    return bitwise_main(run_cases, __doc__, "local_bitwise")


if __name__ == "__main__":
    sys.exit(main())
