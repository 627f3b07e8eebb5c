"""Session 33: the op's forward (bench_window_attention.op_forward_us: CUDA-event medians of 300
runs, L2 flushed) at the benchmark's configs, fp16 and bf16, in this process's form of the bias+mask
rows (FWA_WINDOW_FWD_DIRECT_BM: unset = the wgmma forward reads bias and mask itself, "0" = the
bm build first). Run once per form and round: the switch is read once per process.

    python benchmarks/results/session33/fwd_direct_ab.py LABEL [config ...]
"""
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", ".."))
import bench_window_attention as bw  # noqa: E402

args = sys.argv[1:]
label = args.pop(0) if args else "form"
idx = [int(a) for a in args] or [0, 1, 2, 3, 5, 6, 7]
for ci in idx:
    cfg = bw.CONFIGS[ci]
    t = [bw.op_forward_us(cfg, dt) for dt in (torch.float16, torch.bfloat16)]
    print(f"{label:8s} {cfg.name:28s} fp16 {t[0]:7.1f} us  bf16 {t[1]:7.1f} us", flush=True)
