"""Session 32: the op's forward alone, median of CUDA-event times (L2 flushed, 300 runs), where the
last 64-query block holds at most 16 rows (N = 144: 16, 196: 4: the square windows up to 256 that
have one) and a control without a row tail (N = 100), fp16 and bf16, V2 with bias, logit scale and
the shift mask, printed to 0.1 us; run once per FWA_WINDOW_ROW_TAIL setting (read once per
process)."""
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", ".."))
import bench_window_attention as bw  # noqa: E402

CFGS = [bw.CONFIGS[3], bw.Config(2048, 4, 144, 32, 16, 12, "v2"), bw.Config(256, 6, 196, 32, 4, 14, "v2"),
        bw.Config(1024, 4, 100, 32, 16, 10, "v2")]
tag = os.environ.get("FWA_WINDOW_ROW_TAIL", "1")
for cfg in CFGS:
    for dt in (torch.float16, torch.bfloat16):
        print(f"ROW_TAIL={tag} {cfg.name} {str(dt)[6:]}: fwd {bw.op_forward_us(cfg, dt):.1f} us", flush=True)
