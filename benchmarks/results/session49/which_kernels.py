"""Session 49: which ATen ops launch kernels in the position-bias op's eager fwd + bwd step (the
session-48 cpb_graph listing showed two ~2.6 us elementwise kernels per step beside the op's own),
and in one swapped Swin V2 layer's training step (timm window 16, stage 1 shape, bf16 autocast).
Prints, per CPU-side op with device time, its count and device time per step.

    python benchmarks/results/session49/which_kernels.py
"""
import torch
from torch.profiler import ProfilerActivity, profile

import flash_window_attn  # noqa: F401
from flash_window_attn.modules import WindowAttention, _relative_position_index

OP = torch.ops.flash_window_attn.swin_cpb_bias


def show(label, step, n=10):
    for _ in range(3):
        step()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        for _ in range(n):
            step()
        torch.cuda.synchronize()
    print(f"== {label}")
    rows = [ev for ev in prof.key_averages() if ev.device_time_total > 0]
    rows.sort(key=lambda ev: -ev.device_time_total)
    for ev in rows[:40]:
        print(f"  {ev.device_time_total / n:8.1f} us  x{ev.count / n:5.1f}  {ev.key[:110]}")


def main():
    w, H = 16, 6
    index = _relative_position_index(w, w).cuda()
    T = (2 * w - 1) ** 2
    table = torch.randn(T, 2, device="cuda")
    mlp = torch.nn.Sequential(torch.nn.Linear(2, 512), torch.nn.ReLU(), torch.nn.Linear(512, H, bias=False)).cuda()
    params = list(mlp.parameters())
    g = torch.randn(H, w * w, w * w, device="cuda")

    def cpb_step():
        bias = OP(table, mlp[0].weight, mlp[0].bias, mlp[2].weight, index)
        return torch.autograd.grad(bias, params, g)

    show("CPB op fwd + autograd.grad", cpb_step)

    m = WindowAttention(96, (16, 16), 3).cuda()
    x = torch.randn(1024, 256, 96, device="cuda", requires_grad=True)
    from flash_window_attn.reference import swin_shift_mask
    mask = swin_shift_mask((64, 64), (16, 16), (8, 8)).cuda()
    dy = torch.randn(1024, 256, 96, device="cuda", dtype=torch.bfloat16)

    def layer_step():
        m.zero_grad(set_to_none=True)
        with torch.autocast("cuda", dtype=torch.bfloat16):
            y = m(x, mask)
        y.backward(dy)

    show("swapped V2 layer (1024 windows x 3 heads x 256 tokens) train step, bf16 autocast", layer_step)


if __name__ == "__main__":
    main()
