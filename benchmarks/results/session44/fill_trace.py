"""Session 44 run H: where the two ~450 us aten::fill_ calls of a compiled swapped window16
training step come from (run F): torch.profiler with shapes and stacks over 2 steps, printing every
fill_ / zero_ / zeros event with its input shapes, CPU time, parent chain and Python stack."""
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..", "tools"))
from model_profile import variant_step  # noqa: E402
from torch.profiler import ProfilerActivity, profile  # noqa: E402

key = sys.argv[1] if len(sys.argv) > 1 else "swap_compile"
step, keep = variant_step("swinv2_tiny_window16_256", key, 64, "train", torch.device("cuda"))
for _ in range(4):
    step()
torch.cuda.synchronize()
with profile(activities=[ProfilerActivity.CPU], record_shapes=True, with_stack=True) as prof:
    for _ in range(2):
        step()
    torch.cuda.synchronize()
n = 0
for ev in prof.events():
    if ev.name in ("aten::fill_", "aten::zero_", "aten::zeros", "aten::ones", "aten::full") and ev.cpu_time_total > 20:
        n += 1
        chain, p = [], ev.cpu_parent
        while p is not None and len(chain) < 8:
            chain.append(p.name)
            p = p.cpu_parent
        print(f"\n{ev.name} cpu {ev.cpu_time_total:.0f} us self {ev.self_cpu_time_total:.0f} shapes {ev.input_shapes} "
              f"parents {chain}")
        for fr in (ev.stack or [])[:12]:
            print("   ", fr)
print(f"\n{n} events ({key})")
