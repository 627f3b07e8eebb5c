"""The swin_cpb_bias op (Swin V2's position-bias MLP) on the GPU, float32, timm's hidden width 512
(developer tool, CUDA).

    python tools/cpb_op_bench.py bench   # per call of forward + backward (autograd.grad): host issue
                                         # time and wall per call (1000 calls, one sync), CUDA-event
                                         # time, kernels per call and their GPU time (profiler)
    python tools/cpb_op_bench.py san     # a few calls, for compute-sanitizer

Run it once as is and once with FWA_CPB_ATEN=1 (the ATen implementation) to compare
(benchmarks/results/session13/cpb-op-*.txt). The coordinate table of tests/test_cpb.py is not
contiguous: its copy is the 2 elementwise kernels per call besides the op's own 4."""
import collections
import os
import sys
import time

import torch

if len(sys.argv) < 2:
    sys.exit(__doc__)
from torch import nn
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))
from test_cpb import _coords_index

OP = torch.ops.flash_window_attn.swin_cpb_bias
mode = sys.argv[1]
configs = [((16, 16), 3), ((16, 16), 6), ((16, 16), 12), ((16, 16), 24), ((12, 12), 32), ((24, 24), 32)]
if mode == "san":
    configs = [((7, 7), 3), ((16, 16), 24), ((8, 8), 48), ((5, 6), 9)]
for window, H in configs:
    coords, index = _coords_index(*window, "cuda", torch.float32)
    torch.manual_seed(0)
    mlp = nn.Sequential(nn.Linear(2, 512), nn.ReLU(), nn.Linear(512, H, bias=False)).cuda()
    params = [mlp[0].weight, mlp[0].bias, mlp[2].weight]
    n = index.shape[0]
    g = torch.randn(H, n, n, device="cuda")
    def call():
        b = OP(coords, params[0], params[1], params[2], index)
        return torch.autograd.grad(b, params, g)
    for _ in range(3): r = call()
    torch.cuda.synchronize()
    if mode == "san":
        print(window, H, [x.abs().sum().item() for x in r]); continue
    reps = 1000
    t = time.perf_counter()
    for _ in range(reps): call()
    host = (time.perf_counter() - t) / reps * 1e6
    torch.cuda.synchronize(); wall = (time.perf_counter() - t) / reps * 1e6
    e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    gpu = []
    for _ in range(5):
        torch.cuda.synchronize(); e0.record()
        for _ in range(200): call()
        e1.record(); torch.cuda.synchronize(); gpu.append(e0.elapsed_time(e1) / 200 * 1e3)
    from torch.profiler import profile, ProfilerActivity
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        for _ in range(10): call()
        torch.cuda.synchronize()
    kern = collections.Counter(e.name[:60] for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA)
    ksum = sum(kern.values()) / 10
    kgpu = sum(e.self_device_time_total for e in prof.key_averages() if e.self_device_time_total > 0) / 10
    print(f"window {window} H {H}: host issue {host:.1f} us/call, wall {wall:.1f}, events {sorted(gpu)[2]:.1f} us, "
          f"kernels/call {ksum:.1f}, kernel time {kgpu:.1f} us")
    print("   ", "; ".join(f"{c/10:.0f}x {k}" for k, c in kern.most_common(12)))
    per = sorted(((e.self_device_time_total / 10, e.key[:60]) for e in prof.key_averages()
                  if e.self_device_time_total > 0), reverse=True)
    print("    GPU us per call:", "; ".join(f"{t:.1f} {k}" for t, k in per[:8]))
