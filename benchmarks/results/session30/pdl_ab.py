"""Session 30 run H: the op's forward alone, median of CUDA-event times (L2 flushed, 300 runs) at
the benchmark's config 8 (d = 64, the mma.sync forward) and config 4 (N = 576), fp16 and bf16,
printed to 0.1 us; run once per FWA_WINDOW_PDL setting (read once per process)."""
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", ".."))
import bench_window_attention as bw  # noqa: E402

for i in (8, 4):
    for dt in (torch.float16, torch.bfloat16):
        cfg = bw.CONFIGS[i]
        print(f"PDL={os.environ.get('FWA_WINDOW_PDL', '1')} {cfg.name} {str(dt)[6:]}: fwd {bw.op_forward_us(cfg, dt):.1f} us")
