"""Session 48: the CPB op's forward + backward (the position-bias table of one Swin V2 layer, hidden
512) at the four stages of swinv2_tiny_window16_256 and swinv2_base_window12_192, captured in a CUDA
graph after eager warm-up calls (the op's index cache filled, as in a model step); median GPU time of 300 replays
(CUDA events), and each kernel's time per step (profiler over 20 replays). Environment switches are
read once per process: run once per setting.

    python benchmarks/results/session48/cpb_graph.py LABEL [all]

With `all`, the kernels that are not the op's own (autograd's, the graph's) are listed too.
"""
import os
import sys

import torch
from torch.profiler import ProfilerActivity, profile

import flash_window_attn  # noqa: F401 (registers the ops)
from flash_window_attn.modules import _relative_position_index

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
import _bench_common  # noqa: E402

OP = torch.ops.flash_window_attn.swin_cpb_bias
SHAPES = [(16, 3), (16, 6), (16, 12), (8, 24), (12, 4), (12, 8), (12, 16), (6, 32)]


def case(w, H):
    rh = torch.arange(-(w - 1), w, dtype=torch.float32)
    table = torch.stack(torch.meshgrid(rh, rh, indexing="ij")).permute(1, 2, 0).reshape(-1, 2)
    table = table / max(w - 1, 1) * 8
    table = (torch.sign(table) * torch.log2(table.abs() + 1.0) / 3).cuda()
    index = _relative_position_index(w, w).cuda()
    torch.manual_seed(w * 100 + H)
    mlp = torch.nn.Sequential(torch.nn.Linear(2, 512), torch.nn.ReLU(), torch.nn.Linear(512, H, bias=False)).cuda()
    params = list(mlp.parameters())
    n = index.shape[0]
    g = torch.randn(H, n, n, device="cuda")

    def step():
        bias = OP(table, mlp[0].weight, mlp[0].bias, mlp[2].weight, index)
        return torch.autograd.grad(bias, params, g)

    return step


def main():
    label = sys.argv[1]
    every = len(sys.argv) > 2 and sys.argv[2] == "all"
    for w, H in SHAPES:
        g, _out = _bench_common.cuda_graph_capture(case(w, H), warmup=3)
        us = 1000 * _bench_common.cuda_event_median_ms(g.replay, 300, flush_l2=False, warmup=20)
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            for _ in range(20):
                g.replay()
            torch.cuda.synchronize()
        ks = []
        for ev in prof.key_averages():
            if ev.device_time_total > 0 and "fwa::" in ev.key:
                name = ev.key.replace("(anonymous namespace)::", "").split("(")[0].split("::")[-1]
                ks.append(f"{name.replace('cpb_', '').replace('_kernel', '')} {ev.device_time_total / 20:.1f}")
            elif every and ev.device_time_total > 0 and ev.count >= 20:
                ks.append(f"<{ev.key[:60]}> {ev.device_time_total / 20:.1f} x{ev.count // 20}")
        print(f"[{label}] window {w:2d} H {H:2d}: graph {us:6.1f} us | " + ", ".join(sorted(ks)), flush=True)


if __name__ == "__main__":
    main()
