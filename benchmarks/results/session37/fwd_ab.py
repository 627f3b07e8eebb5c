"""Session 37: the op's forward alone (bench_window_attention.op_forward_us: median of 300 CUDA-event
times, L2 flushed) at bench configs or custom ones, fp16 and bf16, under a label (the build or the
environment being compared).

    python benchmarks/results/session37/fwd_ab.py LABEL [SPEC ...]

SPEC as in session36/graph_ab.py: a bench config index, or B,H,N,d,nW,window,version.
"""
import os
import sys

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", ".."))
sys.path.insert(0, os.path.join(here, "..", "session36"))
import bench_window_attention as bw  # noqa: E402
from graph_ab import run_cli  # noqa: E402

if __name__ == "__main__":
    run_cli(bw.op_forward_us, "forward")
