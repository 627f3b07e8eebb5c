"""Runs a few representative problems once each (after a warm-up) so that ncu can profile the
kernels: python tools/profile_kernels.py; ncu --launch-skip ... selects them."""
import sys

import torch

import flash_window_attn  # noqa: F401

ops = torch.ops.flash_window_attn
CONFIGS = [(4096, 3, 64, 32, 64), (512, 4, 256, 32, 16), (128, 6, 576, 32, 4)]


def run(B, H, N, d, nW, dtype=torch.float16):
    qkv = torch.randn(B, N, 3, H, d, device="cuda", dtype=dtype)
    q, k, v = qkv.permute(2, 0, 3, 1, 4).unbind(0)
    bias = torch.randn(H, N, N, device="cuda")
    mask = torch.where(torch.rand(nW, N, N, device="cuda") < 0.3, -100.0, 0.0)
    ls = torch.rand(H, device="cuda") + 1
    out, lse, qk_inv_norm = ops.window_attention_fwd(q, k, v, bias, mask, ls, 1.0, True)
    dout = torch.randn_like(out)
    ops.window_attention_bwd(dout, q, k, v, out, lse, bias, mask, ls, 1.0, qk_inv_norm)
    torch.cuda.synchronize()


if __name__ == "__main__":
    sel = [int(a) for a in sys.argv[1:]] or range(len(CONFIGS))
    for i in sel:
        run(*CONFIGS[i])
