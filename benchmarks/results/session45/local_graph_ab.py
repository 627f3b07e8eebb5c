"""Session 45: the sliding-window op's forward and fwd+bwd GPU time (CUDA-graph replay, L2 flushed,
median of 200 replays: _bench_common.cuda_graph_median_ms) at bench_sliding_window configs, fp16 and
bf16. Environment switches are read once per process: run once per setting.

    python benchmarks/results/session45/local_graph_ab.py LABEL [CONFIG ...]   (default 1)
"""
import os
import sys

import torch

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", ".."))
import bench_sliding_window as bs  # noqa: E402
import flash_window_attn  # noqa: E402
from _bench_common import cuda_graph_median_ms  # noqa: E402

bs.fwa = flash_window_attn  # (the bench imports it in its main())


def main():
    label, specs = sys.argv[1], sys.argv[2:] or ["1"]
    for spec in specs:
        cfg = bs.CONFIGS[int(spec)]
        for dt in (torch.float16, torch.bfloat16):
            inp = bs.make_inputs(cfg, dt, "cuda")
            fn = bs.impl_ours(cfg)
            q, k, v, dout = inp["q"], inp["k"], inp["v"], inp["dout"]

            def fwd():
                with torch.no_grad():
                    return fn(q, k, v)

            def fwd_bwd():
                return torch.autograd.grad(fn(q, k, v), (q, k, v), dout)

            f = 1000 * cuda_graph_median_ms(fwd, 200)
            fb = 1000 * cuda_graph_median_ms(fwd_bwd, 200)
            print(f"[{label}] {cfg.name:34s} {str(dt)[6:]:9s} fwd {f:7.1f} us  fwd+bwd {fb:7.1f} us", flush=True)


if __name__ == "__main__":
    main()
