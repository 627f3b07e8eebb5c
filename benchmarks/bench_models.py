#!/usr/bin/env python
"""End-to-end benchmark of Swin V2 models from timm with and without flash_window_attn (issue 3,
"Main job and end-to-end benchmark").

Models (timm, random weights, timm.create_model(name, pretrained=False), NCHW float32 input at the
model's own input size, bf16 autocast, fp32 weights):
  swinv2_tiny_window8_256 (batch 64), swinv2_tiny_window16_256 (64), swinv2_base_window12_192 (64),
  swinv2_base_window12to24_192to384 (16)
Variants, each built fresh from the same seed (so every variant starts from the same weights):
  a  eager            the timm model as is
  b  compile          torch.compile(model)
  c  swap             flash_window_attn.swap.swap_window_attention(model)
  d  swap_compile     the swapped model, then torch.compile
  e  ceiling          the model with its attention core (normalise, q·kᵀ, logit scale, bias, mask,
                      softmax, ·v) replaced by passing v through; the qkv and output projections are
                      kept, nothing that only feeds the core (the cpb MLP) is evaluated
                      (benchmarks/_model_variants.py)
     ceiling_compile  the same, compiled
For every (model, variant):
  inference  model.eval(), torch.no_grad(), forward under autocast
  training   model.train(), one step = zero_grad(set_to_none) + forward under autocast +
             cross-entropy on fixed random labels + backward + optimizer step
             (SGD, momentum 0.9, lr 1e-4, foreach; --optimizer adamw for fused AdamW; the same
             optimizer for every variant; parameters without a gradient are skipped by it)
  times      median of per-step CUDA-event times (synchronised after each step) after warm-up;
             the first warm-up call includes torch.compile and is reported separately (first call s)
  host       the median time the host took to issue a step (from before its start event to the
             return of the step, before the sync): at >= 90 % of the step time the step is
             host-bound (the GPU waited for the host), flagged in the table's notes and in the bar
             checks, so that a call on a slow host is not read as a kernel result (the GPU's
             launch queue, ~1000 kernels, also holds the host back: the flag assumes a step of at
             most about a thousand launches, as these models' ~900-1200)
  GPU time   (CUDA, --graph-iters N > 0, default 20) the same step captured once in a CUDA graph
             (after 3 warm-up calls on a side stream) and replayed N times, the L2 flushed before
             each, median (_bench_common.cuda_graph_median_ms): the kernels' time with no host time
             in it, so a host-bound step still gets a kernel-level figure. Captured with the
             autocast cache off (torch.autocast(cache_enabled=False), as CUDA graphs require: the
             same casts, made where they are used); training steps with SGD only (fused AdamW's
             step is not captured here). A step that cannot be captured gets its reason instead,
             and the other figures stand. The bar checks are repeated on these times (lower-case
             lines, counted apart)
  memory     torch.cuda.max_memory_allocated() over one more step after reset_peak_memory_stats():
             absolute, so it includes weights, gradients and optimizer state (the same in every
             variant) plus activations
A variant that fails (compile error, OOM, ...) is recorded with its error and the run goes on; the
swap variants are "unavailable" when flash_window_attn.swap cannot be imported. The JSON is
rewritten after every variant, so an interrupted run keeps what it measured.

Bar (issue 3, H100, swinv2_tiny_window16_256, batch 64, bf16 autocast): swapped eager train step
<= 1.15x the ceiling's eager train step; swapped + compile train step and inference <= 1.15x the
compiled ceiling's; swapped peak memory below the unswapped model's, eager and compiled.

    python benchmarks/bench_models.py [--models a,b] [--variants eager,compile,swap,swap_compile,
        ceiling,ceiling_compile | a,b,c,d,e] [--modes infer,train] [--quick] [--batch-scale F]
        [--batch N] [--iters N] [--warmup N] [--graph-iters N] [--no-compile] [--optimizer sgd|adamw]
        [--out DIR | FILE.json] [--append] [--time-budget S] [--device cuda|cpu]

--append merges into an existing JSON per (model, variant): what is measured now replaces the earlier
entry, the rest is kept (to split a full run over several commands). --time-budget S skips a variant
when the time spent plus the expected duration (the longest variant of the same kind so far, scaled by
the number of attention modules) would pass S; with --append a skipped variant keeps its earlier
result. The compiled variants dominate the run time (torch.compile of the inference and the training
graph of each model; the "first call s" column).

--device cpu is a smoke test of the code paths only (batch 2, perf_counter times, no memory
numbers, results written to a temporary directory unless --out is given): no timing claims.
"""

from __future__ import annotations

import argparse
import datetime
import gc
import importlib.util
import json
import math
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
import traceback
from dataclasses import dataclass
from typing import Callable, Dict, List, Optional, Tuple

import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))  # flash_window_attn from this checkout (imported lazily)
sys.path.insert(0, HERE)

import _bench_common as _common  # noqa: E402
from _bench_common import host_bound, slug  # noqa: E402
from _model_variants import apply_ceiling, count_attention_modules, load_swap  # noqa: E402

# ------------------------------------------------------------------------------------------------
# What is measured
# ------------------------------------------------------------------------------------------------

MODELS: Dict[str, int] = {  # name -> default batch
    "swinv2_tiny_window8_256": 64,
    "swinv2_tiny_window16_256": 64,
    "swinv2_base_window12_192": 64,
    "swinv2_base_window12to24_192to384": 16,
}
BAR_MODEL = "swinv2_tiny_window16_256"
BAR_BATCH = 64
BAR_RATIO = 1.15


@dataclass(frozen=True)
class Variant:
    key: str
    letter: str
    label: str
    swap: bool
    ceiling: bool
    compile: bool


VARIANTS: List[Variant] = [
    Variant("eager", "a", "timm eager", False, False, False),
    Variant("compile", "b", "timm compile", False, False, True),
    Variant("swap", "c", "swapped", True, False, False),
    Variant("swap_compile", "d", "swapped + compile", True, False, True),
    Variant("ceiling", "e", "ceiling eager", False, True, False),
    Variant("ceiling_compile", "e", "ceiling compile", False, True, True),
]
VARIANT_BY_KEY = {v.key: v for v in VARIANTS}
ALIASES = {"a": ["eager"], "b": ["compile"], "c": ["swap"], "d": ["swap_compile"],
           "e": ["ceiling", "ceiling_compile"], "e-eager": ["ceiling"], "e-compiled": ["ceiling_compile"],
           "e-compile": ["ceiling_compile"], "swapped": ["swap"], "swapped_compile": ["swap_compile"]}
# the reference each variant's time is divided by ("ratio vs the ceiling of the same mode")
CEILING_OF = {"eager": "ceiling", "swap": "ceiling", "ceiling": "ceiling",
              "compile": "ceiling_compile", "swap_compile": "ceiling_compile",
              "ceiling_compile": "ceiling_compile"}
MODES = ["infer", "train"]


# ------------------------------------------------------------------------------------------------
# Measurement
# ------------------------------------------------------------------------------------------------


def synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def time_steps(step: Callable[[], object], warmup: int, iters: int, device: torch.device) -> Dict:
    """Warm-up calls (wall-clock seconds each; the first one compiles), then ``iters`` timed steps:
    CUDA events around each step, synchronised after it (perf_counter on the CPU). Median in ms.

    On CUDA also the host's issue time of each step (perf_counter from before the start event to
    the return of ``step()``, before the sync): where its median comes close to the step's time
    (``_bench_common.HOST_BOUND_FRACTION``; ``host_bound``), the GPU waited for the host and the
    step time measures the host."""
    first: List[float] = []
    for _ in range(warmup):
        t0 = time.perf_counter()
        step()
        synchronize(device)
        first.append(time.perf_counter() - t0)
    times: List[float] = []
    host: List[float] = []
    for _ in range(iters):
        if device.type == "cuda":
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            t0 = time.perf_counter()
            start.record()
            step()
            host.append((time.perf_counter() - t0) * 1e3)
            end.record()
            end.synchronize()
            times.append(start.elapsed_time(end))
        else:
            t0 = time.perf_counter()
            step()
            times.append((time.perf_counter() - t0) * 1e3)
    return {"ms": statistics.median(times), "times_ms": times, "warmup_s": first,
            "host_ms": statistics.median(host) if host else None}


def peak_memory(step: Callable[[], object], device: torch.device) -> Tuple[Optional[float], Optional[float]]:
    """(peak MiB, MiB allocated before the step) of one step, torch.cuda.max_memory_allocated."""
    if device.type != "cuda":
        return None, None
    gc.collect()
    torch.cuda.synchronize(device)
    torch.cuda.reset_peak_memory_stats(device)
    base = torch.cuda.memory_allocated(device)
    step()
    torch.cuda.synchronize(device)
    return torch.cuda.max_memory_allocated(device) / 2**20, base / 2**20


def describe_error(exc: BaseException) -> str:
    return _common.describe_error(exc, prefix="", max_len=300)


def free_memory(device: torch.device) -> None:
    gc.collect()
    if device.type == "cuda":
        torch.cuda.synchronize(device)
        torch.cuda.empty_cache()


def make_optimizer(name: str, params, device: torch.device) -> torch.optim.Optimizer:
    params = [p for p in params if p.requires_grad]
    if name == "adamw":
        return torch.optim.AdamW(params, lr=1e-4, weight_decay=0.05, fused=device.type == "cuda")
    return torch.optim.SGD(params, lr=1e-4, momentum=0.9, foreach=True)


def dynamo_counters() -> Dict[str, int]:
    try:
        from torch._dynamo.utils import counters

        return {"graph_breaks": int(sum(counters["graph_break"].values())),
                "unique_graphs": int(counters["stats"].get("unique_graphs", 0))}
    except Exception:  # noqa: BLE001 (diagnostic only)
        return {}


def reset_dynamo() -> None:
    torch._dynamo.reset()
    try:
        from torch._dynamo.utils import counters

        counters.clear()
    except Exception:  # noqa: BLE001
        pass


def build_model(name: str, seed: int, device: torch.device) -> torch.nn.Module:
    import timm

    torch.manual_seed(seed)
    model = timm.create_model(name, pretrained=False)
    return model.to(device)


def make_step(runner: Callable, x: torch.Tensor, y: torch.Tensor, amp: Dict, opt=None) -> Callable[[], object]:
    """One inference step (``opt`` None: no grad, returns the output) or one training step
    (cross-entropy, backward, ``opt.step()``; returns the loss) of ``runner`` on ``x`` under
    ``torch.autocast(**amp)``."""
    if opt is None:
        def step():
            with torch.no_grad(), torch.autocast(**amp):
                return runner(x)
    else:
        def step():
            opt.zero_grad(set_to_none=True)
            with torch.autocast(**amp):
                loss = F.cross_entropy(runner(x), y)
            loss.backward()
            opt.step()
            return loss
    return step


def graph_step_ms(runner: Callable, x: torch.Tensor, y: torch.Tensor, amp: Dict, opt, optimizer: str,
                  runs: int) -> Tuple[Optional[float], str]:
    """(GPU time in ms, "ok") of one step captured in a CUDA graph and replayed (the median of
    ``runs`` replays, _bench_common.cuda_graph_median_ms), or (None, why not). The step is
    make_step's with the autocast cache off (a requirement of capture under autocast)."""
    if opt is not None and optimizer != "sgd":
        return None, f"n/a: the {optimizer} training step is not captured (SGD only)"
    step = make_step(runner, x, y, dict(amp, cache_enabled=False), opt)
    try:
        return _common.cuda_graph_median_ms(step, runs), "ok"
    except Exception as exc:  # noqa: BLE001 (not capturable: a result, not a crash)
        return None, "capture failed: " + describe_error(exc)


def run_variant(v: Variant, model_name: str, x: torch.Tensor, y: torch.Tensor, args, device: torch.device,
                swap: Tuple[Optional[Callable], Optional[str]]) -> Dict:
    rec: Dict[str, object] = {"letter": v.letter, "label": v.label, "status": "ok"}
    swap_fn, swap_why = swap
    if v.swap and swap_fn is None:
        rec["status"] = "unavailable"
        rec["error"] = f"flash_window_attn.swap not available ({swap_why})"
        return rec
    if v.compile and args.no_compile:  # not selected normally; kept for explicit requests
        rec["status"] = "skipped"
        rec["error"] = "--no-compile"
        return rec
    reset_dynamo()
    t_start = time.perf_counter()
    model = runner = None
    try:
        model = build_model(model_name, args.seed, device)
        before = count_attention_modules(model)
        if v.ceiling:
            rec["ceiling_modules"] = apply_ceiling(model)
        if v.swap:
            ret = swap_fn(model)
            if isinstance(ret, torch.nn.Module):
                model = ret
        after = count_attention_modules(model)
        rec["attention_modules"] = after
        if v.swap:
            n_before = before["timm_v2"] + before["timm_v1"]
            n_left = after["timm_v2"] + after["timm_v1"]
            rec["swapped_modules"] = f"{n_before - n_left}/{n_before}"
            if n_left == n_before:
                raise RuntimeError(f"swap_window_attention replaced none of the {n_before} attention modules")
        runner = torch.compile(model) if v.compile else model
    except Exception as exc:  # noqa: BLE001 (a failing variant is a result)
        rec["status"] = "failed"
        rec["error"] = "build: " + describe_error(exc)
        rec["traceback"] = traceback.format_exc(limit=6)
        model = runner = None
        free_memory(device)
        reset_dynamo()
        return rec

    dev_type = device.type
    amp = dict(device_type=dev_type, dtype=torch.bfloat16)

    for mode in args.modes:
        opt = None
        try:
            if mode == "infer":
                model.eval()
                warmup, iters = args.warmup, args.infer_iters
            else:
                model.train()
                opt = make_optimizer(args.optimizer, model.parameters(), device)
                warmup, iters = args.warmup, args.iters
            step = make_step(runner, x, y, amp, opt)
            t = time_steps(step, warmup, iters, device)
            peak, base = peak_memory(step, device)
            if device.type == "cuda" and args.graph_iters > 0:
                gms, gstatus = graph_step_ms(runner, x, y, amp, opt, args.optimizer, args.graph_iters)
                rec[f"{mode}_graph_ms"] = gms
                rec[f"{mode}_graph_status"] = gstatus
            rec[f"{mode}_ms"] = t["ms"]
            rec[f"{mode}_host_ms"] = t["host_ms"]
            rec[f"{mode}_times_ms"] = [round(s, 4) for s in t["times_ms"]]
            rec[f"{mode}_warmup_s"] = [round(s, 3) for s in t["warmup_s"]]
            rec[f"{mode}_first_call_s"] = t["warmup_s"][0] if t["warmup_s"] else None
            rec[f"{mode}_peak_mib"] = peak
            rec[f"{mode}_base_mib"] = base
            rec[f"{mode}_status"] = "ok"
        except Exception as exc:  # noqa: BLE001
            rec[f"{mode}_status"] = describe_error(exc)
            if not isinstance(exc, torch.cuda.OutOfMemoryError):
                rec[f"{mode}_traceback"] = traceback.format_exc(limit=6)
        finally:
            step = opt = None  # noqa: F841 (drops the closure over the optimizer and the model)
            if model is not None:
                model.zero_grad(set_to_none=True)
            free_memory(device)

    if v.compile:
        rec["dynamo"] = dynamo_counters()
    oks = [rec.get(f"{m}_status") == "ok" for m in args.modes]
    if not all(oks):
        rec["status"] = "partial" if any(oks) else "failed"
        rec["error"] = "; ".join(f"{m}: {rec[f'{m}_status']}" for m in args.modes if rec.get(f"{m}_status") != "ok")
    rec["wall_s"] = time.perf_counter() - t_start
    runner = model = None
    free_memory(device)
    reset_dynamo()
    return rec


# ------------------------------------------------------------------------------------------------
# Derived numbers
# ------------------------------------------------------------------------------------------------


def _num(rec: Optional[Dict], key: str) -> Optional[float]:
    if not rec:
        return None
    val = rec.get(key)
    return float(val) if isinstance(val, (int, float)) and not math.isnan(val) else None


def derive(entry: Dict) -> None:
    """Speed-ups vs timm eager and vs timm compile, ratio vs the ceiling of the same mode."""
    vs = entry["variants"]
    for key, rec in vs.items():
        for mode in MODES:
            t = _num(rec, f"{mode}_ms")
            for ref, name in (("eager", "speedup_vs_eager"), ("compile", "speedup_vs_compile")):
                r = _num(vs.get(ref), f"{mode}_ms")
                rec[f"{mode}_{name}"] = r / t if (t and r) else None
            c = _num(vs.get(CEILING_OF.get(key, "")), f"{mode}_ms")
            rec[f"{mode}_over_ceiling"] = t / c if (t and c) else None
            tg = _num(rec, f"{mode}_graph_ms")
            cg = _num(vs.get(CEILING_OF.get(key, "")), f"{mode}_graph_ms")
            rec[f"{mode}_graph_over_ceiling"] = tg / cg if (tg and cg) else None
    entry["bar_checks"] = bar_checks(entry)


def bar_checks(entry: Dict) -> List[Dict]:
    vs = entry["variants"]
    g = lambda k, f: _num(vs.get(k), f)  # noqa: E731
    checks = []

    def ratio(desc, key_a, key_b, mode, limit):
        a, b = g(key_a, f"{mode}_ms"), g(key_b, f"{mode}_ms")
        ok = None if a is None or b is None else a <= limit * b
        detail = "n/a (missing)" if ok is None else f"{a:.2f} ms vs {limit:.2f} x {b:.2f} = {limit * b:.2f} ms ({a / b:.3f}x)"
        bound = [k for k in (key_a, key_b) if host_bound(vs.get(k), mode)]
        if ok is not None and bound:
            detail += "; host-bound: " + ", ".join(
                f"{k} issued in {g(k, f'{mode}_host_ms'):.2f} of {g(k, f'{mode}_ms'):.2f} ms" for k in bound)
        checks.append({"check": desc, "pass": ok, "value": a, "reference": b, "detail": detail,
                       "host_bound": bound})
        # the same check on GPU times (CUDA-graph replay), where either side was measured that way
        # (graph_step_ms sets a status, "ok" or why not, wherever it ran)
        ga, gb = g(key_a, f"{mode}_graph_ms"), g(key_b, f"{mode}_graph_ms")
        if any(f"{mode}_graph_status" in (vs.get(k) or {}) for k in (key_a, key_b)):
            gok = None if ga is None or gb is None else ga <= limit * gb
            if gok is None:
                why = [f"{k}: {(vs.get(k) or {}).get(f'{mode}_graph_status') or 'not measured'}"
                       for k, val in ((key_a, ga), (key_b, gb)) if val is None]
                gdetail = "n/a (" + "; ".join(why) + ")"
            else:
                gdetail = f"{ga:.2f} ms vs {limit:.2f} x {gb:.2f} = {limit * gb:.2f} ms ({ga / gb:.3f}x)"
            checks.append({"check": desc + ", GPU time", "pass": gok, "value": ga, "reference": gb,
                           "detail": gdetail, "gpu_time": True})

    def lower(desc, a, b):
        ok = None if a is None or b is None else a < b
        checks.append({"check": desc, "pass": ok, "value": a, "reference": b,
                       "detail": "n/a (missing)" if ok is None else f"{a:.0f} MiB vs {b:.0f} MiB ({a / b:.3f}x)"})

    ratio(f"swapped eager train <= {BAR_RATIO}x ceiling eager train", "swap", "ceiling", "train", BAR_RATIO)
    ratio(f"swapped+compile train <= {BAR_RATIO}x ceiling compiled train",
          "swap_compile", "ceiling_compile", "train", BAR_RATIO)
    ratio(f"swapped+compile inference <= {BAR_RATIO}x ceiling compiled inference",
          "swap_compile", "ceiling_compile", "infer", BAR_RATIO)
    lower("swapped eager peak memory < timm eager (inference)", g("swap", "infer_peak_mib"), g("eager", "infer_peak_mib"))
    lower("swapped eager peak memory < timm eager (training)", g("swap", "train_peak_mib"), g("eager", "train_peak_mib"))
    lower("swapped+compile peak memory < timm compile (inference)",
          g("swap_compile", "infer_peak_mib"), g("compile", "infer_peak_mib"))
    lower("swapped+compile peak memory < timm compile (training)",
          g("swap_compile", "train_peak_mib"), g("compile", "train_peak_mib"))
    return checks


# ------------------------------------------------------------------------------------------------
# Report
# ------------------------------------------------------------------------------------------------


def fmt(x, spec=".2f", none="-"):
    return none if x is None else format(x, spec)


def fx(x):
    return "-" if x is None else f"{x:.2f}x"


def print_model_table(entry: Dict) -> None:
    print(f"\n== {entry['name']}  batch {entry['batch']}  input {'x'.join(map(str, entry['input_size']))}  "
          f"({entry.get('params_m', 0):.1f} M params, {entry.get('num_classes')} classes) ==")
    head = (f"{'variant':<21} {'infer ms':>9} {'train ms':>9} {'inf MiB':>8} {'trn MiB':>8} "
            f"{'xeager inf':>10} {'trn':>6} {'xcomp inf':>9} {'trn':>6} {'/ceil inf':>9} {'trn':>6} "
            f"{'1st call s inf/trn':>18}")
    print(head)
    print("-" * len(head))
    for key, rec in entry["variants"].items():
        name = f"{rec['letter']} {rec['label']}"
        if rec["status"] in ("unavailable", "skipped") or (rec["status"] == "failed" and not any(
                _num(rec, f"{m}_ms") for m in MODES)):
            print(f"{name:<21} {rec['status'].upper()}: {str(rec.get('error', ''))[:110]}")
            continue
        cell = lambda m, f, spec=".2f": (fmt(_num(rec, f"{m}_{f}"), spec) if rec.get(f"{m}_status") == "ok"  # noqa: E731
                                         else ("OOM" if rec.get(f"{m}_status") == "OOM" else
                                               ("FAIL" if rec.get(f"{m}_status") else "-")))
        first = "/".join(fmt(_num(rec, f"{m}_first_call_s"), ".1f") for m in MODES)
        print(f"{name:<21} {cell('infer', 'ms'):>9} {cell('train', 'ms'):>9} "
              f"{cell('infer', 'peak_mib', '.0f'):>8} {cell('train', 'peak_mib', '.0f'):>8} "
              f"{fx(rec.get('infer_speedup_vs_eager')):>10} {fx(rec.get('train_speedup_vs_eager')):>6} "
              f"{fx(rec.get('infer_speedup_vs_compile')):>9} {fx(rec.get('train_speedup_vs_compile')):>6} "
              f"{fx(rec.get('infer_over_ceiling')):>9} {fx(rec.get('train_over_ceiling')):>6} {first:>18}")
        if rec["status"] != "ok":
            print(f"{'':<21} {rec['status'].upper()}: {str(rec.get('error', ''))[:110]}")
    notes = []
    for key, rec in entry["variants"].items():
        if rec.get("swapped_modules"):
            notes.append(f"{rec['letter']} swapped {rec['swapped_modules']} attention modules")
        d = rec.get("dynamo")
        if d:
            notes.append(f"{rec['letter']} {rec['label']}: {d.get('unique_graphs', '?')} graphs, "
                         f"{d.get('graph_breaks', '?')} graph breaks")
    if notes:
        print("  " + "; ".join(notes))
    hosts = []
    for key, rec in entry["variants"].items():
        parts = []
        for m in MODES:
            h = _num(rec, f"{m}_host_ms")
            if h is not None and rec.get(f"{m}_status") == "ok":
                parts.append(f"{m} {h:.2f}" + (" (host-bound)" if host_bound(rec, m) else ""))
        if parts:
            hosts.append(f"{rec['letter']} {', '.join(parts)}")
    if hosts:
        print("  host issue ms per step: " + "; ".join(hosts))
    gpu = []
    for key, rec in entry["variants"].items():
        parts = []
        for m in MODES:
            if rec.get(f"{m}_status") != "ok" or f"{m}_graph_status" not in rec:
                continue
            gms = _num(rec, f"{m}_graph_ms")
            over = rec.get(f"{m}_graph_over_ceiling")
            parts.append(f"{m} " + (f"{gms:.2f}" + (f" ({over:.3f}x ceil)" if over else "") if gms is not None
                                    else str(rec[f"{m}_graph_status"])[:60]))
        if parts:
            gpu.append(f"{rec['letter']} {', '.join(parts)}")
    if gpu:
        print("  GPU time ms per step (CUDA graph replay): " + "; ".join(gpu))


def print_bar_checks(entry: Dict, device_type: str) -> None:
    official = (entry["name"] == BAR_MODEL and entry["batch"] == BAR_BATCH and device_type == "cuda")
    if device_type != "cuda":
        tag = "CPU smoke test: not meaningful"
    elif official:
        tag = "the issue-3 bar"
    elif entry["name"] == BAR_MODEL:
        tag = f"batch {entry['batch']} != {BAR_BATCH}: indicative only"
    else:
        tag = "informational (the bar is set on swinv2_tiny_window16_256)"
    print(f"\nBar checks, {entry['name']} ({tag}):")
    for c in entry["bar_checks"]:
        res = "N/A " if c["pass"] is None else ("PASS" if c["pass"] else "FAIL")
        if c.get("gpu_time"):   # the GPU-time form of a check: lower case, counted apart
            res = res.lower()
        print(f"  {res}  {c['check']}: {c['detail']}")


def plot(result: Dict, path: str) -> Optional[str]:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not installed: no plot written (pip install matplotlib)")
        return None
    models = result["models"]
    if not models:
        return None
    keys = [v.key for v in VARIANTS if any(v.key in m["variants"] for m in models)]
    panels = [("infer_speedup_vs_eager", "inference speed-up over timm eager (higher is better)"),
              ("train_speedup_vs_eager", "training-step speed-up over timm eager (higher is better)"),
              ("train_peak_rel", "training peak memory / timm eager's (lower is better)")]
    for m in models:
        ref = _num(m["variants"].get("eager"), "train_peak_mib")
        for rec in m["variants"].values():
            p = _num(rec, "train_peak_mib")
            rec["train_peak_rel"] = p / ref if (p and ref) else None
    fig, axes = plt.subplots(1, 3, figsize=(max(15, 4.5 * len(models)), 5))
    w = 0.8 / max(1, len(keys))
    for ax, (field, title) in zip(axes, panels):
        for j, key in enumerate(keys):
            xs, ys = [], []
            for i, m in enumerate(models):
                val = _num(m["variants"].get(key), field)
                if val is not None:
                    xs.append(i - 0.4 + (j + 0.5) * w)
                    ys.append(val)
            v = VARIANT_BY_KEY[key]
            ax.bar(xs, ys, w, label=f"{v.letter} {v.label}")
        ax.axhline(1.0, color="gray", linewidth=0.8)
        ax.set_xticks(range(len(models)))
        ax.set_xticklabels([f"{m['name']}\nbs{m['batch']}" for m in models], rotation=30, ha="right", fontsize=7)
        ax.set_title(title, fontsize=9)
    for m in models:
        for rec in m["variants"].values():
            rec.pop("train_peak_rel", None)
    axes[0].legend(fontsize=7)
    fig.suptitle(f"Swin V2 (timm) end to end, bf16 autocast, {result['device']}", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


# ------------------------------------------------------------------------------------------------
# Driver
# ------------------------------------------------------------------------------------------------


def parse_variants(spec: str, no_compile: bool) -> List[Variant]:
    keys: List[str] = []
    for tok in (t.strip().lower() for t in spec.split(",")):
        if not tok:
            continue
        for k in ALIASES.get(tok, [tok]):
            if k not in VARIANT_BY_KEY:
                raise SystemExit(f"--variants: unknown variant {tok!r}; choose from "
                                 f"{[v.key for v in VARIANTS]} or letters a, b, c, d, e (= both ceilings)")
            if k not in keys:
                keys.append(k)
    chosen = [v for v in VARIANTS if v.key in keys]  # canonical order
    if no_compile:
        chosen = [v for v in chosen if not v.compile]
    return chosen


def git_revision() -> Optional[str]:
    try:
        root = os.path.dirname(HERE)
        rev = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True,
                             timeout=10).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=root,
                               capture_output=True, text=True, timeout=10).stdout.strip()
        return (rev + ("+dirty" if dirty else "")) or None
    except Exception:  # noqa: BLE001
        return None


def package_version(name: str) -> Optional[str]:
    try:
        from importlib.metadata import version

        return version(name)
    except Exception:  # noqa: BLE001
        return None


def save(result: Dict, path: str) -> None:
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(result, f, indent=1, default=str)
    os.replace(tmp, path)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default=",".join(MODELS),
                        help="comma list of timm model names (default: the four of issue 3)")
    parser.add_argument("--variants", default=",".join(v.key for v in VARIANTS),
                        help="comma list of " + ",".join(v.key for v in VARIANTS)
                             + " (or letters a,b,c,d,e; e = both ceilings)")
    parser.add_argument("--modes", default="infer,train", help="comma list of infer, train")
    parser.add_argument("--quick", action="store_true",
                        help="fewer iterations (warm-up 2, 5 steps) and half the batch (CUDA)")
    parser.add_argument("--batch-scale", type=float, default=None,
                        help="multiply every default batch (default 1; 0.5 with --quick)")
    parser.add_argument("--batch", type=int, default=None, help="one batch size for every model")
    parser.add_argument("--iters", type=int, default=None,
                        help="timed training steps (default 10, 5 with --quick); inference uses twice as many")
    parser.add_argument("--warmup", type=int, default=None,
                        help="untimed warm-up calls per mode, the first one compiles (default 3, 2 with --quick)")
    parser.add_argument("--graph-iters", type=int, default=None,
                        help="CUDA only: replays of each step captured in a CUDA graph, for its GPU time with "
                             "no host time in it (default 20, 10 with --quick; 0: not measured)")
    parser.add_argument("--no-compile", action="store_true", help="leave out the torch.compile variants")
    parser.add_argument("--optimizer", choices=["sgd", "adamw"], default="sgd",
                        help="training-step optimizer: SGD momentum 0.9 foreach (default) or fused AdamW")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default=None,
                        help="output directory (file models-<gpu>.json in it) or a .json path; PNG next to "
                             "it; default benchmarks/results/ (a temporary directory on the CPU)")
    parser.add_argument("--append", action="store_true",
                        help="merge into an existing JSON: each (model, variant) measured now replaces its "
                             "entry, the others are kept (to split a full run over several commands)")
    parser.add_argument("--time-budget", type=float, default=0.0,
                        help="seconds; once exceeded, the remaining variants are recorded as skipped (0: none)")
    parser.add_argument("--device", default="cuda", help="cuda (default) or cpu (smoke test only)")
    args = parser.parse_args(argv)
    t0 = time.perf_counter()

    device = torch.device(args.device)
    if device.type == "cuda" and not torch.cuda.is_available():
        print("bench_models: needs a CUDA GPU (smoke test on the CPU: --device cpu --quick --no-compile)")
        return 2
    if device.type not in ("cuda", "cpu"):
        raise SystemExit(f"--device: {args.device!r} is not supported (cuda or cpu)")
    if importlib.util.find_spec("timm") is None:
        print("bench_models: needs timm (pip install timm)")
        return 2

    models = [m.strip() for m in args.models.split(",") if m.strip()]
    variants = parse_variants(args.variants, args.no_compile)
    args.modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    for m in args.modes:
        if m not in MODES:
            raise SystemExit(f"--modes: unknown mode {m!r}; choose from {MODES}")
    if not variants or not models or not args.modes:
        raise SystemExit("nothing to run: empty --models, --variants or --modes")
    cpu = device.type == "cpu"
    if args.warmup is None:
        args.warmup = 1 if cpu else (2 if args.quick else 3)
    if args.iters is None:
        args.iters = 2 if cpu else (5 if args.quick else 10)
    args.warmup = max(1, args.warmup)  # the first call (compile) is never timed
    args.iters = max(1, args.iters)
    args.infer_iters = 2 * args.iters
    if args.graph_iters is None:
        args.graph_iters = 0 if cpu else (10 if args.quick else 20)
    args.graph_iters = max(0, args.graph_iters)
    scale = args.batch_scale if args.batch_scale is not None else (0.5 if args.quick else 1.0)

    def batch_for(name: str) -> int:
        if args.batch is not None:
            return args.batch
        if cpu:
            return 2
        return max(1, int(round(MODELS.get(name, 64) * scale)))

    if device.type == "cuda":
        device_name = torch.cuda.get_device_name(device)
        torch.backends.cudnn.benchmark = True
    else:
        device_name = f"CPU ({platform.processor() or platform.machine()}, {torch.get_num_threads()} threads)"
        print("bench_models: CPU run = smoke test of the code paths (small batch, perf_counter times); "
              "no timing claims")

    if args.out and args.out.endswith(".json"):
        out_json = args.out
    else:
        out_dir = args.out or (os.path.join(HERE, "results") if not cpu
                               else os.path.join(tempfile.gettempdir(), "flash_window_attn_bench_models"))
        out_json = os.path.join(out_dir, f"models-{slug(device_name) if not cpu else 'cpu'}.json")
    os.makedirs(os.path.dirname(os.path.abspath(out_json)), exist_ok=True)
    torch._dynamo.config.cache_size_limit = max(torch._dynamo.config.cache_size_limit, 64)

    swap = load_swap() if any(v.swap for v in variants) else (None, "not requested")
    if any(v.swap for v in variants) and swap[0] is None:
        print(f"flash_window_attn swap unavailable: {swap[1]}")

    command = " ".join([os.path.basename(sys.argv[0] if argv is None else "bench_models.py")]
                       + (argv if argv is not None else sys.argv[1:]))
    result: Dict[str, object] = {
        "benchmark": "bench_models (issue 3, end to end)",
        "device": device_name,
        "device_type": device.type,
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "timm": package_version("timm"),
        "transformers": package_version("transformers"),
        "flash_window_attn_git": git_revision(),
        "python": platform.python_version(),
        "timestamp": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "command": command,
        "dtype": "bf16 autocast (torch.autocast), fp32 weights, NCHW fp32 input",
        "optimizer": ("SGD(lr=1e-4, momentum=0.9, foreach=True)" if args.optimizer == "sgd"
                      else "AdamW(lr=1e-4, weight_decay=0.05, fused=True on CUDA)"),
        "train_step": "zero_grad(set_to_none) + autocast forward + cross_entropy(random labels) + backward + step",
        "infer_step": "model.eval(), torch.no_grad(), autocast forward",
        "timing": ("median of per-step CUDA-event times, synchronised after each step, after warm-up "
                   "(first warm-up call includes torch.compile)" if not cpu else
                   "median of perf_counter times (CPU smoke test)"),
        "memory": "torch.cuda.max_memory_allocated over one step after reset_peak_memory_stats (absolute)",
        "graph_timing": (f"each step captured in a CUDA graph (autocast cache off) and replayed {args.graph_iters} "
                         "times, L2 flushed before each, median (<mode>_graph_ms: GPU time, no host time)"
                         if args.graph_iters > 0 else "not measured"),
        "warmup": args.warmup, "train_iters": args.iters, "infer_iters": args.infer_iters,
        "quick": args.quick, "seed": args.seed, "modes": args.modes,
        "cudnn_benchmark": torch.backends.cudnn.benchmark,
        "float32_matmul_precision": torch.get_float32_matmul_precision(),
        "ceiling": ("attention core (normalise, q·kᵀ, logit scale, bias, mask, softmax, ·v) replaced by v; "
                    "qkv + proj kept; cpb MLP not evaluated (benchmarks/_model_variants.py)"),
        "swap_available": swap[0] is not None, "swap_unavailable_reason": swap[1] if swap[0] is None else None,
        "batch_sizes": {m: batch_for(m) for m in models},
        "models": [],
    }
    previous: List[Dict] = []
    kept_variants: Dict[str, Dict] = {}  # model -> variants of an earlier run kept by --append
    if args.append and os.path.exists(out_json):
        with open(out_json) as f:
            old = json.load(f)
        previous = [m for m in old.get("models", []) if m.get("name") not in models]
        for m in old.get("models", []):
            if m.get("name") in models and m.get("batch") == batch_for(m["name"]) and not m.get("error"):
                kept_variants[m["name"]] = dict(m.get("variants", {}))
        result["previous_runs"] = old.get("previous_runs", []) + [
            {k: old.get(k) for k in ("command", "timestamp", "flash_window_attn_git")}]
        result["batch_sizes"] = {**old.get("batch_sizes", {}), **result["batch_sizes"]}
    order = {n: i for i, n in enumerate(list(MODELS) + models)}

    def write(current: List[Dict]) -> None:
        merged = sorted(previous + current, key=lambda m: order.get(m["name"], len(order)))
        result["models"] = merged
        save(result, out_json)

    print(f"bench_models  device {device_name}  torch {torch.__version__}  timm {result['timm']}  "
          f"CUDA {torch.version.cuda}  optimizer {args.optimizer}  warm-up {args.warmup}, "
          f"{args.iters} train / {args.infer_iters} inference steps", flush=True)

    done: List[Dict] = []
    walls: List[Tuple[bool, float, int]] = []  # (compiled, seconds, attention modules) of variants run so far
    for name in models:
        batch = batch_for(name)
        entry: Dict[str, object] = {"name": name, "batch": batch, "variants": {}}
        try:
            probe = build_model(name, args.seed, torch.device("cpu"))
            cfg = probe.pretrained_cfg or {}
            entry["input_size"] = list(cfg.get("input_size") or (3, *probe.patch_embed.img_size))
            entry["num_classes"] = probe.num_classes
            entry["params_m"] = sum(p.numel() for p in probe.parameters()) / 1e6
            counts = count_attention_modules(probe)
            entry["attention_modules"] = nblocks = counts["timm_v2"] + counts["timm_v1"]
            del probe
        except Exception as exc:  # noqa: BLE001
            entry["error"] = describe_error(exc)
            entry["input_size"] = []
            print(f"\n[{name}] cannot be built: {entry['error']}")
            done.append(entry)
            write(done)
            continue
        print(f"\n[{name}] batch {batch}, input {tuple(entry['input_size'])}, {entry['params_m']:.1f} M params",
              flush=True)
        g = torch.Generator().manual_seed(args.seed)
        x = torch.randn(batch, *entry["input_size"], generator=g).to(device)
        y = torch.randint(0, entry["num_classes"], (batch,), generator=g).to(device)
        done.append(entry)
        kept = kept_variants.get(name, {})
        if kept:
            print(f"  (--append: earlier results for {', '.join(kept)} from {out_json}; "
                  "variants measured now replace theirs)")
            entry["variants"] = {k: kept[k] for k in VARIANT_BY_KEY if k in kept}
            derive(entry)
        for v in variants:
            elapsed = time.perf_counter() - t0
            # expected duration: the longest variant of the same kind (compiled or not) run so far
            # (compile time grows with the number of blocks: scaled by the attention-module count)
            expected = max([w * nblocks / max(1, nb) for kind, w, nb in walls if kind == v.compile],
                           default=0.0)
            if args.time_budget and elapsed + expected > args.time_budget and v.key in kept:
                print(f"  {v.letter} {v.label:<18} skipped (time budget), keeping the earlier result")
                continue
            if args.time_budget and elapsed + expected > args.time_budget:
                rec = {"letter": v.letter, "label": v.label, "status": "skipped",
                       "error": f"time budget: {elapsed:.0f} s spent + ~{expected:.0f} s expected > "
                                f"{args.time_budget:.0f} s (run it later with --append)"}
            else:
                rec = run_variant(v, name, x, y, args, device, swap)
                walls.append((v.compile, rec.get("wall_s", 0.0), nblocks))
            entry["variants"][v.key] = rec
            entry["variants"] = {k: entry["variants"][k] for k in VARIANT_BY_KEY if k in entry["variants"]}
            derive(entry)
            write(done)
            msg = f"  {v.letter} {v.label:<18}"
            for m in args.modes:
                if rec.get(f"{m}_status") == "ok":
                    mem = _num(rec, f"{m}_peak_mib")
                    msg += (f" {m} {rec[f'{m}_ms']:8.2f} ms (first call {rec[f'{m}_first_call_s']:.1f} s"
                            + (f", peak {mem:.0f} MiB)" if mem is not None else ")"))
            if rec["status"] != "ok":
                msg += f"  {rec['status'].upper()}: {str(rec.get('error', ''))[:160]}"
            print(msg + f"  [{rec.get('wall_s', 0):.0f} s]", flush=True)
        derive(entry)
        del x, y
        free_memory(device)

    write(done)
    all_models = result["models"]
    print("\nTimes: median ms per step; MiB: peak allocated (absolute); xeager / xcomp: speed-up over timm "
          "eager / timm compile (higher is faster); /ceil: time over the ceiling of the same mode "
          "(eager variants / ceiling eager, compiled / ceiling compile; bar <= 1.15); first call: warm-up "
          "call incl. torch.compile")
    for entry in all_models:
        if entry.get("error"):
            print(f"\n== {entry['name']}: {entry['error']}")
            continue
        print_model_table(entry)
    for entry in all_models:
        if not entry.get("error") and entry.get("bar_checks"):
            print_bar_checks(entry, device.type)

    print(f"\nwrote {out_json}  (total {time.perf_counter() - t0:.0f} s)")
    png = plot(result, os.path.splitext(out_json)[0] + ".png")
    if png:
        print(f"wrote {png}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
