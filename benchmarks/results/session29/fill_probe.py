"""Session 29: the aten::fill_ calls of a compiled swapped window16 training step (run K: 2 per step,
~0.47 ms of self CPU each): their input shapes / devices and parent operators."""
import os
import sys

import torch
from torch.profiler import ProfilerActivity, profile

sys.path.insert(0, os.path.join(os.getcwd(), "tools"))
from model_profile import variant_step  # noqa: E402

step, keep = variant_step("swinv2_tiny_window16_256", sys.argv[1], 64, "train", torch.device("cuda"))
for _ in range(5): step()
torch.cuda.synchronize()
with profile(activities=[ProfilerActivity.CPU], record_shapes=True) as prof:
    step()
    torch.cuda.synchronize()
for e in prof.events():
    if e.name in ("aten::fill_", "aten::zero_", "aten::zeros", "aten::copy_") and e.cpu_time_total > 50:
        chain, p = [], e.cpu_parent
        while p is not None and len(chain) < 6:
            chain.append(p.name[:60]); p = p.cpu_parent
        print(f"{e.name} {e.cpu_time_total:.0f} us shapes {e.input_shapes} <- {' <- '.join(chain)}")
