"""Validation run of the local-attention CUDA kernels (csrc/kernels/local/), for the first GPU session.

The kernels were written on a machine without a GPU; this script is the validation run that
enabled them (H100, 2026-11-22: 1377 cases, 0 failures after the fp32 dk / dv summation fix). It compares
torch.ops.flash_window_attn.local_attention_fwd / _bwd against a float64 dense reference with the
explicit mask (out, lse, dq, dk, dv), over band shapes that exercise every index path: L not a
multiple of 64, block sizes that do and do not divide L or 64, left / right = -1, 0, small, larger
than L, GQA ratios 1, 2, 8, head dims 8 ... 128 (all three buckets; 256 for the fp32 SIMT path),
strided / misaligned inputs;
checks bitwise determinism of the backward, NaN-free outputs, and the empty / H = 0 cases.

Error rule (FlashAttention style): |ours - ref64| <= 2 * |same formula in the low precision - ref64|
+ atol, elementwise maximum over each tensor.

    python tests/gpu/local_validate.py            # CUDA, fp16 + bf16 + fp32, 1377 cases
    python tests/gpu/local_validate.py --device cpu --dtypes float32   # checks the script
Exit status 0 iff every case passes; one line per failure with a reproducer.
"""

import argparse
import itertools
import sys

import torch  # noqa: E402

import flash_window_attn  # noqa: E402,F401  (loads the ops)

OPS = torch.ops.flash_window_attn


def allowed_mask(L, left, right, block, device):
    i = torch.arange(L, device=device)
    bi = (i // block)[:, None]
    bj = (i // block)[None, :]
    m = torch.ones(L, L, dtype=torch.bool, device=device)
    if left >= 0:
        m &= bi - bj <= left
    if right >= 0:
        m &= bj - bi <= right
    return m


def reference(q, k, v, dout, left, right, block, scale, dtype):
    """Dense masked attention in `dtype` (float64 for the oracle); returns out, lse, dq, dk, dv."""
    H, Hkv = q.shape[1], k.shape[1]
    G = H // Hkv
    q_ = q.detach().to(dtype).requires_grad_(True)
    k_ = k.detach().to(dtype).requires_grad_(True)
    v_ = v.detach().to(dtype).requires_grad_(True)
    kk = k_.repeat_interleave(G, dim=1)
    vv = v_.repeat_interleave(G, dim=1)
    m = allowed_mask(q.shape[2], left, right, block, q.device)
    s = (q_ @ kk.transpose(-1, -2)).float() * scale if dtype != torch.float64 else (q_ @ kk.transpose(-1, -2)) * scale
    s = s.masked_fill(~m, float("-inf"))
    lse = torch.logsumexp(s, dim=-1)
    p = torch.softmax(s, dim=-1).to(dtype)
    out = p @ vv
    out.backward(dout.to(dtype))
    return out.detach(), lse.detach(), q_.grad, k_.grad, v_.grad


def make(B, H, Hkv, L, d, dtype, device, layout, gen):
    def rnd(*shape):
        return torch.randn(*shape, generator=gen, device="cpu").to(device=device, dtype=dtype)

    if layout == "contiguous":
        return rnd(B, H, L, d), rnd(B, Hkv, L, d), rnd(B, Hkv, L, d), rnd(B, H, L, d)
    if layout == "blhd":   # (B, L, H, d) memory, as a projection produces
        return (rnd(B, L, H, d).transpose(1, 2), rnd(B, L, Hkv, d).transpose(1, 2),
                rnd(B, L, Hkv, d).transpose(1, 2), rnd(B, L, H, d).transpose(1, 2))
    if layout == "misaligned":   # rows 2 bytes off 16-byte alignment: the op must copy
        def mis(*shape):
            n = 1
            for s in shape:
                n *= s
            return rnd(n + 1)[1:].view(*shape)
        return mis(B, H, L, d), mis(B, Hkv, L, d), mis(B, Hkv, L, d), mis(B, H, L, d)
    raise ValueError(layout)


def max_err(a, b):
    return (a.double() - b.double()).abs().max().item() if a.numel() else 0.0


def run_case(case, dtype, device, gen, failures):
    B, H, Hkv, L, d, left, right, block, layout = case
    scale = d ** -0.5
    q, k, v, dout = make(B, H, Hkv, L, d, dtype, device, layout, gen)
    out, lse = OPS.local_attention_fwd(q, k, v, left, right, block, scale)
    dq, dk, dv = OPS.local_attention_bwd(dout, q, k, v, out, lse, left, right, block, scale)
    dq2, dk2, dv2 = OPS.local_attention_bwd(dout, q, k, v, out, lse, left, right, block, scale)
    ref = reference(q, k, v, dout, left, right, block, scale, torch.float64)
    low = reference(q, k, v, dout, left, right, block, scale, dtype)
    names = ["out", "lse", "dq", "dk", "dv"]
    ours = [out, lse, dq, dk, dv]
    repro = (f"B={B} H={H} Hkv={Hkv} L={L} d={d} left={left} right={right} block={block} "
             f"layout={layout} dtype={dtype}")
    atol = {torch.float16: 1e-3, torch.bfloat16: 1e-2, torch.float32: 1e-5}[dtype]
    for name, o, r, lo in zip(names, ours, ref, low):
        if tuple(o.shape) != tuple(r.shape):
            failures.append(f"{name}: shape {tuple(o.shape)} != {tuple(r.shape)}  [{repro}]")
            continue
        if not torch.isfinite(o).all():
            failures.append(f"{name}: non-finite values  [{repro}]")
            continue
        e, e_low = max_err(o, r), max_err(lo, r)
        if e > 2 * e_low + atol:
            failures.append(f"{name}: err {e:.3e} > 2 * {e_low:.3e} + {atol:g}  [{repro}]")
    for name, a, b2 in zip(["dq", "dk", "dv"], [dq, dk, dv], [dq2, dk2, dv2]):
        if not torch.equal(a, b2):
            failures.append(f"{name}: backward not bitwise deterministic  [{repro}]")
    if not (out.is_contiguous() and dq.is_contiguous() and dk.is_contiguous() and dv.is_contiguous()):
        failures.append(f"outputs not contiguous  [{repro}]")


def cases(quick, dtype):
    Ls = [1, 17, 63, 64, 65, 128, 200, 1000] + ([] if quick else [4096])
    bands = [  # (left, right, block)
        (-1, -1, 1), (-1, 0, 1), (0, 0, 1), (3, 3, 1), (100, 0, 1), (5000, 5000, 1), (0, -1, 1),
        (0, 0, 16), (1, 0, 16), (2, 1, 37), (3, 0, 100), (0, 0, 64), (1, 1, 64), (15, 0, 256), (-1, 0, 7),
        (2, -1, 300), (0, 0, 5000),
    ]
    heads = [(1, 1, 1), (2, 4, 2), (1, 8, 1)]   # (B, H, Hkv): ratios 1, 2, 8
    dims = [8, 32, 40, 64, 96, 128] + ([256] if dtype == torch.float32 else [])   # fp32: SIMT path, d <= 256
    out = []
    for idx, (L, band, hd) in enumerate(itertools.product(Ls, bands, heads)):
        if quick and idx % 2:
            continue
        d = dims[idx % len(dims)]
        layout = ["contiguous", "blhd", "misaligned"][(idx // len(dims)) % 3]
        out.append((hd[0], hd[1], hd[2], L, d, band[0], band[1], band[2], layout))
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--dtypes", default="float16,bfloat16,float32")
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    device = torch.device(args.device)
    gen = torch.Generator().manual_seed(0)
    failures = []
    n = 0
    for dt in args.dtypes.split(","):
        dtype = getattr(torch, dt)
        for case in cases(args.quick, dtype):
            before = len(failures)
            run_case(case, dtype, device, gen, failures)
            for f in failures[before:]:   # as they happen: a later crash must not hide them
                print("FAIL", f, flush=True)
            n += 1
            if n % 100 == 0:
                print(f"... {n} cases, {len(failures)} failures so far", flush=True)
    # empty and H = 0 cases: no launch, right shapes
    for B, H, Hkv, L in [(0, 2, 1, 10), (1, 0, 1, 10), (1, 2, 1, 0)]:
        dtype = getattr(torch, args.dtypes.split(",")[0])
        q = torch.zeros(B, H, L, 32, device=device, dtype=dtype)
        k = torch.zeros(B, Hkv, L, 32, device=device, dtype=dtype)
        out, lse = OPS.local_attention_fwd(q, k, k, 2, 0, 1, 1.0)
        dq, dk, dv = OPS.local_attention_bwd(q, q, k, k, out, lse, 2, 0, 1, 1.0)
        if out.shape != q.shape or lse.shape != (B, H, L) or dk.shape != k.shape or (dk.numel() and dk.abs().max() != 0):
            failures.append(f"empty case B={B} H={H} Hkv={Hkv} L={L}: wrong result")
            print("FAIL", failures[-1], flush=True)
    if args.device == "cuda":
        torch.cuda.synchronize()
    print(f"{n} cases, {len(failures)} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
