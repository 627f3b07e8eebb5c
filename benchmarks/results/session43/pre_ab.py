"""Session 43: the GPU timeline of one fwd+bwd call of the window op (session42/timeline_bwd.py)
with the gradient of the output in either layout: 'bhnd' (contiguous (B_, H, N, d), as the benchmark
makes it) or 'bnhd' (a (B_, N, H, d) tensor transposed, the layout the output projection's
backward gives in a Swin block, the same as the op's own output).

    python benchmarks/results/session43/pre_ab.py LABEL DTYPE LAYOUT SPEC [SPEC ...]
"""
import os
import sys

import torch

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", ".."))
sys.path.insert(0, os.path.join(here, "..", "session39"))
sys.path.insert(0, os.path.join(here, "..", "session42"))
import bench_window_attention as bw  # noqa: E402
from timeline import print_timeline  # noqa: E402
from timeline_bwd import config_of  # noqa: E402


def main():
    label, dts, layout, specs = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
    dt = {"fp16": torch.float16, "bf16": torch.bfloat16}[dts]
    for spec in specs:
        inp = bw.make_inputs(config_of(spec), dt)
        args = (inp["q"], inp["k"], inp["v"], inp["bias"], inp["mask"], inp["logit_scale"])
        leaves = bw.grad_leaves(inp)
        dout = inp["dout"]
        if layout == "bnhd":
            dout = dout.transpose(1, 2).contiguous().transpose(1, 2)

        def fn():
            out = bw.impl_ours(*args)
            torch.autograd.grad(out, leaves, dout)

        print_timeline(fn, f"== {label} {dts} {layout} spec {spec}")


if __name__ == "__main__":
    main()
