"""Session 31: the op's forward alone, median of CUDA-event times (L2 flushed, 300 runs), at
square windows whose last 64-key block is partly padding (N = 144: 16 keys left in it, 100: 36,
81: 17, 196: 4, 225: 33, 36: 36) and two controls where the last block stays 64 wide (49, 256), fp16
and bf16, V2 with bias, logit scale and the shift mask, printed to 0.1 us; run once per
FWA_WINDOW_WGMMA_TAIL setting (read once per process)."""
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", ".."))
import bench_window_attention as bw  # noqa: E402

CFGS = [bw.CONFIGS[3], bw.Config(1024, 4, 100, 32, 16, 10, "v2"), bw.Config(1024, 4, 81, 32, 16, 9, "v2"),
        bw.Config(256, 6, 196, 32, 4, 14, "v2"), bw.Config(256, 4, 225, 32, 4, 15, "v2"),
        bw.Config(4096, 3, 36, 32, 64, 6, "v2"), bw.CONFIGS[5], bw.CONFIGS[1]]
tag = os.environ.get("FWA_WINDOW_WGMMA_TAIL", "1")
for cfg in CFGS:
    for dt in (torch.float16, torch.bfloat16):
        print(f"TAIL={tag} {cfg.name} {str(dt)[6:]}: fwd {bw.op_forward_us(cfg, dt):.1f} us", flush=True)
