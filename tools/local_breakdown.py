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


def config_steps(configs: str, impls: str, dtype_name: str):
    """For each benchmark config (comma list of indices) and implementation (comma list of the
    benchmark's names): yields (index, config, impl name, fwd, step) with fwd() the forward without
    grad and step() one forward + backward (dq, dk, dv) on the benchmark's inputs; the
    implementation is released when the caller asks for the next."""
    dtype = torch.float16 if dtype_name == "fp16" else torch.bfloat16
    peer_args = SimpleNamespace(dense_mask_cap_gib=4.0)
    for i in (int(c) for c in configs.split(",")):
        cfg = bs.CONFIGS[i]
        inp = bs.make_inputs(cfg, dtype, "cuda")
        for name in impls.split(","):
            fn, _ = bs.build_impl(name, cfg, "cuda", peer_args)

            def fwd(fn=fn):
                with torch.no_grad():
                    return fn(inp["q"], inp["k"], inp["v"])

            def step(fn=fn):
                out = fn(inp["q"], inp["k"], inp["v"])
                return torch.autograd.grad(out, (inp["q"], inp["k"], inp["v"]), inp["dout"])

            yield i, cfg, name, fwd, step
            del fn, fwd, step
            torch.cuda.empty_cache()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--configs", default="0,2,4")
    ap.add_argument("--dtype", default="bf16", choices=["fp16", "bf16"])
    ap.add_argument("--impls", default="ours,flex")
    ap.add_argument("--iters", type=int, default=10)
    args = ap.parse_args()
    for i, cfg, name, _, step in config_steps(args.configs, args.impls, args.dtype):
        per, calls = gpu_time_by_kernel(step, args.iters, short)
        total = sum(per.values())
        print(f"== config {i} {cfg.name} {args.dtype} {name}: GPU {total / 1e3:.3f} ms per fwd+bwd")
        for k, v in sorted(per.items(), key=lambda kv: -kv[1]):
            print(f"   {v / 1e3:8.3f} ms  x{calls[k]}  {k}")


if __name__ == "__main__":
    main()
