"""A small CPU demo: window_attention on a Swin-shaped problem against the plain-PyTorch reference.

    python -m flash_window_attn.demo [--images 2] [--device cpu]

Swin V2 stage 1 at 224 px (56 x 56 tokens, 7 x 7 windows -> nW = 64, N = 49, H = 3, d = 32) with the
shifted-window mask, a relative position bias and a logit scale (both trained, so both need grad),
plus the same problem in Swin V1 form. Prints the error of the output and of every gradient against
the float64 reference (next to the error of the reference formula itself run in fp32) and the time
of the fused op and of the eager reference.
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch

from . import window_attention
from .reference import (
    reference_float64,
    reference_outputs_and_grads,
    swin_shift_mask,
    window_attention_reference,
)
from .testing import compare_to_reference, reduction_magnitudes


def _problem(images, version, device, dtype, seed=0):
    g = torch.Generator().manual_seed(seed)
    side, ws, H, d = 56, 7, 3, 32
    nW = (side // ws) ** 2
    B_, N = images * nW, ws * ws
    rnd = lambda *s: torch.randn(*s, generator=g).to(device=device, dtype=dtype)  # noqa: E731
    qkv = rnd(B_, N, 3 * H * d).requires_grad_()
    q, k, v = qkv.reshape(B_, N, 3, H, d).permute(2, 0, 3, 1, 4)
    mask = swin_shift_mask(side, ws, ws // 2, device=device)
    if version == "v2":
        # Swin V2: continuous position bias, 16 * sigmoid(mlp(...)) in (0, 16)
        bias = (16 * torch.sigmoid(torch.randn(H, N, N, generator=g))).to(device).requires_grad_()
        logit_scale = torch.log(10 * torch.ones(H, 1, 1)).to(device).requires_grad_()
        kwargs = dict(logit_scale=logit_scale)
    else:
        bias = (0.02 * torch.randn(H, N, N, generator=g)).to(device).requires_grad_()
        logit_scale = None
        kwargs = {}
    dout = rnd(B_, H, N, d)
    leaves = {"dq": q, "dk": k, "dv": v, "dbias": bias}
    if logit_scale is not None:
        leaves["dlogit_scale"] = logit_scale
    return (q, k, v, bias, mask), kwargs, dout, leaves


def _median_ms(fn, reps):
    fn()  # warm-up
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--images", type=int, default=2, help="images in the batch (B_ = 64 * images)")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--reps", type=int, default=5, help="timed repetitions (median reported)")
    args = parser.parse_args(argv)

    dtype = torch.float32
    print(f"flash_window_attn demo  torch {torch.__version__}  device {args.device}  "
          f"threads {torch.get_num_threads()}")
    all_ok = True
    for version in ("v2", "v1"):
        (q, k, v, bias, mask), kw, dout, leaves = _problem(args.images, version, args.device, dtype)
        B_, H, N, d = q.shape
        print(f"\nSwin {version.upper()}: B_={B_} windows (nW={mask.shape[0]}), H={H}, N={N}, d={d}, "
              f"{str(dtype).replace('torch.', '')}, shifted-window mask, bias"
              + (", logit_scale" if version == "v2" else ""))

        out = window_attention(q, k, v, bias, mask, **kw)
        grads = torch.autograd.grad(out, list(leaves.values()), dout)
        ours = {"out": out.detach(), **dict(zip(leaves.keys(), grads))}
        ref64 = reference_float64(q, k, v, bias, mask, dout=dout, **kw)
        ref32 = reference_outputs_and_grads(q, k, v, bias, mask, dout=dout, **kw)
        mags = reduction_magnitudes(q, k, v, bias, mask, dout=dout, **kw)
        ok, lines = compare_to_reference(ours, ref64, ref32, dtype, magnitudes=mags)
        all_ok &= ok
        print("  error vs float64 reference (max-abs / reference max-abs; bound = 2 x PyTorch fp32 + 1e-5):")
        for line in lines:
            print("  " + line)

        def fwd(fn):
            with torch.no_grad():
                fn(q, k, v, bias, mask, **kw)

        def fwd_bwd(fn):
            o = fn(q, k, v, bias, mask, **kw)
            torch.autograd.grad(o, list(leaves.values()), dout)

        t = {
            "fused fwd": _median_ms(lambda: fwd(window_attention), args.reps),
            "eager fwd": _median_ms(lambda: fwd(window_attention_reference), args.reps),
            "fused fwd+bwd": _median_ms(lambda: fwd_bwd(window_attention), args.reps),
            "eager fwd+bwd": _median_ms(lambda: fwd_bwd(window_attention_reference), args.reps),
        }
        print("  time (median of {} runs, ms): ".format(args.reps)
              + ", ".join(f"{name} {ms:.2f}" for name, ms in t.items()))
        print(f"  speed-up of the fused op over eager (eager time / fused time): "
              f"fwd {t['eager fwd'] / t['fused fwd']:.2f}x, fwd+bwd {t['eager fwd+bwd'] / t['fused fwd+bwd']:.2f}x")
    print("\nresult:", "all outputs and gradients within tolerance" if all_ok else "MISMATCH (see FAIL above)")
    return 0 if all_ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
