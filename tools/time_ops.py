"""Quick timing of our op alone on the benchmark's configs (developer tool; the benchmark proper is
benchmarks/bench_window_attention.py). Prints fwd and fwd+bwd medians in ms, one line per config.

    python tools/time_ops.py [--configs 0,1,4] [--dtype fp16|bf16] [--label TEXT]
"""
import argparse
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "benchmarks"))
import bench_window_attention as bw  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--configs", default=None, help="comma-separated indices into CONFIGS")
    ap.add_argument("--dtype", default="fp16", choices=["fp16", "bf16"])
    ap.add_argument("--label", default=os.environ.get("FWA_FWD_CONFIG", "default"))
    args = ap.parse_args()
    dtype = torch.float16 if args.dtype == "fp16" else torch.bfloat16
    idx = [int(i) for i in args.configs.split(",")] if args.configs else range(len(bw.CONFIGS))
    for i in idx:
        cfg = bw.CONFIGS[i]
        inp = bw.make_inputs(cfg, dtype)
        args_ = (inp["q"], inp["k"], inp["v"], inp["bias"], inp["mask"], inp["logit_scale"])

        def fwd():
            with torch.no_grad():
                bw.impl_ours(*args_)

        def fwd_bwd():
            out = bw.impl_ours(*args_)
            out.backward(inp["dout"])

        f = bw.bench_ms(fwd, quick=True)
        fb = bw.bench_ms(fwd_bwd, quick=True)
        print(f"[{args.label}] {args.dtype} {cfg.name:28s} fwd {f:7.3f} ms  fwd+bwd {fb:7.3f} ms  bwd {fb - f:7.3f}",
              flush=True)


if __name__ == "__main__":
    main()
