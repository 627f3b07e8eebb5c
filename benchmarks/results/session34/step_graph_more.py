"""Session 34: GPU time of one op fwd+bwd step (CUDA graph, median of 200 replays, bf16;
session33/step_graph_ab.py's graph_step_us) at window sizes whose last 64-query block is narrow
(N = 100, 196, 225, 81): the key side's narrow last query block (kTailQ 48, 16, 48, 32).

    python benchmarks/results/session34/step_graph_more.py LABEL
"""
import os
import sys

here = os.path.dirname(__file__)
sys.path.insert(0, os.path.join(here, "..", ".."))
sys.path.insert(0, os.path.join(here, "..", "session33"))
import bench_window_attention as bw  # noqa: E402
from step_graph_ab import graph_step_us  # noqa: E402

label = sys.argv[1] if len(sys.argv) > 1 else "build"
for cfg in [bw.Config(1024, 4, 100, 32, 16, 10, "v2"), bw.Config(256, 6, 196, 32, 4, 14, "v2"),
            bw.Config(256, 4, 225, 32, 4, 15, "v2"), bw.Config(1024, 4, 81, 32, 16, 9, "v2")]:
    print(f"{label:8s} {cfg.name:28s} fwd+bwd step (graph) {graph_step_us(cfg):8.1f} us", flush=True)
