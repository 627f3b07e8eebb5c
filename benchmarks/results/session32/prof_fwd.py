"""Session 32: the CUDA kernels of the op's forward (torch.profiler, 20 calls after warm-up), average
time per call of each, for the row-tail shapes (N = 144 bench config 3, N = 196); the main grid and
the row-tail kernel overlap (programmatic dependent launch), so their times add to more than the
forward's."""
import os
import sys

import torch
from torch.profiler import ProfilerActivity, profile

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", ".."))
import bench_window_attention as bw  # noqa: E402

tag = os.environ.get("FWA_WINDOW_ROW_TAIL", "1")
for cfg in (bw.CONFIGS[3], bw.Config(256, 6, 196, 32, 4, 14, "v2")):
    for dt in (torch.float16, torch.bfloat16):
        inp = bw.make_inputs(cfg, dt)
        a = (inp["q"], inp["k"], inp["v"], inp["bias"], inp["mask"], inp["logit_scale"])
        with torch.no_grad():
            for _ in range(10):
                bw.impl_ours(*a)
            torch.cuda.synchronize()
            with profile(activities=[ProfilerActivity.CUDA]) as prof:
                for _ in range(20):
                    bw.impl_ours(*a)
                torch.cuda.synchronize()
        for ev in prof.key_averages():
            if ev.device_time_total > 0:
                print(f"ROW_TAIL={tag} {cfg.name} {str(dt)[6:]}: {ev.key[:70]:70s} {ev.device_time_total / 20:8.1f} us/call",
                      flush=True)
