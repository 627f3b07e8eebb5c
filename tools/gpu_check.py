"""Developer check for the CUDA kernels: correctness of fwd and all grads vs float64 over a grid of
problems, determinism, then rough timings. Prints one line per problem and a summary.

    python tools/gpu_check.py [--quick] [--time]
"""
import argparse
import math
import sys
import time

import torch
import torch.nn.functional as F

import flash_window_attn  # noqa: F401  (loads the ops)

ops = torch.ops.flash_window_attn


def ref64(q, k, v, bias, mask, ls, scale):
    q, k, v = q.double(), k.double(), v.double()
    B, H, N, d = q.shape
    if ls is not None:
        s = F.normalize(q, dim=-1) @ F.normalize(k, dim=-1).transpose(-2, -1)
        s = s * torch.clamp(ls.double().reshape(1, H, 1, 1), max=math.log(100.0)).exp()
    else:
        s = (q * scale) @ k.transpose(-2, -1)
    if bias is not None:
        s = s + bias.double().reshape(1, H, N, N)
    if mask is not None:
        nW = mask.shape[0]
        s = (s.view(B // nW, nW, H, N, N) + mask.double()[None, :, None]).view(B, H, N, N)
    allneg = torch.isneginf(s).all(-1, keepdim=True)
    p = torch.where(allneg, 0.0, torch.softmax(s, -1))
    return p @ v


def low_prec_ref(q, k, v, bias, mask, ls, scale):
    """The eager formula in the inputs' precision (softmax in fp32), for the error budget."""
    B, H, N, d = q.shape
    if ls is not None:
        s = F.normalize(q, dim=-1) @ F.normalize(k, dim=-1).transpose(-2, -1)
        s = s * torch.clamp(ls.reshape(1, H, 1, 1), max=math.log(100.0)).exp()
    else:
        s = (q * scale) @ k.transpose(-2, -1)
    if bias is not None:
        s = s + bias.reshape(1, H, N, N)
    if mask is not None:
        nW = mask.shape[0]
        s = (s.view(B // nW, nW, H, N, N) + mask[None, :, None]).view(B, H, N, N)
    return s.float().softmax(-1).to(v.dtype) @ v


def make_problem(B, H, N, d, dtype, cosine, has_bias, has_mask, nW, packed, dev="cuda"):
    g = torch.Generator(device=dev).manual_seed(B * 7 + N * 13 + d)
    if packed:
        qkv = torch.randn(B, N, 3, H, d, device=dev, dtype=dtype, generator=g)
        q, k, v = qkv.permute(2, 0, 3, 1, 4).unbind(0)
    else:
        q, k, v = (torch.randn(B, H, N, d, device=dev, dtype=dtype, generator=g) for _ in range(3))
    bias = (torch.randn(H, N, N, device=dev, generator=g) * 2) if has_bias else None
    mask = None
    if has_mask:
        mask = torch.where(torch.rand(nW, N, N, device=dev, generator=g) < 0.3, -100.0, 0.0)
    ls = (torch.rand(H, 1, 1, device=dev, generator=g) * 3 + 1.0) if cosine else None
    scale = d ** -0.5
    return q, k, v, bias, mask, ls, scale


def rel_err(x, ref, floor=1e-3):
    """Max abs error over the reference's max abs, with a floor for references that vanish
    (e.g. dq, dk, dbias at N = 1, where the softmax gradient is exactly zero)."""
    return ((x.double() - ref).abs().max() / ref.abs().max().clamp_min(floor)).item()


def check(B, H, N, d, dtype, cosine, has_bias, has_mask, nW=4, packed=False):
    q, k, v, bias, mask, ls, scale = make_problem(B, H, N, d, dtype, cosine, has_bias, has_mask, nW, packed)
    leaves64 = [t.detach().double().requires_grad_() for t in (q, k, v)]
    b64 = bias.detach().double().requires_grad_() if bias is not None else None
    ls64 = ls.detach().double().requires_grad_() if ls is not None else None
    out64 = ref64(*leaves64, b64, mask, ls64, scale)
    dout = torch.randn_like(out64)
    out64.backward(dout)
    # low precision eager error budget
    lp = [t.detach().clone().requires_grad_() for t in (q, k, v)]
    blp = bias.detach().clone().requires_grad_() if bias is not None else None
    lslp = ls.detach().clone().requires_grad_() if ls is not None else None
    outlp = low_prec_ref(*lp, blp, mask, lslp, scale)
    outlp.backward(dout.to(dtype))

    res = []
    for rep in range(2):
        # poison the allocator
        junk = torch.full((64 << 20,), float("nan"), device="cuda")
        del junk
        out, lse, qk_inv_norm = ops.window_attention_fwd(q, k, v, bias, mask, ls, 1.0 if cosine else scale, True)
        grads = ops.window_attention_bwd(dout.to(dtype), q, k, v, out, lse, bias, mask, ls, 1.0 if cosine else scale,
                                         qk_inv_norm)
        torch.cuda.synchronize()
        res.append((out, grads))
    out, (dq, dk, dv, dbias, dls) = res[0]
    det = all(torch.equal(a, b) for a, b in zip([res[0][0], *res[0][1]], [res[1][0], *res[1][1]]))
    names = ["out", "dq", "dk", "dv"] + (["dbias"] if bias is not None else []) + (["dls"] if ls is not None else [])
    ours = [out, dq, dk, dv] + ([dbias] if bias is not None else []) + ([dls] if ls is not None else [])
    refs = [out64, *(t.grad for t in leaves64)] + ([b64.grad] if bias is not None else []) + ([ls64.grad] if ls is not None else [])
    lows = [outlp, *(t.grad for t in lp)] + ([blp.grad] if bias is not None else []) + ([lslp.grad] if ls is not None else [])
    ok = det
    parts = []
    for n, o, r, l in zip(names, ours, refs, lows):
        e = rel_err(o, r)
        el = rel_err(l, r)
        good = math.isfinite(e) and e <= 2 * el + 2e-3
        ok &= good
        parts.append(f"{n}:{e:.1e}/{el:.1e}{'' if good else '!!'}")
    tag = f"B={B} H={H} N={N} d={d} {str(dtype)[6:]} cos={int(cosine)} bias={int(has_bias)} mask={int(has_mask)} packed={int(packed)}"
    print(("OK  " if ok else "FAIL") + f" {tag} det={int(det)} " + " ".join(parts), flush=True)
    return ok


def bench(fn, iters=20, reps=7):
    """Median over `reps` of the mean time of `iters` back-to-back calls (host overhead hidden
    as long as the GPU is the bottleneck)."""
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    ts = []
    for _ in range(reps):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        for _ in range(iters):
            fn()
        e.record()
        torch.cuda.synchronize()
        ts.append(s.elapsed_time(e) / iters)
    ts.sort()
    return ts[len(ts) // 2]


def timing(B, H, N, d, dtype, nW):
    q, k, v, bias, mask, ls, scale = make_problem(B, H, N, d, dtype, True, True, True, nW, True)
    out, lse, qk_inv_norm = ops.window_attention_fwd(q, k, v, bias, mask, ls, 1.0, True)
    dout = torch.randn_like(out)
    tf = bench(lambda: ops.window_attention_fwd(q, k, v, bias, mask, ls, 1.0))
    tb = bench(lambda: ops.window_attention_bwd(dout, q, k, v, out, lse, bias, mask, ls, 1.0, qk_inv_norm))
    nbytes = 4 * B * H * N * d * q.element_size()
    print(f"TIME B={B} H={H} N={N} d={d} {str(dtype)[6:]}: fwd {tf:.4f} ms  bwd {tb:.4f} ms  "
          f"fwd GB/s {nbytes / tf / 1e6:.0f}", flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--time", action="store_true")
    a = ap.parse_args()
    ok = True
    t0 = time.time()
    for dtype in (torch.float16, torch.bfloat16, torch.float32):
        for (B, H, N, d) in [(8, 2, 49, 32), (8, 2, 64, 32), (4, 2, 1, 16), (4, 2, 7, 24), (8, 2, 100, 32),
                             (8, 2, 144, 64), (4, 3, 192, 32), (4, 2, 256, 128), (4, 2, 576, 32),
                             (2, 2, 1024, 64), (8, 2, 49, 128), (8, 2, 64, 64), (4, 2, 300, 40)]:
            for cosine in (True, False):
                for (hb, hm) in ((True, True), (False, False), (True, False), (False, True)):
                    if a.quick and not (hb == hm):
                        continue
                    ok &= check(B, H, N, d, dtype, cosine, hb, hm, nW=4 if B % 4 == 0 else 2,
                                packed=(N % 2 == 0))
    print(f"correctness done in {time.time() - t0:.0f}s: {'ALL OK' if ok else 'FAILURES'}", flush=True)
    if a.time:
        for dtype in (torch.float16, torch.bfloat16):
            for (B, H, N, d, nW) in [(4096, 3, 64, 32, 64), (4096, 3, 49, 32, 64), (512, 4, 256, 32, 16),
                                     (1024, 6, 256, 32, 16), (512, 4, 144, 32, 16), (128, 6, 576, 32, 4),
                                     (256, 12, 64, 32, 4)]:
                timing(B, H, N, d, dtype, nW)
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
