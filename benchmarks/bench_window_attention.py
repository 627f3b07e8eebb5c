#!/usr/bin/env python
"""Benchmark of flash_window_attn.window_attention against its peers (issue 2, "Benchmark and speed bar").

For each config (B_, H, N, d) and dtype it measures, for our op and four peers,
  - forward median time (no grad) and forward+backward median time (all gradients: q, k, v, bias,
    logit_scale), CUDA events via triton.testing.do_bench (L2 flushed before every run), after warm-up;
  - peak extra memory of forward+backward (max_memory_allocated minus the baseline with inputs);
  - the host's time to issue one call (median of 20 back-to-back calls): a time whose issue time is
    >= 90 % of it is host-bound (marked '^', and listed after our row's bars): the GPU waited for
    the host, so the time measures the host, not the kernels;
  - the GPU time of the forward and of the forward+backward, for ours and every peer alike: the call
    captured in a CUDA graph and replayed (median of 100 replays, L2 flushed before each), so no
    host time is in it; the bars are evaluated on these times too (a second table);
and the HBM floor: the bytes of q, k, v read and out written, at the device-to-device copy rate
measured once on this GPU. Peers:
  eager    the reference formula as timm writes it (flash_window_attn.reference)
  compile  torch.compile of that function
  sdpa     F.scaled_dot_product_attention with bias + mask combined into one float attn_mask
           (normalised q with the logit scale folded in, scale=1); windows b share mask[b % nW],
           so (B_, H) is viewed as (B_ / nW, nW * H) and the (nW * H, N, N) mask broadcasts
  flex     compiled FlexAttention, normalised q * logit scale folded in, bias and mask added in
           score_mod from captured tensors (the bias gradient flows through score_mod); compiled
           with dynamic shapes when N % 16 != 0 (with a static N = 49, torch 2.11's compiled
           FlexAttention returns wrong outputs, even without a score_mod)
Before timing, ours is checked against the float64 reference on the full config (output and every
gradient; the FlashAttention-style rule of flash_window_attn.testing); a wrong row is aborted.
A peer that fails (OOM, unsupported) is reported as such.

Bars (issue 2, on the H100, every config, both dtypes): forward >= 3x the fastest peer and within
1.5x the HBM floor for N <= 256; forward+backward >= 3x the fastest peer; peak memory <= SDPA's.

    python benchmarks/bench_window_attention.py [--quick] [--dtypes fp16,bf16] [--configs 0,3|N64]
        [--impls ours,eager,compile,sdpa,flex] [--out benchmarks/results/<gpu>.json]
"""

from __future__ import annotations

import argparse
import datetime
import functools
import gc
import json
import math
import os
import platform
import sys
import traceback
import warnings
from dataclasses import asdict, dataclass
from typing import Callable, Dict, List, Optional

import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))  # run from a checkout without installing
sys.path.insert(0, HERE)  # _bench_common (also when imported from tools/)

from _bench_common import (  # noqa: E402
    HOST_BOUND_FRACTION,
    cuda_bench_ms,
    cuda_event_median_ms,
    cuda_peak_extra_mb,
    describe_error,
    graph_times,
    host_bound,
    host_issue_ms,
    peer_mismatch,
    slug,
)
from flash_window_attn import window_attention  # noqa: E402
from flash_window_attn.reference import (  # noqa: E402
    LN100_F32,
    reference_float64,
    reference_outputs_and_grads,
    swin_shift_mask,
    window_attention_reference_unguarded,
)
from flash_window_attn.testing import (  # noqa: E402
    compare_to_reference,
    normalized_error,
    reduction_magnitudes,
)

DTYPES = {"fp16": torch.float16, "bf16": torch.bfloat16}
PEERS = ["eager", "compile", "sdpa", "flex"]
IMPLS = ["ours"] + PEERS


@dataclass
class Config:
    B: int
    H: int
    N: int
    d: int
    nW: int
    window: int  # window side (N = window ** 2)
    version: str  # "v2": cosine + logit_scale; "v1": scale

    @property
    def name(self) -> str:
        return f"{self.version} B{self.B} H{self.H} N{self.N} d{self.d}"

    @property
    def grid(self) -> int:  # feature-map side in tokens with nW windows per image
        return int(math.isqrt(self.nW)) * self.window


# Every config has bias (needs grad) and the shifted-window mask; V2 rows a logit scale (needs grad).
CONFIGS = [
    Config(4096, 3, 64, 32, 64, 8, "v2"),
    Config(512, 4, 256, 32, 16, 16, "v2"),
    Config(1024, 6, 256, 32, 16, 16, "v2"),
    Config(512, 4, 144, 32, 16, 12, "v2"),
    Config(128, 6, 576, 32, 4, 24, "v2"),
    Config(4096, 3, 49, 32, 64, 7, "v2"),
    Config(256, 12, 64, 32, 4, 8, "v2"),
    Config(4096, 3, 49, 32, 64, 7, "v1"),
    Config(1024, 4, 64, 64, 16, 8, "v2"),
]
QUICK_CONFIGS = [0, 1, 7]


# ------------------------------------------------------------------------------------------------
# Inputs
# ------------------------------------------------------------------------------------------------


def make_inputs(cfg: Config, dtype: torch.dtype, seed: int = 0) -> Dict[str, Optional[torch.Tensor]]:
    g = torch.Generator(device="cuda").manual_seed(seed)
    dev = "cuda"
    shape = (cfg.B, cfg.H, cfg.N, cfg.d)
    q, k, v = (torch.randn(shape, generator=g, device=dev, dtype=dtype).requires_grad_() for _ in range(3))
    if cfg.version == "v2":
        # Swin V2: bias = 16 * sigmoid(cpb_mlp(...)), fp32 parameter path (the AMP case)
        bias = 16 * torch.sigmoid(torch.randn(cfg.H, cfg.N, cfg.N, generator=g, device=dev))
        ls = (math.log(10.0) + 0.3 * torch.randn(cfg.H, 1, 1, generator=g, device=dev)).clamp(max=LN100_F32)
        ls.requires_grad_()
    else:
        bias = 0.02 * torch.randn(cfg.H, cfg.N, cfg.N, generator=g, device=dev)
        ls = None
    bias.requires_grad_()
    mask = swin_shift_mask(cfg.grid, cfg.window, cfg.window // 2, device=dev)
    assert mask.shape[0] == cfg.nW
    dout = torch.randn(shape, generator=g, device=dev, dtype=dtype)
    return dict(q=q, k=k, v=v, bias=bias, mask=mask, logit_scale=ls, dout=dout)


def grad_leaves(inp) -> List[torch.Tensor]:
    return [t for t in (inp["q"], inp["k"], inp["v"], inp["bias"], inp["logit_scale"]) if t is not None]


GRAD_KEYS = ["dq", "dk", "dv", "dbias", "dlogit_scale"]


# ------------------------------------------------------------------------------------------------
# Implementations: each maps (q, k, v, bias, mask, logit_scale) -> out (B_, H, N, d)
# ------------------------------------------------------------------------------------------------


def impl_ours(q, k, v, bias, mask, logit_scale):
    return window_attention(q, k, v, bias, mask, logit_scale=logit_scale)


def op_forward_us(cfg: Config, dtype: torch.dtype, runs: int = 300) -> float:
    """Our op's forward alone at ``cfg`` (no grad): the median of ``runs`` CUDA-event times in us,
    L2 flushed, after 20 warm-up calls (the A/B scripts under results/ that time kernel forms
    picked by environment switches)."""
    inp = make_inputs(cfg, dtype)
    args = (inp["q"], inp["k"], inp["v"], inp["bias"], inp["mask"], inp["logit_scale"])

    def fwd():
        with torch.no_grad():
            return impl_ours(*args)

    return 1000 * cuda_event_median_ms(fwd, runs, flush_l2=True, warmup=20)


def impl_eager(q, k, v, bias, mask, logit_scale):
    return window_attention_reference_unguarded(q, k, v, bias, mask, logit_scale=logit_scale)


def _fold_scale(q, k, logit_scale):
    """q, k with the attention scale folded into q (the logits are then q' k'^T)."""
    H, d = q.shape[1], q.shape[-1]
    if logit_scale is not None:
        alpha = torch.clamp(logit_scale.reshape(1, H, 1, 1), max=LN100_F32).exp()
        return (F.normalize(q, dim=-1) * alpha).to(q.dtype), F.normalize(k, dim=-1)
    return q * d ** -0.5, k


def impl_sdpa(q, k, v, bias, mask, logit_scale):
    B_, H, N, d = q.shape
    qs, ks = _fold_scale(q, k, logit_scale)
    nW = mask.shape[0] if mask is not None else 1
    attn_mask = bias.reshape(1, H, N, N)
    if mask is not None:
        attn_mask = attn_mask + mask.reshape(nW, 1, N, N)
    attn_mask = attn_mask.expand(nW, H, N, N).to(q.dtype).reshape(nW * H, N, N)
    # windows b and b + nW share mask[b % nW]: (B_, H) -> (B_ / nW, nW * H), the mask broadcasts
    view = lambda t: t.reshape(B_ // nW, nW * H, N, d)  # noqa: E731
    out = F.scaled_dot_product_attention(view(qs), view(ks), view(v), attn_mask=attn_mask, scale=1.0)
    return out.reshape(B_, H, N, d)


def _flex_fn(q, k, v, bias, mask, logit_scale, nW: int):
    from torch.nn.attention.flex_attention import flex_attention

    qs, ks = _fold_scale(q, k, logit_scale)

    def score_mod(score, b, h, q_idx, kv_idx):
        s = score + bias[h, q_idx, kv_idx]
        if mask is not None:
            s = s + mask[b % nW, q_idx, kv_idx]
        return s

    return flex_attention(qs, ks, v, score_mod=score_mod, scale=1.0)


def build_impls(cfg: Config, names: List[str]) -> Dict[str, Callable]:
    impls = {}
    for name in names:
        if name == "ours":
            impls[name] = impl_ours
        elif name == "eager":
            impls[name] = impl_eager
        elif name == "compile":
            impls[name] = torch.compile(impl_eager, dynamic=False)
        elif name == "sdpa":
            impls[name] = impl_sdpa
        elif name == "flex":
            # torch 2.11: compiled FlexAttention with a static N that is not a multiple of 16 (N = 49)
            # returns wrong outputs, even without score_mod; with dynamic shapes it is correct.
            impls[name] = torch.compile(functools.partial(_flex_fn, nW=cfg.nW), dynamic=cfg.N % 16 != 0,
                                        fullgraph=True)
        else:
            raise ValueError(f"unknown implementation {name!r}; choose from {IMPLS}")
    return impls


# ------------------------------------------------------------------------------------------------
# Measurement
# ------------------------------------------------------------------------------------------------


def bench_ms(fn: Callable, quick: bool) -> float:
    """Median time of fn in ms (CUDA events, L2 flushed before each run, after warm-up)."""
    return cuda_bench_ms(fn, *((10, 40, 20) if quick else (25, 200, 100)))


def copy_rate_bytes_per_ms(quick: bool) -> float:
    """Device-to-device copy rate: (bytes read + bytes written) / time of a 1 GiB copy."""
    nbytes = 1 << 30
    src = torch.empty(nbytes, dtype=torch.uint8, device="cuda")
    dst = torch.empty_like(src)
    src.fill_(1)
    ms = bench_ms(functools.partial(dst.copy_, src), quick)
    return 2 * nbytes / ms


def _chunk_windows(cfg: Config) -> int:
    per_window = cfg.H * cfg.N * cfg.N * 8  # one float64 attention matrix
    chunk = max(1, (256 << 20) // per_window)
    return max(cfg.nW, chunk // cfg.nW * cfg.nW)


def reference_for(cfg: Config, inp) -> Dict[str, object]:
    """Float64 reference (output and gradients, kept on the CPU), the same formula in the input
    dtype's error against it per key, and the magnitudes for the reduced gradients."""
    args = (inp["q"], inp["k"], inp["v"], inp["bias"], inp["mask"])
    kw = dict(logit_scale=inp["logit_scale"], dout=inp["dout"])
    chunk = _chunk_windows(cfg)
    ref64 = reference_float64(*args, **kw, chunk_windows=chunk)
    reflp = reference_outputs_and_grads(*args, **kw, chunk_windows=chunk)
    mags: Dict[str, torch.Tensor] = {}
    for start in range(0, cfg.B, chunk):
        sl = slice(start, start + chunk)
        m = reduction_magnitudes(inp["q"][sl], inp["k"][sl], inp["v"][sl], inp["bias"], inp["mask"],
                                 logit_scale=inp["logit_scale"], dout=inp["dout"][sl])
        for key, val in m.items():
            mags[key] = mags[key] + val if key in mags else val
    ref64 = {k: (v.cpu() if v is not None else None) for k, v in ref64.items()}
    reflp = {k: (v.cpu() if v is not None else None) for k, v in reflp.items()}
    pt_err = {k: normalized_error(reflp[k], ref64[k]) for k in ref64 if ref64[k] is not None}
    return {"ref64": ref64, "reflp": reflp, "pytorch_err": pt_err, "magnitudes": mags}


def run_fwd_bwd(fn: Callable, inp) -> Dict[str, torch.Tensor]:
    args = (inp["q"], inp["k"], inp["v"], inp["bias"], inp["mask"], inp["logit_scale"])
    out = fn(*args)
    grads = torch.autograd.grad(out, grad_leaves(inp), inp["dout"])
    keys = [k for k in GRAD_KEYS if k != "dlogit_scale" or inp["logit_scale"] is not None]
    return {"out": out.detach(), **dict(zip(keys, grads))}


def check_ours(cfg: Config, dtype: torch.dtype, inp, ref: Dict[str, object]) -> Dict[str, object]:
    """Ours vs the float64 reference over the full config, with the tests' tolerance rule."""
    ours = run_fwd_bwd(impl_ours, inp)
    ok, lines = compare_to_reference(ours, ref["ref64"], ref["reflp"], dtype, magnitudes=ref["magnitudes"])
    return {"ok": ok, "report": lines}


def check_peer(fn: Callable, inp, ref: Dict[str, object]) -> Optional[str]:
    """A peer must compute the same function (see peer_mismatch; SDPA needs bias + mask in q's
    dtype, so peers round differently): output with and without grad, and every gradient."""
    args = (inp["q"], inp["k"], inp["v"], inp["bias"], inp["mask"], inp["logit_scale"])
    with torch.no_grad():
        got = {"out (no grad)": fn(*args)}
    got.update(run_fwd_bwd(fn, inp))
    return peer_mismatch(got, ref)


def measure_impl(name: str, fn: Callable, inp, quick: bool, ref: Optional[Dict[str, object]]) -> Dict:
    res: Dict[str, object] = {"status": "ok"}
    args = (inp["q"], inp["k"], inp["v"], inp["bias"], inp["mask"], inp["logit_scale"])
    leaves = grad_leaves(inp)
    dout = inp["dout"]

    def fwd():
        with torch.no_grad():
            return fn(*args)

    def fwd_bwd():
        out = fn(*args)
        return torch.autograd.grad(out, leaves, dout)

    try:
        for _ in range(3):  # compile / autotune / allocator warm-up outside the timed region
            fwd()
            fwd_bwd()
        torch.cuda.synchronize()
        if ref is not None and name != "ours":  # ours was checked with the strict rule already
            wrong = check_peer(fn, inp, ref)
            if wrong:
                res["status"] = wrong
        res["fwd_ms"] = bench_ms(fwd, quick)
        res["fwdbwd_ms"] = bench_ms(fwd_bwd, quick)
        res["fwd_host_ms"] = host_issue_ms(fwd)
        res["fwdbwd_host_ms"] = host_issue_ms(fwd_bwd)
        res["peak_mb"] = cuda_peak_extra_mb(fwd_bwd)
        graph_times(res, {"fwd": fwd, "fwdbwd": fwd_bwd}, 20 if quick else 100)
    except Exception as exc:  # noqa: BLE001 (a failing peer is a result, not a crash)
        res["status"] = describe_error(exc)
        if not isinstance(exc, torch.cuda.OutOfMemoryError):
            res["traceback"] = traceback.format_exc(limit=4)
    finally:
        gc.collect()
        torch.cuda.empty_cache()
    return res


# ------------------------------------------------------------------------------------------------
# Report
# ------------------------------------------------------------------------------------------------


def fmt(x, spec=".3f", none="-"):
    return none if x is None else format(x, spec)


def evaluate_bars(row: Dict) -> Dict:
    impls = row["impls"]
    ours = impls.get("ours", {})
    ok = lambda r: r.get("status") == "ok"  # noqa: E731
    peers = {n: r for n, r in impls.items() if n != "ours" and ok(r)}
    bars: Dict[str, object] = {}
    if not ok(ours) or not peers:
        return bars
    bars.update(speed_and_floor_bars(row, ours, peers, "_ms"))
    bars["hbm_floor_fraction"] = row["hbm_floor_ms"] / ours["fwd_ms"]
    sdpa = impls.get("sdpa")
    bars["peak_le_sdpa"] = ours["peak_mb"] <= sdpa["peak_mb"] if sdpa and ok(sdpa) else None
    checks = [bars["fwd_3x"], bars["fwdbwd_3x"], bars["fwd_within_1p5x_floor"], bars["peak_le_sdpa"]]
    bars["all_pass"] = all(c for c in checks if c is not None)
    # the modes in which our call was host-bound (its speed-up then measures the host)
    bars["host_bound"] = [m for m in ("fwd", "fwdbwd") if host_bound(ours, m)]
    bars["graph"] = evaluate_graph_bars(row, peers)
    return bars


def evaluate_graph_bars(row: Dict, peers: Dict[str, Dict]) -> Dict:
    """The speed and HBM-floor bars on the GPU times (CUDA graph replay, no host time) of ours and
    of every peer that ran; ``peers_missing`` names the peers whose calls could not be captured (a
    verdict is then given only against the others, and says so)."""
    ours = row["impls"]["ours"]
    g: Dict[str, object] = {}
    if ours.get("fwd_graph_ms") is None or ours.get("fwdbwd_graph_ms") is None:
        g["why"] = "ours: " + str(ours.get("graph_status", "no graph times"))
        return g
    have = {n: r for n, r in peers.items() if r.get("fwd_graph_ms") is not None and r.get("fwdbwd_graph_ms") is not None}
    g["peers_missing"] = sorted(set(peers) - set(have))
    if not have:
        g["why"] = "no peer could be captured"
        return g
    g.update(speed_and_floor_bars(row, ours, have, "_graph_ms"))
    return g


def speed_and_floor_bars(row: Dict, ours: Dict, peers: Dict[str, Dict], suffix: str) -> Dict:
    """The speed bars (fastest peer, speed-up, >= 3x; forward and fwd+bwd) and the forward's HBM-floor
    bar from the times ``{mode}{suffix}`` (``_ms`` per call, ``_graph_ms`` GPU time) of ours and of
    ``peers`` (non-empty, each with both times)."""
    b: Dict[str, object] = {}
    for mode in ("fwd", "fwdbwd"):
        key = f"{mode}{suffix}"
        best = min(peers.items(), key=lambda kv: kv[1][key])
        b[f"fastest_peer_{mode}"] = best[0]
        b[f"speedup_{mode}"] = best[1][key] / ours[key]
        b[f"{mode}_3x"] = b[f"speedup_{mode}"] >= 3.0
    b["fwd_over_hbm_floor"] = ours[f"fwd{suffix}"] / row["hbm_floor_ms"]
    b["fwd_within_1p5x_floor"] = b["fwd_over_hbm_floor"] <= 1.5 if row["N"] <= 256 else None
    return b


def print_tables(rows: List[Dict], impl_names: List[str]) -> None:
    def cell(r, key, spec):
        if r is None:
            return "-"
        if r.get("status") != "ok" and key in ("fwd_ms", "fwdbwd_ms", "peak_mb") and r.get(key) is None:
            s = r.get("status", "")
            return "OOM" if s == "OOM" else ("FAIL" if s.startswith("error") else "?")
        v = r.get(key)
        mode = key[:-3] if key in ("fwd_ms", "fwdbwd_ms") else None
        return fmt(v, spec) + ("!" if r.get("status", "ok") != "ok" else "") \
            + ("^" if mode and host_bound(r, mode) else "")

    print("\nTimes: median ms (forward | forward+backward), peak extra MiB of forward+backward "
          "('!' = result mismatch, FAIL/OOM = peer failed, '^' = host-bound: issuing one call took the "
          f"host >= {HOST_BOUND_FRACTION:.0%} of the measured time)")
    head = f"{'config':<24} {'dtype':<5} " + " ".join(f"{n:>22}" for n in impl_names)
    print(head)
    print("-" * len(head))
    for row in rows:
        line = f"{row['name']:<24} {row['dtype']:<5} "
        if row.get("aborted"):
            print(line + f"ABORTED: {row['aborted']}")
            continue
        cells = []
        for n in impl_names:
            r = row["impls"].get(n)
            cells.append(f"{cell(r, 'fwd_ms', '.3f'):>7}|{cell(r, 'fwdbwd_ms', '.3f'):>7}|{cell(r, 'peak_mb', '.0f'):>6}")
        print(line + " ".join(f"{c:>22}" for c in cells))

    print("\nBars: speed-up over the fastest peer (>= 3x), forward vs HBM floor (<= 1.5x for N <= 256), "
          "peak memory vs SDPA")
    head = (f"{'config':<24} {'dtype':<5} {'fwd x':>7} {'peer':>8} {'f+b x':>7} {'peer':>8} "
            f"{'floor ms':>9} {'ours/floor':>10} {'mem<=sdpa':>9} {'pass':>5}")
    print(head)
    print("-" * len(head))
    yn = lambda b: "-" if b is None else ("yes" if b else "NO")  # noqa: E731
    for row in rows:
        b = row.get("bars") or {}
        if row.get("aborted") or not b:
            why = row.get("aborted") or row["impls"].get("ours", {}).get("status", "no result")
            print(f"{row['name']:<24} {row['dtype']:<5} {'n/a: ' + str(why)[:80]}")
            continue
        print(f"{row['name']:<24} {row['dtype']:<5} {b['speedup_fwd']:>6.2f}x {b['fastest_peer_fwd']:>8} "
              f"{b['speedup_fwdbwd']:>6.2f}x {b['fastest_peer_fwdbwd']:>8} {row['hbm_floor_ms']:>9.4f} "
              f"{b['fwd_over_hbm_floor']:>9.2f}x {yn(b['peak_le_sdpa']):>9} {yn(b['all_pass']):>5}"
              + (f"  (ours host-bound: {', '.join(b['host_bound'])})" if b.get("host_bound") else ""))

    print("\nGPU time (each call captured in a CUDA graph and replayed, L2 flushed: no host time): median ms "
          "(forward | forward+backward)")
    head = f"{'config':<24} {'dtype':<5} " + " ".join(f"{n:>15}" for n in impl_names)
    print(head)
    print("-" * len(head))
    for row in rows:
        if row.get("aborted"):
            continue
        cells = []
        for n in impl_names:
            r = row["impls"].get(n) or {}
            if r.get("fwd_graph_ms") is None:
                cells.append("-" if r.get("status") != "ok" else "no capture")
            else:
                cells.append(f"{r['fwd_graph_ms']:.3f}|{r['fwdbwd_graph_ms']:.3f}")
        print(f"{row['name']:<24} {row['dtype']:<5} " + " ".join(f"{c:>15}" for c in cells))
    print("\nBars on the GPU times: speed-up over the fastest peer (>= 3x), forward vs HBM floor (<= 1.5x for N <= 256)")
    head = f"{'config':<24} {'dtype':<5} {'fwd x':>7} {'peer':>8} {'f+b x':>7} {'peer':>8} {'ours/floor':>10}"
    print(head)
    print("-" * len(head))
    for row in rows:
        g = (row.get("bars") or {}).get("graph") or {}
        if "speedup_fwd" not in g:
            if row.get("bars"):
                print(f"{row['name']:<24} {row['dtype']:<5} n/a: {g.get('why', 'no graph times')}")
            continue
        miss = f"  (not captured: {', '.join(g['peers_missing'])})" if g.get("peers_missing") else ""
        print(f"{row['name']:<24} {row['dtype']:<5} {g['speedup_fwd']:>6.2f}x {g['fastest_peer_fwd']:>8} "
              f"{g['speedup_fwdbwd']:>6.2f}x {g['fastest_peer_fwdbwd']:>8} {g['fwd_over_hbm_floor']:>9.2f}x{miss}")


def plot(rows: List[Dict], path: str, device_name: str) -> Optional[str]:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        warnings.warn("matplotlib is not installed: no plot written (pip install matplotlib)")
        return None
    rows = [r for r in rows if r.get("bars")]
    if not rows:
        return None
    labels = [f"{r['name']}\n{r['dtype']}" for r in rows]
    fwd = [r["bars"]["speedup_fwd"] for r in rows]
    fb = [r["bars"]["speedup_fwdbwd"] for r in rows]
    x = range(len(rows))
    fig, ax = plt.subplots(figsize=(max(8, 1.1 * len(rows)), 5))
    w = 0.4
    ax.bar([i - w / 2 for i in x], fwd, w, label="forward")
    ax.bar([i + w / 2 for i in x], fb, w, label="forward + backward")
    ax.axhline(3.0, color="red", linestyle="--", linewidth=1, label="bar: 3x")
    ax.axhline(1.0, color="gray", linewidth=0.8)
    ax.set_xticks(list(x))
    ax.set_xticklabels(labels, rotation=60, ha="right", fontsize=7)
    ax.set_ylabel("speed-up over the fastest peer")
    ax.set_title(f"flash_window_attn vs eager / torch.compile / SDPA / FlexAttention ({device_name})")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def select_configs(spec: Optional[str], quick: bool) -> List[Config]:
    if not spec:
        return [CONFIGS[i] for i in QUICK_CONFIGS] if quick else list(CONFIGS)
    chosen = []
    for tok in spec.split(","):
        tok = tok.strip()
        if tok.isdigit():
            chosen.append(CONFIGS[int(tok)])
        else:
            hits = [c for c in CONFIGS if tok.lower() in c.name.lower().replace(" ", "")
                    or tok.lower() in c.name.lower()]
            if not hits:
                raise SystemExit(f"--configs: no config matches {tok!r}; configs: "
                                 + "; ".join(f"{i}: {c.name}" for i, c in enumerate(CONFIGS)))
            chosen.extend(h for h in hits if h not in chosen)
    return chosen


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help=f"configs {QUICK_CONFIGS} and shorter timing")
    parser.add_argument("--dtypes", default="fp16,bf16", help="comma list of fp16, bf16")
    parser.add_argument("--configs", default=None,
                        help="comma list of config indices or name substrings (e.g. 0,3 or N64,v1); "
                             + "; ".join(f"{i}: {c.name}" for i, c in enumerate(CONFIGS)))
    parser.add_argument("--impls", default=",".join(IMPLS), help="comma list of " + ",".join(IMPLS))
    parser.add_argument("--out", default=None, help="JSON path (PNG next to it); default "
                        "benchmarks/results/<gpu-name>.json")
    args = parser.parse_args(argv)

    if not torch.cuda.is_available():
        print("bench_window_attention: needs a CUDA GPU (for a CPU run: python -m flash_window_attn.demo)")
        return 2
    dtypes = [d.strip() for d in args.dtypes.split(",") if d.strip()]
    for d in dtypes:
        if d not in DTYPES:
            raise SystemExit(f"--dtypes: unknown dtype {d!r}; choose from {list(DTYPES)}")
    impl_names = [n.strip() for n in args.impls.split(",") if n.strip()]
    for n in impl_names:
        if n not in IMPLS:
            raise SystemExit(f"--impls: unknown implementation {n!r}; choose from {IMPLS}")
    configs = select_configs(args.configs, args.quick)

    device_name = torch.cuda.get_device_name()
    out_json = args.out or os.path.join(HERE, "results", f"{slug(device_name)}.json")
    if os.path.isdir(out_json):
        out_json = os.path.join(out_json, f"{slug(device_name)}.json")
    os.makedirs(os.path.dirname(os.path.abspath(out_json)), exist_ok=True)
    torch._dynamo.config.cache_size_limit = max(torch._dynamo.config.cache_size_limit, 64)
    torch.backends.cuda.matmul.allow_tf32 = False

    rate = copy_rate_bytes_per_ms(args.quick)
    print(f"flash_window_attn benchmark  device {device_name}  torch {torch.__version__}  "
          f"CUDA {torch.version.cuda}")
    print(f"device-to-device copy rate: {rate * 1e3 / 1e9:.0f} GB/s (bytes read + written per second)")

    rows: List[Dict] = []

    def write_json(rows_so_far: List[Dict]) -> None:
        result = {
            "device": device_name,
            "torch": torch.__version__,
            "cuda": torch.version.cuda,
            "python": platform.python_version(),
            "timestamp": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "command": " ".join([os.path.basename(sys.argv[0])] + (argv if argv is not None else sys.argv[1:])),
            "copy_rate_bytes_per_s": rate * 1e3,
            "timing": "median of CUDA-event times, L2 flushed before each run (triton.testing.do_bench); "
                      "*_graph_ms: median of CUDA-graph replays of the call, L2 flushed before each",
            "complete": len(rows_so_far) == len(configs) * len(dtypes),
            "rows": rows_so_far,
        }
        with open(out_json, "w") as f:
            json.dump(result, f, indent=1, default=str)

    for cfg in configs:
        for dname in dtypes:
            dtype = DTYPES[dname]
            torch._dynamo.reset()
            row: Dict[str, object] = {"name": cfg.name, "dtype": dname, **asdict(cfg), "impls": {}}
            elem = torch.empty((), dtype=dtype).element_size()
            io_bytes = 4 * cfg.B * cfg.H * cfg.N * cfg.d * elem
            row["hbm_bytes"] = io_bytes
            row["hbm_floor_ms"] = io_bytes / rate
            print(f"\n[{cfg.name} {dname}] nW={cfg.nW}, HBM floor {row['hbm_floor_ms']:.4f} ms", flush=True)
            inp = make_inputs(cfg, dtype)

            try:
                ref = reference_for(cfg, inp)
            except torch.cuda.OutOfMemoryError:
                ref = None
                print("  float64 reference: OOM (results not checked)")
            gc.collect()
            torch.cuda.empty_cache()
            if "ours" in impl_names and ref is not None:
                try:
                    chk = check_ours(cfg, dtype, inp, ref)
                    row["correctness"] = chk
                    print("  ours vs float64 (output and every gradient):", "ok" if chk["ok"] else "WRONG")
                    for line in chk["report"]:
                        print("   ", line)
                    if not chk["ok"]:
                        row["aborted"] = "ours differs from the float64 reference"
                except Exception as exc:  # noqa: BLE001
                    row["impls"]["ours"] = {"status": describe_error(exc), "traceback": traceback.format_exc(limit=4)}
                    print(f"  ours failed: {row['impls']['ours']['status']}")
                gc.collect()
                torch.cuda.empty_cache()
            if row.get("aborted"):
                rows.append(row)
                continue

            impls = build_impls(cfg, [n for n in impl_names if n not in row["impls"]])
            for name, fn in impls.items():
                res = measure_impl(name, fn, inp, args.quick, ref)
                row["impls"][name] = res
                if res.get("fwd_ms") is not None:
                    gpu = (f"GPU (graph) {res['fwd_graph_ms']:.4f} / {res['fwdbwd_graph_ms']:.4f} ms  "
                           if res.get("fwdbwd_graph_ms") is not None else f"graph: {res.get('graph_status', '-')}  ")
                    print(f"  {name:<8} fwd {res['fwd_ms']:.4f} ms  fwd+bwd {res['fwdbwd_ms']:.4f} ms  "
                          f"peak {res['peak_mb']:.0f} MiB  {gpu}{res['status'] if res['status'] != 'ok' else ''}",
                          flush=True)
                else:
                    print(f"  {name:<8} {res['status']}", flush=True)
            row["bars"] = evaluate_bars(row)
            rows.append(row)
            write_json(rows)   # after every row: a run stopped by a time limit keeps what it measured
            del inp, ref
            gc.collect()
            torch.cuda.empty_cache()

    print_tables(rows, impl_names)

    write_json(rows)
    print(f"\nwrote {out_json}")
    png = plot(rows, os.path.splitext(out_json)[0] + ".png", device_name)
    if png:
        print(f"wrote {png}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
