"""Session 46: the GPU timeline of the sliding-window op's fwd+bwd (or forward) as CUDA-graph replays
(no host time in it), ours and FlexAttention's, at bench_sliding_window configs: per kernel (and
memset) its start after the first node's start and its duration, medians over 30 replays each
after an L2 flush (torch.profiler / CUPTI sees the graph's kernels one by one).

    python benchmarks/results/session46/graph_timeline.py CONFIG DTYPE [IMPL ...]   (ours, flex)
"""
import os
import statistics
import sys
from collections import defaultdict
from types import SimpleNamespace

import torch
from torch.profiler import ProfilerActivity, profile

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", ".."))
import _bench_common  # noqa: E402
import bench_sliding_window as bs  # noqa: E402
import flash_window_attn  # noqa: E402

bs.fwa = flash_window_attn
FLUSH = torch.empty(256 * 1024 * 1024, dtype=torch.int8, device="cuda")


def capture(fn):
    return _bench_common.cuda_graph_capture(fn)


def timeline(graph, header):
    for _ in range(5):
        FLUSH.zero_()
        graph.replay()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(30):
            FLUSH.zero_()
            graph.replay()
        torch.cuda.synchronize()
    ev = sorted((e for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA),
                key=lambda e: e.time_range.start)
    calls, cur = [], None
    for e in ev:
        if "fill" in e.name.lower() and e.time_range.elapsed_us() > 30:
            cur = []
            calls.append(cur)
        elif cur is not None:
            cur.append(e)
    starts, durs, order, spans = defaultdict(list), defaultdict(list), [], []
    for c in calls[1:]:
        if not c:
            continue
        t0 = c[0].time_range.start
        spans.append(max(e.time_range.end for e in c) - t0)
        for i, e in enumerate(c):
            key = f"{i}:{e.name[:100]}"
            if key not in order:
                order.append(key)
            starts[key].append(e.time_range.start - t0)
            durs[key].append(e.time_range.elapsed_us())
    print(f"{header}: first start -> last end, median {statistics.median(spans):.1f} us "
          f"(min {min(spans):.1f}, max {max(spans):.1f}; {len(spans)} replays)")
    for key in order:
        print(f"   start {statistics.median(starts[key]):7.1f}  dur {statistics.median(durs[key]):7.1f}  {key}")


def main():
    cfg = bs.CONFIGS[int(sys.argv[1])]
    dt = {"fp16": torch.float16, "bf16": torch.bfloat16}[sys.argv[2]]
    impls = sys.argv[3:] or ["ours", "flex"]
    args = SimpleNamespace(dense_mask_cap_gib=4.0)
    inp = bs.make_inputs(cfg, dt, "cuda")
    q, k, v, dout = inp["q"], inp["k"], inp["v"], inp["dout"]
    for name in impls:
        fn, _info = bs.build_impl(name, cfg, "cuda", args)
        g, _ = capture(lambda: torch.autograd.grad(fn(q, k, v), (q, k, v), dout))
        timeline(g, f"== {name} {cfg.name} {sys.argv[2]} fwd+bwd")
        del g


if __name__ == "__main__":
    main()
