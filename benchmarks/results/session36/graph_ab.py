"""Session 36: the fwd+bwd step's GPU time (CUDA graph, median of 200 replays; session 33's
step_graph_ab.graph_step_us) at bench configs or custom ones, in fp16 and bf16. Environment
switches are read once per process: run once per setting.

    python benchmarks/results/session36/graph_ab.py LABEL [SPEC ...]

SPEC: a bench config index (default 3), or B,H,N,d,nW,window,version (e.g. 256,6,144,32,16,12,v1).
"""
import os
import sys

import torch

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", ".."))
sys.path.insert(0, os.path.join(here, "..", "session33"))
import bench_window_attention as bw  # noqa: E402
from step_graph_ab import graph_step_us  # noqa: E402


def parse(spec: str) -> "bw.Config":
    if "," not in spec:
        return bw.CONFIGS[int(spec)]
    f = spec.split(",")
    return bw.Config(*(int(x) for x in f[:6]), f[6])


def run_cli(measure, what: str) -> None:
    """LABEL [SPEC ...] from the command line: measure(cfg, dtype) (us) at each spec, fp16 and bf16."""
    args = sys.argv[1:]
    label = args.pop(0) if args else "form"
    for spec in args or ["3"]:
        cfg = parse(spec)
        for dt in (torch.float16, torch.bfloat16):
            us = measure(cfg, dt)
            print(f"[{label}] {cfg.name:28s} {str(dt)[6:]:9s} {what} {us:8.1f} us", flush=True)


if __name__ == "__main__":
    run_cli(graph_step_us, "fwd+bwd step (graph)")
