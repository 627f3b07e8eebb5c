"""Session 42: the GPU timeline of one fwd+bwd call of the window op (L2 flush, then forward and
torch.autograd.grad over every leaf, as bench_window_attention's fwd_bwd cell): per kernel its start
after the flush's end and its duration (torch.profiler, median over 20 calls), and the span from the
flush's end to the last kernel's end.

    python benchmarks/results/session42/timeline_bwd.py LABEL DTYPE SPEC [SPEC ...]
    (DTYPE fp16 | bf16; SPEC: a bench_window_attention config index, or B,H,N,d,nW,window,v1|v2)
"""
import os
import statistics
import sys
from collections import defaultdict

import torch
from torch.profiler import ProfilerActivity, profile

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", ".."))
import bench_window_attention as bw  # noqa: E402

FLUSH = torch.empty(256 * 1024 * 1024, dtype=torch.int8, device="cuda")


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

        for _ in range(20):
            FLUSH.zero_()
            fn()
        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            for _ in range(20):
                FLUSH.zero_()
                fn()
            torch.cuda.synchronize()
        kern = sorted((e for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA),
                      key=lambda e: e.time_range.start)
        calls, cur = [], None
        for e in kern:
            if "fill" in e.name.lower() and e.time_range.elapsed_us() > 30:   # the flush
                cur = {"t0": e.time_range.end, "k": []}
                calls.append(cur)
            elif cur is not None:
                cur["k"].append((e.name, e.time_range.start - cur["t0"], e.time_range.elapsed_us(),
                                 e.time_range.end - cur["t0"]))
        starts, durs, span, order = defaultdict(list), defaultdict(list), [], []
        for c in calls[2:]:
            for i, (n, s, d_, _) in enumerate(c["k"]):
                key = f"{i}:{n[:100]}"
                if key not in order:
                    order.append(key)
                starts[key].append(s)
                durs[key].append(d_)
            if c["k"]:
                span.append(max(x[3] for x in c["k"]))
        print(f"== {label} {dts} spec {spec}: span flush end -> last kernel end, median "
              f"{statistics.median(span):.1f} us (min {min(span):.1f}, max {max(span):.1f})", flush=True)
        for key in order:
            print(f"   start {statistics.median(starts[key]):7.1f}  dur {statistics.median(durs[key]):7.1f}  {key}",
                  flush=True)


if __name__ == "__main__":
    main()
