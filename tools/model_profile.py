"""Where a model step's GPU time goes (developer tool): torch.profiler over a few training (or
inference) steps of a timm Swin model, swapped / ceiling / plain, eager or compiled, bf16 autocast,
the same model construction and step as benchmarks/bench_models.py. Prints the GPU time per step
of each kernel (names shortened), the total, the GPU's busy time (kernels that overlap, as the
window forward's row-tail kernel does its main grid, counted once), and the share of this
package's kernels.

    python tools/model_profile.py [--model swinv2_tiny_window16_256] [--batch 64]
        [--variants swap_compile,ceiling_compile] [--mode train|infer] [--steps 5]
"""
import argparse
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "benchmarks"))
import bench_models as bm  # noqa: E402
from _model_variants import apply_ceiling, load_swap  # noqa: E402
from _kernel_times import kernel_times  # noqa: E402  (tools/, the script's directory)


def short(name: str) -> str:
    name = name.replace("(anonymous namespace)::", "")
    for key in ("fwa::", "triton_", "cutlass", "sm90_", "sm80_", "gemm", "elementwise", "reduce_kernel",
                "Memset", "Memcpy"):
        j = name.find(key)
        if j >= 0:
            name = name[j:]
            break
    return name.split("(")[0][:90]


def variant_step(model_name: str, key: str, batch: int, mode: str, dev: torch.device, amp_cache: bool = True):
    """One training (mode "train", SGD) or inference step of variant ``key`` of
    benchmarks/bench_models.py on a fresh ``model_name`` (random weights, random inputs of the
    model's input size, bf16 autocast), as the benchmark builds it. Returns (step, keep): ``keep``
    holds the model, runner and optimizer until the caller drops it. ``amp_cache=False``: autocast
    without its cast cache (as a step captured in a CUDA graph needs)."""
    v = bm.VARIANT_BY_KEY[key]
    bm.reset_dynamo()
    model = bm.build_model(model_name, 0, dev)
    cfg = getattr(model, "pretrained_cfg", None) or getattr(model, "default_cfg", {})
    size = cfg.get("input_size") or (3, *model.patch_embed.img_size)
    x = torch.randn(batch, *size, device=dev)
    y = torch.randint(0, model.num_classes, (batch,), device=dev)
    if v.ceiling:
        apply_ceiling(model)
    if v.swap:
        fn, why = load_swap()
        assert fn is not None, why
        model = fn(model) or model
    runner = torch.compile(model) if v.compile else model
    if mode == "train":
        model.train()
        opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    else:
        model.eval()
        opt = None
    step = bm.make_step(runner, x, y, dict(device_type="cuda", dtype=torch.bfloat16, cache_enabled=amp_cache), opt)
    return step, (model, runner, opt)


def add_step_args(ap: argparse.ArgumentParser, variants: str) -> None:
    """The arguments of variant_step (--model, --batch, --variants, --mode), shared by the model
    tools; ``variants`` is the default comma list of bench_models.py variant keys."""
    ap.add_argument("--model", default="swinv2_tiny_window16_256")
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--variants", default=variants)
    ap.add_argument("--mode", default="train", choices=["train", "infer"])


def main() -> None:
    ap = argparse.ArgumentParser()
    add_step_args(ap, "swap_compile,ceiling_compile")
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--top", type=int, default=30)
    args = ap.parse_args()
    dev = torch.device("cuda")
    for key in args.variants.split(","):
        v = bm.VARIANT_BY_KEY[key]
        step, _keep = variant_step(args.model, key, args.batch, args.mode, dev)
        per, calls, busy = kernel_times(step, args.steps, short)
        total = sum(per.values())
        ours = sum(t for n, t in per.items() if n.startswith("fwa::"))
        print(f"\n== {args.model} bs{args.batch} {v.label} {args.mode}: GPU time per step {total / 1000:.2f} ms, "
              f"busy {busy / 1000:.2f} ms (overlapping kernels once), "
              f"flash_window_attn kernels {ours / 1000:.2f} ms, {len(per)} kernel names, "
              f"{sum(calls.values())} launches per step")
        for n, us in sorted(per.items(), key=lambda kv: -kv[1])[: args.top]:
            print(f"  {us / 1000:7.3f} ms {100 * us / total:5.1f} % x{calls[n]:<4d} {n}")
        step = _keep = None
        torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
