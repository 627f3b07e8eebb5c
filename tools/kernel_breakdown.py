"""Per-kernel GPU time of our op's forward + backward on the benchmark's configs (developer tool):
which kernel of the tiled backward costs what. torch.profiler, 20 fwd+bwd iterations after a
warm-up; prints the mean time per iteration of each kernel (CUDA time, not wall time).

    python tools/kernel_breakdown.py [--configs 1,4] [--dtype bf16]
    python tools/kernel_breakdown.py --shape 1024,4,100,32,16,10,v2   (B_,H,N,d,nW,window,v1|v2)
"""
import argparse
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "benchmarks"))
import bench_window_attention as bw  # noqa: E402
from _kernel_times import gpu_time_by_kernel  # noqa: E402


def short(name: str) -> str:
    for key in ("window_attn_", "local_attn_", "reduce_", "build_bm", "elementwise", "Memset", "Memcpy"):
        if key in name:
            return name[name.find(key):].split("<")[0].split("(")[0]
    return name[:60]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--configs", default="0,1,3,4")
    ap.add_argument("--dtype", default="bf16", choices=["fp16", "bf16"])
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--shape", action="append", default=[],
                    help="B_,H,N,d,nW,window,v1|v2: a configuration outside the benchmark's list "
                         "(repeatable; replaces --configs)")
    args = ap.parse_args()
    dtype = torch.float16 if args.dtype == "fp16" else torch.bfloat16
    if args.shape:
        cfgs = []
        for s in args.shape:
            *ints, version = s.split(",")
            cfgs.append(bw.Config(*(int(x) for x in ints), version))
    else:
        cfgs = [bw.CONFIGS[int(c)] for c in args.configs.split(",")]
    for cfg in cfgs:
        inp = bw.make_inputs(cfg, dtype)
        a = (inp["q"], inp["k"], inp["v"], inp["bias"], inp["mask"], inp["logit_scale"])

        def step():
            out = bw.impl_ours(*a)
            torch.autograd.grad(out, bw.grad_leaves(inp), inp["dout"])

        per, _ = gpu_time_by_kernel(step, args.iters, short)
        total = sum(per.values())
        print(f"\n{cfg.name} {args.dtype}: GPU time per fwd+bwd {total / 1000:.3f} ms")
        for name, us in sorted(per.items(), key=lambda kv: -kv[1]):
            print(f"  {us / 1000:8.3f} ms  {100 * us / total:5.1f} %  {name}")


if __name__ == "__main__":
    main()
