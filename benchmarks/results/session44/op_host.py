"""Session 44: host issue time per call of one swapped window16 attention layer (timm Swin V2
WindowAttention through flash_window_attn.WindowAttention.from_timm, 4 windows, bf16 autocast):
inference (eval, no_grad) forward and training forward + backward, back-to-back calls timed before
the synchronize (tools/module_host.py's host_issue_us), ROUNDS rounds. Run once per build.

    python benchmarks/results/session44/op_host.py LABEL [ROUNDS]
"""
import os
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..", "..", "..")
sys.path.insert(0, os.path.join(ROOT, "tools"))
from module_host import host_issue_us  # noqa: E402

import flash_window_attn  # noqa: E402
from timm.models.swin_transformer_v2 import WindowAttention as TimmWA  # noqa: E402

label = sys.argv[1]
rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 3
torch.manual_seed(0)
n, dim, heads = 256, 96, 3
m = flash_window_attn.WindowAttention.from_timm(TimmWA(dim=dim, window_size=(16, 16), num_heads=heads).cuda())
x = torch.randn(4, n, dim, device="cuda", requires_grad=True)
mask = torch.zeros(4, n, n, device="cuda")
mask[:, :, n // 2:] = -100.0


def infer():
    with torch.no_grad(), torch.autocast("cuda", dtype=torch.bfloat16):
        m(x, mask)


def train():
    with torch.autocast("cuda", dtype=torch.bfloat16):
        y = m(x, mask)
    y.float().sum().backward()


for r in range(rounds):
    m.eval()
    hi, _ = host_issue_us(infer, 500)
    m.train()
    ht, _ = host_issue_us(train, 300)
    print(f"{label} round {r}: host issue us/call  infer {hi:7.1f}  train fwd+bwd {ht:7.1f}", flush=True)
