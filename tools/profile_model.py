"""Where does a Swin training step spend its GPU time? torch.profiler over a few training steps of a
timm model (random weights, bf16 autocast), for one or more variants (eager, swap, ceiling); prints
the kernels sorted by total CUDA time and the sum per category.

    python tools/profile_model.py [--model swinv2_tiny_window16_256] [--batch 64]
        [--variants swap,ceiling] [--steps 3] [--rows 40]
"""
import argparse
import os
import sys

import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "benchmarks"))


def build(name, variant, device):
    import timm

    torch.manual_seed(0)
    model = timm.create_model(name, pretrained=False).to(device)
    if variant == "swap":
        from flash_window_attn import swap_window_attention

        swap_window_attention(model)
    elif variant == "ceiling":
        from _model_variants import apply_ceiling

        apply_ceiling(model)
    return model


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="swinv2_tiny_window16_256")
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--variants", default="swap,ceiling")
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--rows", type=int, default=40)
    ap.add_argument("--cpu", action="store_true",
                    help="also record host activity: step wall time, top ops by self CPU time, "
                         "CUDA runtime calls (launches, syncs, allocations)")
    args = ap.parse_args()
    device = torch.device("cuda")
    from torch.profiler import ProfilerActivity, profile

    for variant in args.variants.split(","):
        model = build(args.model, variant, device).train()
        size = model.default_cfg["input_size"][1:]
        x = torch.randn(args.batch, 3, *size, device=device)
        y = torch.randint(0, 1000, (args.batch,), device=device)
        opt = torch.optim.SGD(model.parameters(), lr=1e-4, momentum=0.9, foreach=True)

        def step():
            opt.zero_grad(set_to_none=True)
            with torch.autocast("cuda", dtype=torch.bfloat16):
                loss = F.cross_entropy(model(x), y)
            loss.backward()
            opt.step()

        for _ in range(3):
            step()
        torch.cuda.synchronize()
        acts = [ProfilerActivity.CUDA] + ([ProfilerActivity.CPU] if args.cpu else [])
        import time

        t0 = time.perf_counter()
        with profile(activities=acts) as prof:
            for _ in range(args.steps):
                step()
            torch.cuda.synchronize()
        wall = (time.perf_counter() - t0) / args.steps * 1e3
        # host time without the profiler: how long the CPU takes to issue one step (no sync inside)
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(args.steps):
            step()
        issue = (time.perf_counter() - t0) / args.steps * 1e3
        torch.cuda.synchronize()
        done = (time.perf_counter() - t0) / args.steps * 1e3
        print(f"\n[{variant}] host issue time {issue:.2f} ms/step, issue+drain {done:.2f} ms/step, "
              f"profiled wall {wall:.2f} ms/step")
        events = [e for e in prof.key_averages() if e.device_time_total > 0]
        events.sort(key=lambda e: -e.device_time_total)
        total = sum(e.device_time_total for e in events) / args.steps / 1e3
        print(f"\n=== {args.model} bs{args.batch} {variant}: {total:.2f} ms of kernels per step ===")
        for e in events[: args.rows]:
            ms = e.device_time_total / args.steps / 1e3
            print(f"{ms:8.3f} ms {e.count // args.steps:6d}x  {e.key[:150]}")
        if args.cpu:
            cpu = [e for e in prof.key_averages() if e.self_cpu_time_total > 0]
            cpu.sort(key=lambda e: -e.self_cpu_time_total)
            tot = sum(e.self_cpu_time_total for e in cpu) / args.steps / 1e3
            print(f"--- {variant}: {tot:.2f} ms self CPU per step; top ops by self CPU ---")
            for e in cpu[: args.rows]:
                print(f"{e.self_cpu_time_total / args.steps / 1e3:8.3f} ms {e.count // args.steps:6d}x  {e.key[:120]}")
        del model, opt
        torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
