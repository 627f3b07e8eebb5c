"""Session 42: the GPU timeline of one fwd+bwd call of the window op (L2 flush, then forward and
torch.autograd.grad over every leaf, as bench_window_attention's fwd_bwd cell): per kernel its start
after the flush's end and its duration (torch.profiler, median over 20 calls), and the span from the
flush's end to the last kernel's end (session39/timeline.py's print_timeline).

    python benchmarks/results/session42/timeline_bwd.py LABEL DTYPE SPEC [SPEC ...]
    (DTYPE fp16 | bf16; SPEC: a bench_window_attention config index, or B,H,N,d,nW,window,v1|v2)
"""
import os
import sys

import torch

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", ".."))
sys.path.insert(0, os.path.join(here, "..", "session39"))
import bench_window_attention as bw  # noqa: E402
from timeline import print_timeline  # noqa: E402


def config_of(spec):
    if "," not in spec:
        return bw.CONFIGS[int(spec)]
    f = spec.split(",")
    return bw.Config(*(int(x) for x in f[:6]), f[6])


def main():
    label, dts, specs = sys.argv[1], sys.argv[2], sys.argv[3:]
    dt = {"fp16": torch.float16, "bf16": torch.bfloat16}[dts]
    for spec in specs:
        inp = bw.make_inputs(config_of(spec), dt)
        args = (inp["q"], inp["k"], inp["v"], inp["bias"], inp["mask"], inp["logit_scale"])
        leaves = bw.grad_leaves(inp)

        def fn():
            out = bw.impl_ours(*args)
            torch.autograd.grad(out, leaves, inp["dout"])

        print_timeline(fn, f"== {label} {dts} spec {spec}")


if __name__ == "__main__":
    main()
