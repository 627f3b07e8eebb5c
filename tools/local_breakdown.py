"""Per-kernel GPU time of the sliding-window op's forward + backward next to FlexAttention's on the
benchmark's configs (developer tool): which kernel of each costs what. torch.profiler, fwd+bwd
iterations after a warm-up; prints the mean CUDA time per iteration of each kernel.

    python tools/local_breakdown.py [--configs 0,2,4] [--dtype bf16] [--impls ours,flex]
"""
import argparse
import os
import sys
from types import SimpleNamespace

import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "benchmarks"))
import bench_sliding_window as bs  # noqa: E402
import flash_window_attn  # noqa: E402

bs.fwa = flash_window_attn  # the bench imports it in its main()
from _kernel_times import gpu_time_by_kernel  # noqa: E402


def short(name: str) -> str:
    for key in ("local_attn_", "triton_", "flex_", "elementwise", "Memset", "Memcpy", "reduce"):
        if key in name:
            return name[name.find(key):].split("<")[0].split("(")[0][:48]
    return name[:48]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--configs", default="0,2,4")
    ap.add_argument("--dtype", default="bf16", choices=["fp16", "bf16"])
    ap.add_argument("--impls", default="ours,flex")
    ap.add_argument("--iters", type=int, default=10)
    args = ap.parse_args()
    dtype = torch.float16 if args.dtype == "fp16" else torch.bfloat16
    peer_args = SimpleNamespace(dense_mask_cap_gib=4.0)
    for i in (int(c) for c in args.configs.split(",")):
        cfg = bs.CONFIGS[i]
        inp = bs.make_inputs(cfg, dtype, "cuda")
        for name in args.impls.split(","):
            fn, _ = bs.build_impl(name, cfg, "cuda", peer_args)

            def step():
                out = fn(inp["q"], inp["k"], inp["v"])
                torch.autograd.grad(out, (inp["q"], inp["k"], inp["v"]), inp["dout"])

            per, calls = gpu_time_by_kernel(step, args.iters, short)
            total = sum(per.values())
            print(f"== config {i} {cfg.name if hasattr(cfg, 'name') else cfg} {args.dtype} {name}: "
                  f"GPU {total / 1e3:.3f} ms per fwd+bwd")
            for k, v in sorted(per.items(), key=lambda kv: -kv[1]):
                print(f"   {v / 1e3:8.3f} ms  x{calls[k]}  {k}")
            del fn
            torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
