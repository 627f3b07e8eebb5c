#!/usr/bin/env python
"""Benchmark of flash_window_attn's sliding-window attention against its peers (issue 4, "Benchmark and speed bar").

For each config and dtype it measures, for our op and three peers,
  - forward median time (no grad) and forward+backward median time (dq, dk, dv), CUDA events via
    triton.testing.do_bench (L2 flushed before every run), after warm-up;
  - TFLOP/s counted over the allowed band only: the allowed (i, j) pairs are counted exactly (a loop
    over query blocks), forward = 4 * d * pairs * B * H flops, forward+backward = 10 * d * pairs * B * H
    (2.5x the forward; FlashAttention's benchmark counts 3.5x for fwd+bwd, so multiply our fwd+bwd
    TFLOP/s by 1.4 to compare with its figures). Every implementation is credited with the same band
    flops, whatever it actually computes (SDPA computes all L^2 pairs);
  - peak extra memory of forward+backward (max_memory_allocated minus the baseline with the inputs,
    the pre-built dense mask / BlockMask included in the baseline; their size is reported as mask MiB);
  - (CUDA) the host's time to issue one call (median of 20 back-to-back calls): a cell whose issue
    time is >= 90 % of its measured time is host-bound (marked '^'; the bar lines say so): the GPU
    waited for the host, and the time measures the host, not the kernels.
Implementations:
  ours         flash_window_attn.sliding_window_attention / block_sliding_window_attention
  sdpa_dense   F.scaled_dot_product_attention with the dense (L, L) boolean band mask (built once,
               outside the timed region), k / v expanded over GQA groups with repeat_interleave (inside);
               skipped as "too large" when the bool mask exceeds --dense-mask-cap-gib, OOM caught
  sdpa_causal  F.scaled_dot_product_attention(is_causal=True): the exact function on the full causal
               row; on causal-local rows (window (w, 0)) it computes the full causal superset of the band
               and is shown as a reference only ("superset"), never checked against the band nor used
               in a bar; not run on non-causal patterns
  flex         torch.compile'd FlexAttention with a BlockMask (create_block_mask, built once outside the
               timed region) whose mask_mod is the exact band rule; GQA via enable_gqa=True. On CPU it
               runs uncompiled (checks the mask_mod; its time is not meaningful)
Before timing, ours is checked against a float64 reference on the full config (output and dq, dk,
dv; the tests' tolerance rule of flash_window_attn.testing); a wrong row is aborted. The reference is
the dense-mask formula of flash_window_attn.local_reference evaluated in chunks of query rows, each
against the keys its band can reach (so long sequences fit); on small problems it is itself checked
against local_attention_reference. Peers must match float64 within max(10 x PyTorch's own error, 5e-2).
Then the linear-scaling check: ours at window (1024, 0), B=1, H=16, d=128, L = 4096 ... 32768.

Bars (issue 4, on the H100): forward and forward+backward at least as fast as FlexAttention with a
BlockMask on every config; >= 3x faster than SDPA with a dense mask on the banded configs; at fixed
window, L 4k -> 32k costs <= 9x.

    python benchmarks/bench_sliding_window.py [--quick] [--dtypes fp16,bf16]
        [--configs 0,3|causal] [--impls ours,sdpa_dense,sdpa_causal,flex] [--no-scaling]
        [--device cuda|cpu] [--out benchmarks/results/sliding-<gpu>.json]
    python benchmarks/bench_sliding_window.py --device cpu --quick      # CPU smoke, tiny sizes, fp32
"""

from __future__ import annotations

import argparse
import datetime
import gc
import inspect
import json
import os
import platform
import statistics
import sys
import time
import traceback
import warnings
from dataclasses import asdict, dataclass
from typing import Callable, Dict, List, Optional, Tuple

import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))  # run from a checkout without installing
sys.path.insert(0, HERE)

from _bench_common import (HOST_BOUND_FRACTION, cuda_bench_ms, cuda_peak_extra_mb, describe_error,  # noqa: E402
                           graph_times, host_bound, host_issue_ms, peer_mismatch, slug)

DTYPES = {"fp16": torch.float16, "bf16": torch.bfloat16, "fp32": torch.float32}
PEERS = ["sdpa_dense", "sdpa_causal", "flex"]
IMPLS = ["ours"] + PEERS
FWD_FLOPS_PER_PAIR_PER_D = 4      # q k^T and p v: 2 flops per multiply-add each
FWDBWD_FLOPS_PER_PAIR_PER_D = 10  # forward + backward = 2.5 x forward (as the issue's brief asks)
SCALING_LS = [4096, 8192, 16384, 32768]
SCALING_LS_QUICK = [4096, 32768]
SCALING_WINDOW = (1024, 0)
SCALING_BAR = 9.0

# flash_window_attn is imported in main() (the CPU smoke run needs no GPU build to parse --help).
fwa = None
local_reference = None
testing = None


@dataclass
class Config:
    B: int
    H: int
    Hkv: int
    L: int
    d: int
    left: int     # the op's general band: bi - bj <= left, bj - bi <= right (-1 unbounded), bi = i // block
    right: int
    block: int
    kind: str     # "block": block_sliding_window_attention; "sliding": sliding_window_attention
    banded: bool  # a band narrower than the sequence: the ">= 3x SDPA dense" bar applies

    @property
    def pattern(self) -> str:
        if self.kind == "block":
            return f"block{self.block}x{self.left + 1}"
        if (self.left, self.right) == (-1, 0):
            return "causal"
        return f"win({self.left},{self.right})"

    @property
    def name(self) -> str:
        heads = f"H{self.H}" if self.Hkv == self.H else f"H{self.H}/{self.Hkv}"
        return f"{self.pattern} B{self.B} {heads} L{self.L} d{self.d}"

    @property
    def causal_family(self) -> bool:  # SDPA is_causal is the exact function ("exact") or a superset
        return self.kind == "sliding" and self.right == 0

    @property
    def exact_causal(self) -> bool:
        return self.kind == "sliding" and self.right == 0 and self.left < 0


def sliding(B, H, L, d, window, Hkv=None, banded=True) -> Config:
    return Config(B, H, Hkv or H, L, d, window[0], window[1], 1, "sliding", banded)


def block_cfg(B, H, L, d, block_size, window_blocks, Hkv=None) -> Config:
    return Config(B, H, Hkv or H, L, d, window_blocks - 1, 0, block_size, "block", True)


CONFIGS = [
    block_cfg(1, 12, 4096, 64, 256, 16),
    sliding(1, 4, 4096, 128, (256, 256)),
    sliding(2, 16, 16384, 128, (1024, 0)),
    sliding(1, 32, 32768, 128, (4096, 0), Hkv=8),
    sliding(8, 16, 2048, 64, (-1, 0), banded=False),
]
QUICK_CONFIGS = [0, 1, 4]

# --device cpu --quick: the same five patterns at tiny sizes (fp32), to prove the script end to end.
CPU_CONFIGS = [
    block_cfg(1, 2, 256, 32, 16, 4),
    sliding(1, 2, 256, 32, (16, 16)),
    sliding(1, 2, 256, 32, (32, 0)),
    sliding(1, 4, 256, 32, (64, 0), Hkv=2),
    sliding(2, 2, 256, 32, (-1, 0), banded=False),
]
CPU_SCALING = dict(B=1, H=2, d=32, window=(32, 0), Ls=[256, 512, 1024, 2048])


# ------------------------------------------------------------------------------------------------
# The band: exact pair count, key ranges, mask rule
# ------------------------------------------------------------------------------------------------


def allowed_pairs(L: int, left: int, right: int, block: int) -> int:
    """Exact number of allowed (i, j) pairs: a loop over query blocks."""
    nb = -(-L // block)
    total = 0
    for bi in range(nb):
        nq = min(L, (bi + 1) * block) - bi * block
        lo = 0 if left < 0 else max(0, bi - left)
        hi = nb - 1 if right < 0 else min(nb - 1, bi + right)
        total += nq * (min(L, (hi + 1) * block) - lo * block)
    return total


def key_range(s: int, e: int, L: int, left: int, right: int, block: int) -> Tuple[int, int]:
    """[lo, hi): every key that some query in [s, e) may attend."""
    bs, be = s // block, (e - 1) // block
    lo = 0 if left < 0 else max(0, (bs - left) * block)
    hi = L if right < 0 else min(L, (be + right + 1) * block)
    return lo, hi


def band_mask(qi: torch.Tensor, kj: torch.Tensor, left: int, right: int, block: int) -> torch.Tensor:
    diff = (qi // block)[:, None] - (kj // block)[None, :]  # bi - bj
    ok = torch.ones(diff.shape, dtype=torch.bool, device=diff.device)
    if left >= 0:
        ok &= diff <= left
    if right >= 0:
        ok &= -diff <= right
    return ok


def flex_mask_mod(left: int, right: int, block: int):
    def mask_mod(b, h, q_idx, kv_idx):
        bi = q_idx // block
        bj = kv_idx // block
        ok = q_idx >= 0  # all true
        if left >= 0:
            ok = ok & (bi - bj <= left)
        if right >= 0:
            ok = ok & (bj - bi <= right)
        return ok

    return mask_mod


# ------------------------------------------------------------------------------------------------
# Float64 reference, chunked over query rows
# ------------------------------------------------------------------------------------------------


def _chunk_rows(cfg: Config, elem: int = 8, budget: int = 512 << 20) -> int:
    c = 1 << 14
    while c > 16:
        lo, hi = key_range(0, min(cfg.L, c), cfg.L, cfg.left, cfg.right, cfg.block)
        width = max(hi - lo, min(cfg.L, c + (cfg.left if cfg.left >= 0 else cfg.L) * cfg.block))
        if cfg.B * cfg.H * c * min(cfg.L, width) * elem <= budget:
            break
        c //= 2
    return max(16, min(c, cfg.L))


def reference_results(cfg: Config, q, k, v, dout, dtype: torch.dtype) -> Dict[str, torch.Tensor]:
    """out, dq, dk, dv of local_attention_reference's formula run in `dtype` (logits and p @ v in
    dtype, softmax in fp32 / fp64), evaluated per chunk of query rows against the keys the chunk's
    band reaches. Gradients accumulate over chunks in fp32 (fp64 for fp64)."""
    acc = torch.promote_types(dtype, torch.float32)
    qq, kk, vv = (t.detach().to(acc).requires_grad_(True) for t in (q, k, v))
    B, H, L, d = q.shape
    group = H // k.shape[1]
    scale = d ** -0.5
    out = torch.empty((B, H, L, d), dtype=dtype, device=q.device)
    chunk = _chunk_rows(cfg)
    idx = torch.arange(L, device=q.device)
    for s in range(0, L, chunk):
        e = min(L, s + chunk)
        lo, hi = key_range(s, e, L, cfg.left, cfg.right, cfg.block)
        qc = qq[:, :, s:e].to(dtype)
        kc = kk[:, :, lo:hi].to(dtype)
        vc = vv[:, :, lo:hi].to(dtype)
        if group > 1:
            kc = kc.repeat_interleave(group, dim=1)
            vc = vc.repeat_interleave(group, dim=1)
        logits = (qc * scale) @ kc.transpose(-2, -1)
        logits = logits.to(torch.promote_types(logits.dtype, torch.float32))
        allowed = band_mask(idx[s:e], idx[lo:hi], cfg.left, cfg.right, cfg.block)
        logits = logits.masked_fill(~allowed, float("-inf"))
        p = torch.softmax(logits, dim=-1)
        oc = p.to(vc.dtype) @ vc
        torch.autograd.backward(oc, dout[:, :, s:e].to(dtype))
        out[:, :, s:e] = oc.detach()
        del logits, p, oc, allowed
    return {"out": out, "dq": qq.grad.to(dtype), "dk": kk.grad.to(dtype), "dv": vv.grad.to(dtype)}


def reference_for(cfg: Config, inp, dtype: torch.dtype) -> Dict[str, object]:
    q, k, v, dout = inp["q"], inp["k"], inp["v"], inp["dout"]
    ref64 = reference_results(cfg, q, k, v, dout, torch.float64)
    selfcheck = None
    if cfg.B * cfg.H * cfg.L * cfg.L * 8 <= (64 << 20):  # small: the chunked reference vs the library's
        qq, kk, vv = (t.detach().double().requires_grad_(True) for t in (q, k, v))
        o = local_reference.local_attention_reference(qq, kk, vv, cfg.left, cfg.right, cfg.block, cfg.d ** -0.5)
        g = torch.autograd.grad(o, (qq, kk, vv), dout.double())
        dense = {"out": o.detach(), "dq": g[0], "dk": g[1], "dv": g[2]}
        selfcheck = max(testing.normalized_error(ref64[n], dense[n]) for n in dense)
        if not selfcheck < 1e-10:
            raise AssertionError(f"chunked float64 reference differs from local_attention_reference: {selfcheck:.2e}")
    reflp = reference_results(cfg, q, k, v, dout, dtype) if dtype != torch.float64 else ref64
    pt_err = {n: testing.normalized_error(reflp[n], ref64[n]) for n in ref64}
    return {"ref64": ref64, "reflp": reflp, "pytorch_err": pt_err, "selfcheck_err": selfcheck}


# ------------------------------------------------------------------------------------------------
# Inputs and implementations: each maps (q, k, v) -> out (B, H, L, d)
# ------------------------------------------------------------------------------------------------


def make_inputs(cfg: Config, dtype: torch.dtype, device: str, seed: int = 0) -> Dict[str, torch.Tensor]:
    g = torch.Generator(device=device).manual_seed(seed)
    qs = (cfg.B, cfg.H, cfg.L, cfg.d)
    ks = (cfg.B, cfg.Hkv, cfg.L, cfg.d)
    q = torch.randn(qs, generator=g, device=device, dtype=dtype).requires_grad_()
    k = torch.randn(ks, generator=g, device=device, dtype=dtype).requires_grad_()
    v = torch.randn(ks, generator=g, device=device, dtype=dtype).requires_grad_()
    dout = torch.randn(qs, generator=g, device=device, dtype=dtype)
    return dict(q=q, k=k, v=v, dout=dout)


def impl_ours(cfg: Config) -> Callable:
    if cfg.kind == "block":
        return lambda q, k, v: fwa.block_sliding_window_attention(q, k, v, cfg.block, cfg.left + 1)
    return lambda q, k, v: fwa.sliding_window_attention(q, k, v, window=(cfg.left, cfg.right))


def _expand_gqa(cfg: Config, k, v):
    group = cfg.H // cfg.Hkv
    if group > 1:
        k = k.repeat_interleave(group, dim=1)
        v = v.repeat_interleave(group, dim=1)
    return k, v


class Unavailable(Exception):
    """An implementation that is not run on this config (the reason is its status)."""


def build_impl(name: str, cfg: Config, device: str, args) -> Tuple[Callable, Dict[str, object]]:
    """(fn, info); raises Unavailable with the status when the implementation is not run."""
    info: Dict[str, object] = {}
    if name == "ours":
        return impl_ours(cfg), info
    if name == "sdpa_dense":
        mask_bytes = cfg.L * cfg.L
        info["mask_mb"] = mask_bytes / 2**20
        if mask_bytes > args.dense_mask_cap_gib * 2**30:
            raise Unavailable(f"OOM/too large: dense bool mask {mask_bytes / 2**30:.2f} GiB > cap "
                              f"{args.dense_mask_cap_gib} GiB (--dense-mask-cap-gib)")
        try:
            idx = torch.arange(cfg.L, device=device)
            mask = band_mask(idx, idx, cfg.left, cfg.right, cfg.block)
        except torch.cuda.OutOfMemoryError:
            raise Unavailable("OOM/too large: building the dense mask ran out of memory") from None

        def fn(q, k, v):
            k, v = _expand_gqa(cfg, k, v)
            return F.scaled_dot_product_attention(q, k, v, attn_mask=mask)

        info["_keep"] = mask
        return fn, info
    if name == "sdpa_causal":
        if not cfg.causal_family:
            raise Unavailable("n/a: pattern is not causal")
        info["exact"] = cfg.exact_causal
        if not cfg.exact_causal:
            info["note"] = "superset: full causal attention, not the band (reference only, not in the bars)"

        def fn(q, k, v):
            k, v = _expand_gqa(cfg, k, v)
            return F.scaled_dot_product_attention(q, k, v, is_causal=True)

        return fn, info
    if name == "flex":
        from torch.nn.attention.flex_attention import create_block_mask, flex_attention

        gqa_native = "enable_gqa" in inspect.signature(flex_attention).parameters
        info["gqa"] = "enable_gqa" if gqa_native else "repeat_interleave"
        bm = create_block_mask(flex_mask_mod(cfg.left, cfg.right, cfg.block), None, None, cfg.L, cfg.L,
                               device=device, _compile=(device == "cuda"))
        info["mask_mb"] = sum(t.numel() * t.element_size() for t in bm.as_tuple()
                              if isinstance(t, torch.Tensor)) / 2**20
        if device == "cuda":
            flex = torch.compile(flex_attention, dynamic=False, fullgraph=True)
            info["compiled"] = True
        else:
            flex = flex_attention
            info["compiled"] = False
            info["note"] = "eager FlexAttention on CPU: checks the mask_mod; time not meaningful"

        def fn(q, k, v):
            if gqa_native:
                return flex(q, k, v, block_mask=bm, enable_gqa=cfg.H != cfg.Hkv)
            k, v = _expand_gqa(cfg, k, v)
            return flex(q, k, v, block_mask=bm)

        info["_keep"] = bm
        return fn, info
    raise ValueError(f"unknown implementation {name!r}; choose from {IMPLS}")


# ------------------------------------------------------------------------------------------------
# Measurement
# ------------------------------------------------------------------------------------------------


def sync(device: str) -> None:
    if device == "cuda":
        torch.cuda.synchronize()


def bench_ms(fn: Callable, quick: bool, device: str) -> float:
    """Median time of fn in ms: CUDA events, L2 flushed before each run, after warm-up (CUDA);
    wall clock median (CPU)."""
    if device == "cpu":
        for _ in range(2):
            fn()
        times = []
        for _ in range(5 if quick else 20):
            t0 = time.perf_counter()
            fn()
            times.append((time.perf_counter() - t0) * 1e3)
        return statistics.median(times)
    return cuda_bench_ms(fn, *((5, 25, 10) if quick else (10, 60, 30)))


def peak_extra_mb(fn: Callable, device: str) -> Optional[float]:
    if device != "cuda":
        return None  # no allocator statistics on the CPU
    return cuda_peak_extra_mb(fn)


def run_fwd_bwd(fn: Callable, inp) -> Dict[str, torch.Tensor]:
    out = fn(inp["q"], inp["k"], inp["v"])
    grads = torch.autograd.grad(out, (inp["q"], inp["k"], inp["v"]), inp["dout"])
    return {"out": out.detach(), "dq": grads[0], "dk": grads[1], "dv": grads[2]}


def check_ours(fn: Callable, dtype: torch.dtype, inp, ref) -> Dict[str, object]:
    ours = run_fwd_bwd(fn, inp)
    ok, lines = testing.compare_to_reference(ours, ref["ref64"], ref["reflp"], dtype)
    return {"ok": ok, "report": lines}


def check_peer(fn: Callable, inp, ref) -> Optional[str]:
    """Output (with and without grad) and every gradient within max(10 x PyTorch's own error, 5e-2)
    of float64: loose on purpose; this catches a different function (a wrong mask)."""
    with torch.no_grad():
        got = {"out (no grad)": fn(inp["q"], inp["k"], inp["v"])}
    got.update(run_fwd_bwd(fn, inp))
    return peer_mismatch(got, ref)


def measure_impl(name: str, fn: Callable, inp, quick: bool, ref, device: str, check: bool,
                 graph: bool = True) -> Dict:
    res: Dict[str, object] = {"status": "ok"}
    q, k, v, dout = inp["q"], inp["k"], inp["v"], inp["dout"]

    def fwd():
        with torch.no_grad():
            return fn(q, k, v)

    def fwd_bwd():
        out = fn(q, k, v)
        return torch.autograd.grad(out, (q, k, v), dout)

    try:
        for _ in range(2 if device == "cpu" else 3):  # compile / autotune / allocator warm-up
            fwd()
            fwd_bwd()
        sync(device)
        if check and ref is not None:
            wrong = check_peer(fn, inp, ref)
            if wrong:
                res["status"] = wrong
        res["fwd_ms"] = bench_ms(fwd, quick, device)
        res["fwdbwd_ms"] = bench_ms(fwd_bwd, quick, device)
        if device == "cuda":
            res["fwd_host_ms"] = host_issue_ms(fwd)
            res["fwdbwd_host_ms"] = host_issue_ms(fwd_bwd)
        res["peak_mb"] = peak_extra_mb(fwd_bwd, device)
        if device == "cuda" and graph:   # GPU time, no host time in it (CUDA graph replay; every implementation)
            graph_times(res, {"fwd": fwd, "fwdbwd": fwd_bwd}, 20 if quick else 100)
    except Exception as exc:  # noqa: BLE001 (a failing implementation is a result, not a crash)
        res["status"] = describe_error(exc)
        if not isinstance(exc, torch.cuda.OutOfMemoryError):
            res["traceback"] = traceback.format_exc(limit=4)
    finally:
        gc.collect()
        if device == "cuda":
            torch.cuda.empty_cache()
    return res


def cleanup(device: str) -> None:
    gc.collect()
    if device == "cuda":
        torch.cuda.empty_cache()


# ------------------------------------------------------------------------------------------------
# Bars and report
# ------------------------------------------------------------------------------------------------


def fmt(x, spec=".3f", none="-"):
    return none if x is None else format(x, spec)


def ok(r: Optional[Dict]) -> bool:
    return bool(r) and r.get("status") == "ok" and r.get("fwd_ms") is not None


def evaluate_bars(row: Dict) -> Dict[str, object]:
    """Each bar: True / False, or None (n/a) with a reason in bars['why']."""
    impls = row["impls"]
    ours, flex, dense = impls.get("ours"), impls.get("flex"), impls.get("sdpa_dense")
    bars: Dict[str, object] = {"why": {}}
    # (the modes in which our call was host-bound: its verdicts then measure the host)
    bars["host_bound"] = [m for m in ("fwd", "fwdbwd") if ok(ours) and host_bound(ours, m)]
    for mode in ("fwd", "fwdbwd"):
        key = f"ours_ge_flex_{mode}"
        if ok(ours) and ok(flex):
            bars[f"speedup_vs_flex_{mode}"] = flex[f"{mode}_ms"] / ours[f"{mode}_ms"]
            bars[key] = bars[f"speedup_vs_flex_{mode}"] >= 1.0
        else:
            bars[key] = None
            bars["why"][key] = ("ours " + (ours or {}).get("status", "not run") if not ok(ours)
                                else "flex " + (flex or {}).get("status", "not run"))[:110]
        key = f"ours_3x_sdpa_dense_{mode}"
        if not row["banded"]:
            bars[key] = None
            bars["why"][key] = "not a banded config"
        elif ok(ours) and ok(dense):
            bars[f"speedup_vs_sdpa_dense_{mode}"] = dense[f"{mode}_ms"] / ours[f"{mode}_ms"]
            bars[key] = bars[f"speedup_vs_sdpa_dense_{mode}"] >= 3.0
        else:
            bars[key] = None
            bars["why"][key] = ("ours " + (ours or {}).get("status", "not run") if not ok(ours)
                                else "sdpa_dense " + (dense or {}).get("status", "not run"))[:110]
    # The same checks on the GPU times (CUDA graph replay of each call, no host time in it), where
    # both sides could be captured
    g: Dict[str, object] = {}
    for mode in ("fwd", "fwdbwd"):
        t = f"{mode}_graph_ms"
        if ok(ours) and ours.get(t) is not None and ok(flex) and flex.get(t) is not None:
            g[f"speedup_vs_flex_{mode}"] = flex[t] / ours[t]
            g[f"ours_ge_flex_{mode}"] = g[f"speedup_vs_flex_{mode}"] >= 1.0
        if row["banded"] and ok(ours) and ours.get(t) is not None and ok(dense) and dense.get(t) is not None:
            g[f"speedup_vs_sdpa_dense_{mode}"] = dense[t] / ours[t]
            g[f"ours_3x_sdpa_dense_{mode}"] = g[f"speedup_vs_sdpa_dense_{mode}"] >= 3.0
    bars["graph"] = g
    return bars


def print_tables(rows: List[Dict], impl_names: List[str]) -> None:
    def cell(r, key, spec):
        if r is None:
            return "-"
        if r.get(key) is None:
            s = r.get("status", "")
            if s == "ok":
                return "-"
            if s == "OOM" or s.startswith("OOM"):
                return "OOM"
            if s.startswith("unavailable"):
                return "unavail"
            if s.startswith("n/a") or s.startswith("skipped"):
                return "n/a"
            return "FAIL"
        if spec == "tflops":
            spec = ".0f" if r[key] >= 10 else ".2f"
        mode = key[:-3] if key.endswith("_ms") else None
        return fmt(r[key], spec) + ("!" if r.get("status", "ok") != "ok" else "") \
            + ("*" if r.get("exact") is False else "") + ("^" if mode and host_bound(r, mode) else "")

    w = 36
    print("\nTimes: median ms (forward | forward+backward) and TFLOP/s over the band "
          f"(fwd {FWD_FLOPS_PER_PAIR_PER_D}*d, fwd+bwd {FWDBWD_FLOPS_PER_PAIR_PER_D}*d flops per allowed pair), "
          "peak extra MiB of forward+backward")
    print("('!' = result mismatch, '*' = a different function (superset of the band), '^' = host-bound "
          f"(issuing one call took the host >= {HOST_BOUND_FRACTION:.0%} of the measured time), OOM / FAIL / "
          "unavail / n/a = not measured)")
    head = f"{'config':<34} {'dtype':<5} " + " ".join(f"{n:>{w}}" for n in impl_names)
    print(head)
    print("-" * len(head))
    for row in rows:
        line = f"{row['name']:<34} {row['dtype']:<5} "
        if row.get("aborted"):
            print(line + f"ABORTED: {row['aborted']}")
            continue
        cells = []
        for n in impl_names:
            r = row["impls"].get(n)
            cells.append(f"{cell(r, 'fwd_ms', '.3f'):>8}|{cell(r, 'fwdbwd_ms', '.3f'):>8}|"
                         f"{cell(r, 'fwd_tflops', 'tflops'):>4}/{cell(r, 'fwdbwd_tflops', 'tflops'):<4}|"
                         f"{cell(r, 'peak_mb', '.0f'):>6}")
        print(line + " ".join(f"{c:>{w}}" for c in cells))


def scaling_ratios(points: List[Dict]) -> Dict[str, object]:
    good = [p for p in points if p.get("status") == "ok"]
    out: Dict[str, object] = {}
    if not good:
        return out
    first = good[0]
    for p in good:
        p["fwd_ratio"] = p["fwd_ms"] / first["fwd_ms"]
        p["fwdbwd_ratio"] = p["fwdbwd_ms"] / first["fwdbwd_ms"]
        p["L_ratio"] = p["L"] / first["L"]
    last = good[-1]
    if last is not first:
        out = {"L_from": first["L"], "L_to": last["L"], "fwd_ratio": last["fwd_ratio"],
               "fwdbwd_ratio": last["fwdbwd_ratio"], "L_ratio": last["L_ratio"]}
    return out


def bar_lines(rows: List[Dict], scaling: Dict[str, Dict], device: str) -> Tuple[List[str], Dict[str, int]]:
    lines, counts = [], {"PASS": 0, "FAIL": 0, "n/a": 0, "gpu PASS": 0, "gpu FAIL": 0}

    def add(verdict, text):
        counts[verdict] += 1
        lines.append(f"{verdict:<4} {text}")

    def add_gpu(passed, text):   # (the GPU-time form of a check: counted apart)
        counts["gpu PASS" if passed else "gpu FAIL"] += 1
        lines.append(f"{'pass' if passed else 'fail':<4} {text}")

    for row in rows:
        tag = f"[{row['name']} {row['dtype']}]"
        if row.get("aborted"):
            add("FAIL", f"{tag} ours differs from the float64 reference (row aborted)")
            continue
        b = row.get("bars") or {}
        g = b.get("graph") or {}
        ours = row["impls"].get("ours") or {}
        for mode, label in (("fwd", "fwd"), ("fwdbwd", "fwd+bwd")):
            hb = (f" (host-bound: ours issued in {ours[f'{mode}_host_ms']:.3f} of {ours[f'{mode}_ms']:.3f} ms)"
                  if mode in b.get("host_bound", []) else "")
            key = f"ours_ge_flex_{mode}"
            v = b.get(key)
            if v is None:
                add("n/a", f"{tag} ours >= flex {label}: {b.get('why', {}).get(key, '')}")
            else:
                add("PASS" if v else "FAIL", f"{tag} ours >= flex {label}: "
                    f"{b[f'speedup_vs_flex_{mode}']:.2f}x{hb}")
            if g.get(key) is not None:
                add_gpu(g[key], f"{tag} ours >= flex {label}, GPU time: {g[f'speedup_vs_flex_{mode}']:.2f}x")
            key = f"ours_3x_sdpa_dense_{mode}"
            if not row["banded"]:
                continue
            v = b.get(key)
            if v is None:
                add("n/a", f"{tag} ours >= 3x sdpa_dense {label}: {b.get('why', {}).get(key, '')}")
            else:
                add("PASS" if v else "FAIL", f"{tag} ours >= 3x sdpa_dense {label}: "
                    f"{b[f'speedup_vs_sdpa_dense_{mode}']:.2f}x{hb}")
            if g.get(key) is not None:
                add_gpu(g[key], f"{tag} ours >= 3x sdpa_dense {label}, GPU time: "
                        f"{g[f'speedup_vs_sdpa_dense_{mode}']:.2f}x")
    for dname, sc in scaling.items():
        r = sc.get("ratios") or {}
        if not r:
            add("n/a", f"[scaling {dname}] ours at window {SCALING_WINDOW}: "
                + (sc["points"][0].get("status", "no result") if sc.get("points") else "not run"))
            continue
        for mode, label in (("fwd", "fwd"), ("fwdbwd", "fwd+bwd")):
            v = r[f"{mode}_ratio"]
            add("PASS" if v <= SCALING_BAR else "FAIL",
                f"[scaling {dname}] ours {label} L {r['L_from']} -> {r['L_to']} ({r['L_ratio']:.0f}x L): "
                f"{v:.2f}x time (bar <= {SCALING_BAR:.0f}x)")
    if device != "cuda":
        lines.append("note: not a GPU run; the bars are defined on the H100 (this run only proves the script)")
    return lines, counts


def plot(rows: List[Dict], scaling: Dict[str, Dict], impl_names: List[str], path: str,
         device_name: str) -> Optional[str]:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        warnings.warn("matplotlib is not installed: no plot written (pip install matplotlib)")
        return None
    rows = [r for r in rows if not r.get("aborted")]
    if not rows:
        return None
    fig, axes = plt.subplots(1, 3, figsize=(max(15, 2.2 * len(rows) + 6), 5.5),
                             gridspec_kw={"width_ratios": [2, 2, 1.2]})
    labels = [f"{r['name']}\n{r['dtype']}" for r in rows]
    x = list(range(len(rows)))
    w = 0.8 / max(1, len(impl_names))
    for ax, mode, title in ((axes[0], "fwd", "forward"), (axes[1], "fwdbwd", "forward + backward")):
        for j, n in enumerate(impl_names):
            vals = [(r["impls"].get(n) or {}).get(f"{mode}_tflops") or 0.0 for r in rows]
            ax.bar([i - 0.4 + w * (j + 0.5) for i in x], vals, w, label=n)
        ax.set_xticks(x)
        ax.set_xticklabels(labels, rotation=55, ha="right", fontsize=7)
        ax.set_ylabel("TFLOP/s over the allowed band")
        ax.set_title(title)
        ax.legend(fontsize=7)
    ax = axes[2]
    for dname, sc in scaling.items():
        pts = [p for p in sc.get("points", []) if p.get("status") == "ok"]
        if pts:
            Ls = [p["L"] for p in pts]
            ax.plot(Ls, [p["fwd_ms"] for p in pts], "o-", label=f"fwd {dname}")
            ax.plot(Ls, [p["fwdbwd_ms"] for p in pts], "s-", label=f"fwd+bwd {dname}")
            ax.plot(Ls, [pts[0]["fwdbwd_ms"] * L / Ls[0] for L in Ls], "k:", linewidth=0.8)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("L")
    ax.set_ylabel("ms")
    ax.set_title(f"ours, window {SCALING_WINDOW} (dotted: linear)")
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=7)
    fig.suptitle(f"flash_window_attn sliding-window attention vs SDPA / FlexAttention ({device_name})")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def select_configs(spec: Optional[str], quick: bool, table: List[Config], quick_idx: List[int]) -> List[Config]:
    if not spec:
        return [table[i] for i in quick_idx] if quick else list(table)
    chosen: List[Config] = []
    for tok in spec.split(","):
        tok = tok.strip()
        if not tok:
            continue
        if tok.isdigit():
            if int(tok) >= len(table):
                raise SystemExit(f"--configs: index {tok} out of range; configs: "
                                 + "; ".join(f"{i}: {c.name}" for i, c in enumerate(table)))
            hits = [table[int(tok)]]
        else:
            hits = [c for c in table if tok.lower() in c.name.lower().replace(" ", "")
                    or tok.lower() in c.name.lower()]
            if not hits:
                raise SystemExit(f"--configs: no config matches {tok!r}; configs: "
                                 + "; ".join(f"{i}: {c.name}" for i, c in enumerate(table)))
        chosen.extend(h for h in hits if h not in chosen)
    return chosen


def main(argv=None) -> int:
    global fwa, local_reference, testing
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true",
                        help=f"configs {QUICK_CONFIGS}, scaling at L = {SCALING_LS_QUICK} and shorter timing; "
                             "with --device cpu: the tiny smoke sizes")
    parser.add_argument("--dtypes", default=None, help="comma list of fp16, bf16, fp32 "
                        "(default fp16,bf16 on CUDA, fp32 on CPU)")
    parser.add_argument("--configs", default=None,
                        help="comma list of config indices or name substrings (e.g. 0,3 or causal); "
                             + "; ".join(f"{i}: {c.name}" for i, c in enumerate(CONFIGS)))
    parser.add_argument("--impls", default=",".join(IMPLS), help="comma list of " + ",".join(IMPLS))
    parser.add_argument("--out", default=None, help="JSON path (PNG next to it); default "
                        "benchmarks/results/sliding-<gpu-name>.json")
    parser.add_argument("--device", default=None, choices=["cuda", "cpu"],
                        help="default cuda; cpu only with --quick (smoke run at tiny sizes)")
    parser.add_argument("--no-scaling", action="store_true", help="skip the linear-scaling check")
    parser.add_argument("--dense-mask-cap-gib", type=float, default=2.0,
                        help="skip SDPA with a dense mask when the (L, L) bool mask is larger (GiB)")
    args = parser.parse_args(argv)

    device = args.device or "cuda"
    if device == "cuda" and not torch.cuda.is_available():
        print("bench_sliding_window: needs a CUDA GPU (for a smoke run on the CPU: --device cpu --quick)")
        return 2
    if device == "cpu" and not args.quick:
        print("bench_sliding_window: --device cpu runs only the tiny smoke sizes: add --quick")
        return 2
    import flash_window_attn as _fwa
    from flash_window_attn import local_reference as _lr
    from flash_window_attn import testing as _t

    fwa, local_reference, testing = _fwa, _lr, _t

    dnames = [d.strip() for d in (args.dtypes or ("fp32" if device == "cpu" else "fp16,bf16")).split(",")
              if d.strip()]
    for d in dnames:
        if d not in DTYPES:
            raise SystemExit(f"--dtypes: unknown dtype {d!r}; choose from {list(DTYPES)}")
    impl_names = [n.strip() for n in args.impls.split(",") if n.strip()]
    for n in impl_names:
        if n not in IMPLS:
            raise SystemExit(f"--impls: unknown implementation {n!r}; choose from {IMPLS}")
    if device == "cpu":
        configs = select_configs(args.configs, False, CPU_CONFIGS, [])
        sc_B, sc_H, sc_d, sc_win, sc_Ls = (CPU_SCALING[k] for k in ("B", "H", "d", "window", "Ls"))
        device_name = "cpu"
    else:
        configs = select_configs(args.configs, args.quick, CONFIGS, QUICK_CONFIGS)
        sc_B, sc_H, sc_d, sc_win = 1, 16, 128, SCALING_WINDOW
        sc_Ls = SCALING_LS_QUICK if args.quick else SCALING_LS
        device_name = torch.cuda.get_device_name()
    do_scaling = not args.no_scaling and "ours" in impl_names

    out_json = args.out or os.path.join(HERE, "results", f"sliding-{slug(device_name)}.json")
    if os.path.isdir(out_json):
        out_json = os.path.join(out_json, f"sliding-{slug(device_name)}.json")
    os.makedirs(os.path.dirname(os.path.abspath(out_json)), exist_ok=True)
    torch._dynamo.config.cache_size_limit = max(torch._dynamo.config.cache_size_limit, 64)
    if device == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = False

    ours_on = "ours" in impl_names
    print(f"flash_window_attn sliding-window benchmark  device {device_name}  torch {torch.__version__}  "
          f"CUDA {torch.version.cuda}  ours: {'on' if ours_on else 'off'}")
    print(f"flops per allowed (i, j) pair: fwd {FWD_FLOPS_PER_PAIR_PER_D}*d, fwd+bwd {FWDBWD_FLOPS_PER_PAIR_PER_D}*d "
          "(times B*H); every implementation is credited with the band's flops")

    rows: List[Dict] = []
    scaling: Dict[str, Dict] = {}

    def write_json() -> None:
        lines, counts = bar_lines(rows, scaling, device)
        result = {
            "device": device_name,
            "torch": torch.__version__,
            "cuda": torch.version.cuda,
            "python": platform.python_version(),
            "timestamp": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "command": " ".join([os.path.basename(sys.argv[0])] + (argv if argv is not None else sys.argv[1:])),
            "timing": ("median of CUDA-event times, L2 flushed before each run (triton.testing.do_bench)"
                       if device == "cuda" else "median wall-clock time (CPU smoke run)"),
            "flops": {"fwd_per_pair": f"{FWD_FLOPS_PER_PAIR_PER_D}*d", "fwdbwd_per_pair":
                      f"{FWDBWD_FLOPS_PER_PAIR_PER_D}*d", "counted_over": "allowed (i, j) pairs only, times B*H"},
            "complete": len(rows) == len(configs) * len(dnames)
            and (not do_scaling or len(scaling) == len(dnames)
                 and all(len(s["points"]) == len(sc_Ls) for s in scaling.values())),
            "rows": rows,
            "scaling": scaling,
            "bar_lines": lines,
            "bar_counts": counts,
        }
        with open(out_json, "w") as f:
            json.dump(result, f, indent=1, default=str)

    for cfg in configs:
        pairs = allowed_pairs(cfg.L, cfg.left, cfg.right, cfg.block)
        if cfg.L <= 4096:
            dense_count = int(local_reference.local_attention_mask(cfg.L, cfg.left, cfg.right, cfg.block).sum())
            assert dense_count == pairs, (cfg.name, dense_count, pairs)
        for dname in dnames:
            dtype = DTYPES[dname]
            if device == "cuda":
                torch._dynamo.reset()
            row: Dict[str, object] = {"name": cfg.name, "dtype": dname, **asdict(cfg), "pairs": pairs,
                                      "band_fraction": pairs / cfg.L ** 2, "impls": {}}
            fwd_flops = FWD_FLOPS_PER_PAIR_PER_D * cfg.d * pairs * cfg.B * cfg.H
            fb_flops = FWDBWD_FLOPS_PER_PAIR_PER_D * cfg.d * pairs * cfg.B * cfg.H
            row["fwd_flops"], row["fwdbwd_flops"] = fwd_flops, fb_flops
            print(f"\n[{cfg.name} {dname}] band (left, right, block) = ({cfg.left}, {cfg.right}, {cfg.block}), "
                  f"{pairs} allowed pairs ({100 * pairs / cfg.L ** 2:.1f}% of L^2), "
                  f"fwd {fwd_flops / 1e12:.3f} TFLOP, fwd+bwd {fb_flops / 1e12:.3f} TFLOP", flush=True)
            inp = make_inputs(cfg, dtype, device)

            t0 = time.perf_counter()
            try:
                ref = reference_for(cfg, inp, dtype)
                msg = f"  float64 reference (chunked) in {time.perf_counter() - t0:.1f} s"
                if ref["selfcheck_err"] is not None:
                    msg += f"; vs local_attention_reference: {ref['selfcheck_err']:.1e}"
                print(msg, flush=True)
            except torch.cuda.OutOfMemoryError:
                ref = None
                print("  float64 reference: OOM (results not checked)")
            cleanup(device)

            built: Dict[str, Tuple[Callable, Dict]] = {}
            for name in impl_names:
                try:
                    built[name] = build_impl(name, cfg, device, args)
                except Unavailable as exc:
                    row["impls"][name] = {"status": str(exc)}
                except Exception as exc:  # noqa: BLE001
                    row["impls"][name] = {"status": describe_error(exc), "traceback": traceback.format_exc(limit=4)}

            if "ours" in built and ref is not None:
                try:
                    chk = check_ours(built["ours"][0], dtype, inp, ref)
                    row["correctness"] = chk
                    print("  ours vs float64 (output, dq, dk, dv):", "ok" if chk["ok"] else "WRONG")
                    for line in chk["report"]:
                        print("   ", line)
                    if not chk["ok"]:
                        row["aborted"] = "ours differs from the float64 reference"
                except Exception as exc:  # noqa: BLE001
                    row["impls"]["ours"] = {"status": describe_error(exc), "traceback": traceback.format_exc(limit=4)}
                    built.pop("ours")
                    print(f"  ours failed: {row['impls']['ours']['status']}")
                cleanup(device)
            if row.get("aborted"):
                rows.append(row)
                write_json()
                del inp, ref, built
                cleanup(device)
                continue

            if device == "cpu" and "flex" in built:
                # FlexAttention has no CPU backward: check the mask_mod with an eager forward, time nothing.
                fn, info = built.pop("flex")
                try:
                    with torch.no_grad():
                        o = fn(*(inp[n].detach() for n in ("q", "k", "v")))
                    err = testing.normalized_error(o, ref["ref64"]["out"]) if ref is not None else float("nan")
                    good = err <= max(10 * ref["pytorch_err"]["out"], 5e-2) if ref is not None else False
                    row["impls"]["flex"] = {"status": f"skipped on CPU (no CPU backward); eager forward with the "
                                            f"BlockMask vs float64: {'ok' if good else 'WRONG'} (err {err:.1e})"}
                except Exception as exc:  # noqa: BLE001
                    row["impls"]["flex"] = {"status": "skipped on CPU; eager forward failed: " + describe_error(exc)}
            for name in impl_names:
                if name not in built:
                    print(f"  {name:<12} {row['impls'][name]['status']}", flush=True)
                    continue
                fn, info = built[name]
                check = name != "ours" and info.get("exact", True)  # ours: checked strictly above
                res = measure_impl(name, fn, inp, args.quick, ref, device, check)
                res.update({k: v for k, v in info.items() if not k.startswith("_")})
                if res.get("fwd_ms") is not None:
                    res["fwd_tflops"] = fwd_flops / (res["fwd_ms"] * 1e-3) / 1e12
                    res["fwdbwd_tflops"] = fb_flops / (res["fwdbwd_ms"] * 1e-3) / 1e12
                    extra = "" if res["status"] == "ok" else res["status"]
                    if res.get("note"):
                        extra += f" [{res['note']}]"
                    print(f"  {name:<12} fwd {res['fwd_ms']:9.4f} ms {res['fwd_tflops']:7.3g} TFLOP/s  "
                          f"fwd+bwd {res['fwdbwd_ms']:9.4f} ms {res['fwdbwd_tflops']:7.3g} TFLOP/s  "
                          f"peak {fmt(res['peak_mb'], '.0f', 'n/a')} MiB  "
                          f"mask {fmt(res.get('mask_mb'), '.1f', '-')} MiB  "
                          + (f"GPU (graph) {res['fwd_graph_ms']:.4f} / {res['fwdbwd_graph_ms']:.4f} ms  "
                             if res.get("fwdbwd_graph_ms") is not None else
                             (f"graph: {res['graph_status']}  " if res.get("graph_status") else "")) + extra, flush=True)
                else:
                    print(f"  {name:<12} {res['status']}", flush=True)
                row["impls"][name] = res
            row["bars"] = evaluate_bars(row)
            rows.append(row)
            write_json()  # after every row: a run stopped by a time limit keeps what it measured
            del inp, ref, built
            cleanup(device)

    if do_scaling:
        print(f"\nLinear scaling: ours at window {sc_win}, B={sc_B}, H={sc_H}, d={sc_d}, L = {sc_Ls} "
              f"(bar: L {sc_Ls[0]} -> {sc_Ls[-1]} costs <= {SCALING_BAR:.0f}x)")
        for dname in dnames:
            dtype = DTYPES[dname]
            sc = {"window": list(sc_win), "B": sc_B, "H": sc_H, "d": sc_d, "points": []}
            scaling[dname] = sc
            for L in sc_Ls:
                cfg = sliding(sc_B, sc_H, L, sc_d, sc_win)
                point: Dict[str, object] = {"L": L}
                try:
                    fn, _ = build_impl("ours", cfg, device, args)
                    inp = make_inputs(cfg, dtype, device)
                    point.update(measure_impl("ours", fn, inp, args.quick, None, device, False, graph=False))
                    del inp
                except Unavailable as exc:
                    point["status"] = str(exc)
                cleanup(device)
                sc["points"].append(point)
                sc["ratios"] = scaling_ratios(sc["points"])
                if point.get("fwd_ms") is not None:
                    print(f"  {dname} L={L:<6} fwd {point['fwd_ms']:9.4f} ms (x{point.get('fwd_ratio', 1):.2f})  "
                          f"fwd+bwd {point['fwdbwd_ms']:9.4f} ms (x{point.get('fwdbwd_ratio', 1):.2f})  "
                          f"[L x{point.get('L_ratio', 1):.0f}]", flush=True)
                else:
                    print(f"  {dname} L={L:<6} {point['status']}", flush=True)
                write_json()
                if str(point.get("status", "")).startswith("unavailable"):
                    break

    print_tables(rows, impl_names)
    lines, counts = bar_lines(rows, scaling, device)
    print("\nBar checks (ours >= flex on every config; ours >= 3x sdpa_dense on banded configs; "
          f"scaling <= {SCALING_BAR:.0f}x):")
    for line in lines:
        print("  " + line)
    print(f"  summary: {counts['PASS']} PASS, {counts['FAIL']} FAIL, {counts['n/a']} n/a; on GPU times (CUDA "
          f"graph replay, lower-case lines): {counts['gpu PASS']} pass, {counts['gpu FAIL']} fail")

    write_json()
    print(f"\nwrote {out_json}")
    png = plot(rows, scaling, impl_names, os.path.splitext(out_json)[0] + ".png", device_name)
    if png:
        print(f"wrote {png}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
