"""Session 39: the GPU timeline of one op call as the benchmark times it (L2 flush, then the call):
for each kernel of the call its start after the flush's end and its duration (torch.profiler, median
over 20 calls), and the span from the flush's end to the last kernel's end. Window configs: the
forward (bench_window_attention config index, bf16); 'block': the block-sliding-window fwd+bwd of
bench_sliding_window config 0 (B1 H12 L4096 d64, block 256 x 16), bf16.

    python benchmarks/results/session39/timeline.py LABEL [SPEC ...]   (SPEC: config index or 'block')
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
import flash_window_attn as fwa  # noqa: E402

FLUSH = torch.empty(256 * 1024 * 1024, dtype=torch.int8, device="cuda")


def call_for(spec):
    dt = torch.bfloat16
    if spec == "block":
        g = torch.Generator(device="cuda").manual_seed(0)
        q, k, v = (torch.randn(1, 12, 4096, 64, device="cuda", dtype=dt, generator=g).requires_grad_() for _ in range(3))
        do = torch.randn(1, 12, 4096, 64, device="cuda", dtype=dt, generator=g)

        def fn():
            out = fwa.block_sliding_window_attention(q, k, v, 256, 16)
            out.backward(do)
        return fn
    cfg = bw.CONFIGS[int(spec)]
    inp = bw.make_inputs(cfg, dt)
    a = (inp["q"], inp["k"], inp["v"], inp["bias"], inp["mask"], inp["logit_scale"])

    def fn():
        with torch.no_grad():
            bw.impl_ours(*a)
    return fn


def print_timeline(fn, header: str) -> None:
    """Profiles 20 calls of fn, each after an L2 flush (after 20 warm-up ones), and prints
    `header`, the span from the flush's end to the last kernel's end (median), and each kernel's
    start and duration (medians over the calls but the first two). session42/timeline_bwd.py uses
    it too."""
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
        name = e.name
        if "fill" in name.lower() and e.time_range.elapsed_us() > 30:   # the flush
            cur = {"t0": e.time_range.end, "k": []}
            calls.append(cur)
        elif cur is not None:
            cur["k"].append((name, e.time_range.start - cur["t0"], e.time_range.elapsed_us(), e.time_range.end - cur["t0"]))
    starts, durs, span = defaultdict(list), defaultdict(list), []
    order = []
    for c in calls[2:]:
        for i, (n, s, d_, _) in enumerate(c["k"]):
            key = f"{i}:{n[:90]}"
            if key not in order:
                order.append(key)
            starts[key].append(s)
            durs[key].append(d_)
        if c["k"]:
            span.append(max(x[3] for x in c["k"]))
    print(f"{header}: span flush end -> last kernel end, median {statistics.median(span):.1f} us "
          f"(min {min(span):.1f}, max {max(span):.1f})", flush=True)
    for key in order:
        print(f"   start {statistics.median(starts[key]):7.1f}  dur {statistics.median(durs[key]):7.1f}  {key}", flush=True)


def main():
    label, specs = sys.argv[1], sys.argv[2:]
    for spec in specs:
        fn = call_for(spec)
        ev = "" if spec == "block" else f", op_forward_us {bw.op_forward_us(bw.CONFIGS[int(spec)], torch.bfloat16):.1f}"
        print_timeline(fn, f"== {label} spec {spec}{ev}")


if __name__ == "__main__":
    main()
