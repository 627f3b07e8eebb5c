"""A compact GPU workload that launches every CUDA kernel of flash_window_attn, for compute-sanitizer.

    python tests/gpu/sanitizer_selection.py [--profile full|race] [--family all|window|local] [--no-check]
        [--list] [--only SUBSTRING] [--device cuda|cpu]

Run by tests/gpu/run_sanitizers.sh under memcheck, initcheck and synccheck (profile ``full``) and
racecheck (profile ``race``: the fewest, smallest problems that still reach every kernel and every
shared-memory layout, because racecheck is slow). Each problem runs forward and backward (all of
q, k, v, bias and logit_scale requiring grad) and, unless ``--no-check``, is compared with the float64
reference computed on the CPU (so that no PyTorch GPU kernel but copies runs besides ours).

What the problems reach (see csrc/kernels):

- fp16 / bf16 tensor-core kernels for each head-dim bucket 32 / 64 / 128 (d = 16, 32 | 48, 64 |
  96, 128): the forward (bias+mask placements none / strip (one group of warps for N <= 64,
  CTAs of several groups sharing it for 64 < N <= 256 at d <= 64) / tile (N > 256)), the
  small-window backward (N <= 64) and the tiled backward (N > 64: preprocess, kv and q kernels,
  with and without the dbias strip), the bias+mask builder and the partial-sum reductions;
- the fp32 SIMT forward and backward (rows / cols kernels, dbias and dlogit reductions);
- V1 and V2, with and without bias and mask, -inf entries and rows entirely -inf, N = 1 and
  N = 1024, N = 64 / 65 (tile boundary), packed-qkv views, strided and misaligned inputs (the copy
  path), several windows per CTA (the window-chunk loop), and B_ = 0.

Local (sliding-window / block-sliding-window) attention, problems named ``local-*`` (see
csrc/kernels/local): the fp16 / bf16 tensor-core forward and the three backward kernels
(preprocess, key side, query side) for each head-dim bucket 32 / 64 / 128 (d = 8, 16, 32 | 40, 64 |
72, 96, 128: partial and full head dims); the fp32 SIMT forward and its three backward kernels
(D, dk / dv, dq) for d = 8 ... 256; GQA ratios 1, 2, 4, 8 (the key side's loop over the group's
heads); L not a multiple of 64 (partial last tiles), L = 1, 64, 65; band skipping (L = 1000 with a
40-key window: most tiles skipped, full tiles without a mask, masked edge tiles), full, causal,
symmetric, right-only and right-unbounded windows, block bands whose block divides / does not
divide 64 and L, blocks longer than L; packed, (B, L, H, d) and sliced views read in place,
zero-stride broadcasts, misaligned views (the op's copy path), a misaligned and an expanded
(stride(-1) = 0) output gradient; and B = 0, L = 0 (no launch) and H = 0 (dk / dv zero-filled).
Every local problem runs the op forward and backward (q, k, v requiring grad) and, unless
``--no-check``, is compared (out, lse, dq, dk, dv) with the float64 dense reference on the CPU.

``--device cpu`` runs the same problems through the CPU implementations (no sanitizer; it checks the
workload itself on a machine without a GPU).

Exits 0 when every problem ran and matched, 1 otherwise (one line per problem on stdout).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import zlib
from typing import Dict, List, Optional

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))

import flash_window_attn  # noqa: E402,F401  (loads the ops)
from flash_window_attn import window_attention  # noqa: E402
from flash_window_attn.reference import reference_float64, reference_outputs_and_grads  # noqa: E402
from flash_window_attn.testing import (  # noqa: E402
    Problem,
    compare_to_reference,
    make_problem,
    reduction_magnitudes,
    run_ours,
)
from flash_window_attn.testing_local import (  # noqa: E402
    LocalProblem,
    compare_local,
    local_reference_results,
    make_local_problem,
    run_local,
)

FP = {"fp16": torch.float16, "bf16": torch.bfloat16, "fp32": torch.float32}
BUCKET_DS = {32: (16, 32), 64: (48, 64), 128: (96, 128)}


def _p(name, B_, H, N, d, dt, **kw) -> Dict[str, object]:
    return dict(name=name, B_=B_, H=H, N=N, d=d, dtype=dt, kw=kw)


def selection(profile: str, num_sms: int) -> List[Dict[str, object]]:
    """The problems of a profile: dicts of make_problem arguments plus a name."""
    sel: List[Dict[str, object]] = []
    # windows per CTA > 1: more windows than one wave of CTAs (<= 8 per SM) can take one at a time
    many = 2 * 8 * num_sms
    if profile == "race":
        for dt in ("fp16", "bf16"):
            for bucket, (d_part, d_full) in BUCKET_DS.items():
                # small-window backward, partial head dim, V2 + bias + mask (forward bm strip)
                sel.append(_p(f"{dt}-hd{bucket}-small", 2, 1, 49, d_part, dt, version="v2", bias="hnn",
                              mask="shift", nW=2))
                # tiled backward with the dbias strip (N <= 256), V1
                sel.append(_p(f"{dt}-hd{bucket}-tiled", 1, 1, 100, d_full, dt, version="v1", bias="hnn",
                              mask=None))
                # N > 256: forward bm tile mode, tiled backward without the dbias strip, -inf rows
                sel.append(_p(f"{dt}-hd{bucket}-big", 1, 1, 300, d_full, dt, version="v2", bias="hnn",
                              mask="dead", nW=1))
        sel += [
            # no bias and no mask (forward without bm, backward without dbias partials)
            _p("fp16-nobias-small", 2, 1, 49, 64, "fp16", version="v1", bias=None, mask=None),
            _p("fp16-nobias-tiled", 1, 1, 100, 128, "fp16", version="v2", bias=None, mask=None),
            _p("bf16-nobias-small", 2, 1, 16, 128, "bf16", version="v2", bias=None, mask=None),
            _p("bf16-nobias-tiled", 1, 1, 100, 32, "bf16", version="v1", bias=None, mask=None),
            _p("fp16-N1", 2, 1, 1, 32, "fp16", version="v2", bias="hnn", mask="shift", nW=2),
            _p("bf16-N1024", 1, 1, 1024, 32, "bf16", version="v1", bias="hnn", mask="shift", nW=1),
            # several windows per CTA (the window-chunk loop and its pipeline-stage reuse)
            _p("fp16-many-windows-small", many, 1, 49, 32, "fp16", version="v2", bias="hnn", mask="shift",
               nW=4),
            _p("bf16-many-windows-tiled", many // 2, 1, 100, 32, "bf16", version="v2", bias="hnn",
               mask="shift", nW=2),
            # the forward's grouped CTAs (groups of 4 warps sharing the bm strip) at d = 64, several
            # windows per group
            _p("fp16-many-windows-tiled-d64", many // 2, 1, 100, 64, "fp16", version="v2", bias="hnn",
               mask="shift", nW=2),
            # the wgmma forward (sm_90a, 64 < N <= 256, d <= 32): several windows per warpgroup,
            # partial key blocks, no bias / mask (the synthesized strip), d < 32
            _p("bf16-many-windows-wgmma-N256", many // 8, 1, 256, 32, "bf16", version="v2", bias="hnn",
               mask="shift", nW=2),
            _p("fp16-many-windows-wgmma-N144-d24", many // 8, 1, 144, 24, "fp16", version="v1", bias=None,
               mask=None),
            _p("fp32-small", 2, 1, 49, 32, "fp32", version="v2", bias="hnn", mask="shift", nW=2),
            _p("fp32-big", 1, 1, 300, 128, "fp32", version="v1", bias="hnn", mask="dead", nW=1),
            _p("fp32-N1024-d16", 1, 1, 1024, 16, "fp32", version="v2", bias=None, mask="shift", nW=1),
        ]
        return sel

    # one of these per (dtype, bucket), rotating over the buckets
    rotating = [
        lambda dt, d: _p(f"{dt}-d{d}-N16-v1-plain", 4, 2, 16, d, dt, version="v1", bias=None, mask=None),
        lambda dt, d: _p(f"{dt}-d{d}-N64-v2-1hnn", 2, 3, 64, d, dt, version="v2", bias="1hnn", mask=None),
        lambda dt, d: _p(f"{dt}-d{d}-N256-v2-strip", 2, 1, 256, d, dt, version="v2", bias="hnn",
                         mask="shift", nW=2),
        lambda dt, d: _p(f"{dt}-d{d}-N577-v1-mask", 1, 1, 577, d, dt, version="v1", bias=None,
                         mask="shift", nW=1),
        lambda dt, d: _p(f"{dt}-d{d}-N192-v1-nobias", 2, 1, 192, d, dt, version="v1", bias=None, mask=None),
        lambda dt, d: _p(f"{dt}-d{d}-N36-v2-rand", 4, 1, 36, d, dt, version="v2", bias=None, mask="random",
                         nW=4),
    ]
    r = 0
    for dt in ("fp16", "bf16"):
        for bucket, ds in BUCKET_DS.items():
            for d in ds:
                sel.append(_p(f"{dt}-d{d}-N49-v2-bias-shift", 4, 2, 49, d, dt, version="v2", bias="hnn",
                              mask="shift", nW=2, layout="packed"))
                sel.append(_p(f"{dt}-d{d}-N100-v1-randmask", 2, 2, 100, d, dt, version="v1", bias="hnn",
                              mask="random", nW=2))
            d = ds[1]
            sel.append(_p(f"{dt}-d{d}-N65-v2-dead", 2, 1, 65, d, dt, version="v2", bias="hnn", mask="dead",
                          nW=2))
            sel.append(_p(f"{dt}-d{d}-N300-v2-tile", 2, 1, 300, d, dt, version="v2", bias="hnn", mask="dead",
                          nW=2))
            sel.append(rotating[r % len(rotating)](dt, ds[r % 2]))
            r += 1
        sel += [
            _p(f"{dt}-N1-d16", 4, 2, 1, 16, dt, version="v2", bias="hnn", mask="shift", nW=2),
            _p(f"{dt}-N1-d128", 2, 1, 1, 128, dt, version="v1", bias="hnn", mask=None),
            _p(f"{dt}-N1024-d32", 1, 1, 1024, 32, dt, version="v2", bias="hnn", mask="shift", nW=1),
            _p(f"{dt}-N1024-d128", 1, 1, 1024, 128, dt, version="v1", bias=None, mask="random", nW=1),
            _p(f"{dt}-many-windows-N49", many, 1, 49, 32, dt, version="v2", bias="hnn", mask="shift", nW=4),
            _p(f"{dt}-many-windows-N144", many // 2, 1, 144, 64, dt, version="v2", bias="hnn", mask="shift",
               nW=2, layout="packed"),
            _p(f"{dt}-B0", 0, 2, 49, 32, dt, version="v2", bias="hnn", mask="shift", nW=2),
            _p(f"{dt}-strided-N49", 4, 2, 49, 64, dt, version="v2", bias="hnn", mask="shift", nW=2,
               strides="sliced"),
            _p(f"{dt}-misaligned-N100", 2, 2, 100, 32, dt, version="v1", bias="hnn", mask=None,
               strides="misaligned"),
        ]
    for d in (16, 32, 48, 64, 96, 128):
        sel.append(_p(f"fp32-d{d}-N49-v2", 4, 2, 49, d, "fp32", version="v2", bias="hnn", mask="shift", nW=2))
    sel += [
        _p("fp32-N100-v1-rand", 2, 2, 100, 64, "fp32", version="v1", bias=None, mask="random", nW=2,
           layout="packed"),
        _p("fp32-N300-v2-dead", 2, 1, 300, 32, "fp32", version="v2", bias="1hnn", mask="dead", nW=2),
        _p("fp32-N1", 4, 2, 1, 16, "fp32", version="v2", bias="hnn", mask=None),
        _p("fp32-N1024", 1, 1, 1024, 128, "fp32", version="v1", bias="hnn", mask="shift", nW=1),
        _p("fp32-many-windows", many, 1, 49, 32, "fp32", version="v2", bias="hnn", mask="shift", nW=4),
        _p("fp32-B0", 0, 2, 49, 32, "fp32", version="v2", bias="hnn", mask="shift", nW=2),
        _p("fp32-strided", 4, 2, 49, 32, "fp32", version="v1", bias="hnn", mask=None, strides="sliced"),
    ]
    return sel


def build(spec: Dict[str, object], device: str = "cuda") -> Problem:
    kw = dict(spec["kw"])
    strides = kw.pop("strides", None)
    problem = make_problem(spec["B_"], spec["H"], spec["N"], spec["d"], dtype=FP[spec["dtype"]],
                           device=device, seed=zlib.crc32(spec["name"].encode()) % 100003, **kw)
    if strides is not None:
        # q, k, v as views into bigger buffers: larger row / head strides (still 16-byte multiples:
        # the kernels read them in place) or one element of storage offset (misaligned: copied)
        B_, H, N, d = problem.q.shape
        views = []
        for t in (problem.q, problem.k, problem.v):
            if strides == "sliced":
                base = torch.empty(B_, H + 1, N, d + 8, device=device, dtype=t.dtype)
                view = base[:, 1:, :, :d]
            else:
                base = torch.empty(B_ * H * N * d + 1, device=device, dtype=t.dtype)
                view = base[1:].view(B_, H, N, d)
            with torch.no_grad():
                view.copy_(t)
            views.append(view.detach().requires_grad_(True))
        problem.q, problem.k, problem.v = views
    return problem


def check(problem: Problem, ours: Dict[str, torch.Tensor]) -> Optional[List[str]]:
    """Compare with the float64 reference on the CPU; None when everything is within the rule."""
    cpu = lambda t: None if t is None else t.detach().cpu()  # noqa: E731
    args = [cpu(t) for t in problem.args()]
    kw = dict(scale=problem.scale, logit_scale=cpu(problem.logit_scale), dout=cpu(problem.dout))
    ref64 = reference_float64(*args, **kw)
    reflp = reference_outputs_and_grads(*args, **kw)
    mags = reduction_magnitudes(*args, **kw)
    ok, lines = compare_to_reference({k: v.cpu() for k, v in ours.items()}, ref64, reflp, problem.q.dtype,
                                     magnitudes=mags)
    return None if ok else lines



# ------------------------------------------------------------------------------------------------
# Local (sliding-window / block-sliding-window) attention
# ------------------------------------------------------------------------------------------------

# Head-dim buckets of the fp16 / bf16 local kernels (csrc/kernels/local/local_attn_dispatch.cu):
# d <= 32, <= 64, <= 128; each with partial head dims (columns beyond d zero-filled) and the full one.
LOCAL_BUCKET_DS = {32: (8, 16, 32), 64: (40, 64), 128: (72, 96, 128)}
LOCAL_SIMT_DS = (8, 32, 64, 128, 136, 256)  # fp32 SIMT kernels: d <= 256


def _lp(name, B, H, Hkv, L, d, dt, band, layout="contiguous", dout="contiguous") -> Dict[str, object]:
    return dict(name=name, family="local", B=B, H=H, Hkv=Hkv, L=L, d=d, dtype=dt, band=band, layout=layout,
                dout=dout)


def local_selection(profile: str) -> List[Dict[str, object]]:
    """The local-attention problems of a profile (every local kernel, every bucket, the band paths)."""
    sel: List[Dict[str, object]] = []
    if profile == "race":
        for dt in ("fp16", "bf16"):
            for bucket, ds in LOCAL_BUCKET_DS.items():
                # GQA 2, L = 200 (partial last tile): skipped, full (unmasked) and masked edge tiles
                sel.append(_lp(f"local-{dt}-hd{bucket}-causal-gqa2", 1, 2, 1, 200, ds[0], dt, (100, 0, 1)))
                # masks on both sides of the diagonal, a block that does not divide 64
                sel.append(_lp(f"local-{dt}-hd{bucket}-block", 1, 1, 1, 130, ds[-1], dt, (1, 1, 37), layout="blhd"))
        sel += [
            _lp("local-fp16-misaligned", 1, 2, 2, 65, 32, "fp16", (-1, -1, 1), layout="misaligned"),
            _lp("local-fp32-d64-gqa2", 1, 4, 2, 130, 64, "fp32", (20, 5, 1)),
            _lp("local-fp32-d256-causal", 1, 1, 1, 70, 256, "fp32", (-1, 0, 1)),
            _lp("local-fp32-d8-block", 2, 2, 1, 33, 8, "fp32", (1, 0, 8), layout="packed"),
        ]
        return sel

    for dt in ("fp16", "bf16"):
        for bucket, ds in LOCAL_BUCKET_DS.items():
            for d in ds:
                sel.append(_lp(f"local-{dt}-d{d}-L200-causal-gqa2", 2, 4, 2, 200, d, dt, (100, 0, 1), layout="packed"))
                sel.append(_lp(f"local-{dt}-d{d}-L130-sym", 1, 2, 2, 130, d, dt, (16, 16, 1), layout="blhd"))
            d = ds[-1]
            sel += [
                # band skipping: 16 query tiles, each visiting 1-2 of the 16 key tiles
                _lp(f"local-{dt}-d{d}-L1000-narrow", 1, 2, 1, 1000, d, dt, (40, 0, 1), layout="packed"),
                _lp(f"local-{dt}-d{d}-L300-full", 1, 1, 1, 300, d, dt, (-1, -1, 1)),
                _lp(f"local-{dt}-d{d}-L256-block64", 1, 2, 1, 256, d, dt, (3, 0, 64), layout="sliced"),
                _lp(f"local-{dt}-d{d}-L257-block37", 1, 2, 2, 257, d, dt, (1, 2, 37)),
                _lp(f"local-{dt}-d{d}-L190-right", 1, 2, 1, 190, d, dt, (0, 70, 1), layout="blhd"),
                _lp(f"local-{dt}-d{d}-L129-gqa8", 1, 8, 1, 129, d, dt, (-1, 0, 1), layout="packed"),
            ]
        sel += [
            _lp(f"local-{dt}-L1", 2, 2, 1, 1, 32, dt, (5, 0, 1)),
            _lp(f"local-{dt}-L64-full", 2, 2, 2, 64, 64, dt, (-1, -1, 1)),
            _lp(f"local-{dt}-L65-causal-local", 2, 4, 1, 65, 64, dt, (10, 0, 1), layout="packed"),
            _lp(f"local-{dt}-L100-right-unbounded", 1, 2, 2, 100, 32, dt, (0, -1, 1)),
            _lp(f"local-{dt}-L100-block-gt-L", 1, 2, 2, 100, 32, dt, (0, 0, 5000)),
            # the op's copy path (rows not 16-byte aligned), and a misaligned / expanded dout
            _lp(f"local-{dt}-misaligned", 1, 2, 1, 100, 32, dt, (20, 0, 1), layout="misaligned", dout="misaligned"),
            _lp(f"local-{dt}-broadcast", 2, 4, 2, 100, 64, dt, (20, 3, 1), layout="broadcast", dout="expanded"),
            _lp(f"local-{dt}-B0", 0, 2, 1, 100, 32, dt, (20, 0, 1)),
            _lp(f"local-{dt}-L0", 2, 2, 1, 0, 32, dt, (20, 0, 1)),
            _lp(f"local-{dt}-H0", 2, 0, 1, 50, 32, dt, (20, 0, 1)),
        ]
    bands = [(-1, -1, 1), (30, 0, 1), (7, 7, 1), (1, 0, 16), (2, 1, 37), (0, -1, 1)]
    for i, d in enumerate(LOCAL_SIMT_DS):
        sel.append(_lp(f"local-fp32-d{d}-L130", 1, 4, 2, 130, d, "fp32", bands[i % len(bands)],
                       layout=("packed", "blhd", "sliced")[i % 3]))
    sel += [
        _lp("local-fp32-L1000-narrow-gqa4", 1, 4, 1, 1000, 64, "fp32", (40, 0, 1), layout="packed"),
        _lp("local-fp32-L1", 2, 2, 1, 1, 32, "fp32", (5, 0, 1)),
        _lp("local-fp32-L65-gqa8", 1, 8, 1, 65, 32, "fp32", (-1, 0, 1)),
        _lp("local-fp32-misaligned", 1, 2, 1, 100, 32, "fp32", (20, 0, 1), layout="misaligned", dout="misaligned"),
        _lp("local-fp32-broadcast", 2, 4, 2, 100, 64, "fp32", (20, 3, 1), layout="broadcast", dout="expanded"),
        _lp("local-fp32-B0", 0, 2, 1, 100, 32, "fp32", (20, 0, 1)),
        _lp("local-fp32-L0", 2, 2, 1, 0, 32, "fp32", (20, 0, 1)),
        _lp("local-fp32-H0", 2, 0, 1, 50, 32, "fp32", (20, 0, 1)),
    ]
    return sel


def build_local(spec: Dict[str, object], device: str = "cuda") -> LocalProblem:
    return make_local_problem(spec["B"], spec["H"], spec["Hkv"], spec["L"], spec["d"], dtype=FP[spec["dtype"]],
                              device=device, band=spec["band"], layout=spec["layout"], dout_layout=spec["dout"],
                              seed=zlib.crc32(spec["name"].encode()) % 100003)


def check_local(problem: LocalProblem, ours: Dict[str, torch.Tensor]) -> Optional[List[str]]:
    """out, lse, dq, dk, dv against the float64 dense reference on the CPU (the same formula in the
    inputs' dtype, also on the CPU, is the baseline); None when everything is within the rule."""
    args = (problem.q, problem.k, problem.v, problem.dout, problem.band, problem.op_scale)
    ref64 = local_reference_results(*args, torch.float64, device="cpu")
    dtype = problem.q.dtype
    reflp = local_reference_results(*args, dtype, device="cpu")
    ok, lines = compare_local({k: v.cpu() for k, v in ours.items()}, ref64, reflp, dtype)
    expect = {"dq", "dk", "dv"} if problem.q.numel() or problem.k.numel() else set()
    if not expect <= set(ours):
        ok = False
        lines.append(f"missing gradients: {sorted(expect - set(ours))}")
    return None if ok else lines


def _describe(spec: Dict[str, object]) -> str:
    if spec.get("family") == "local":
        l, r, b = spec["band"]
        return (f"B={spec['B']} H={spec['H']} Hkv={spec['Hkv']} L={spec['L']} d={spec['d']} band=({l},{r},{b}) "
                f"{spec['layout']}")
    return f"B_={spec['B_']} H={spec['H']} N={spec['N']} d={spec['d']}"


def _run_one(spec: Dict[str, object], device: str, no_check: bool) -> Optional[List[str]]:
    sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)
    if spec.get("family") == "local":
        problem = build_local(spec, device)
        ours, _ = run_local(problem, repeat_backward=False)
        sync()
        return None if no_check else check_local(problem, ours)
    problem = build(spec, device)
    ours = run_ours(problem, window_attention)
    sync()
    return None if no_check else check(problem, ours)

def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--profile", choices=("full", "race"), default="full")
    parser.add_argument("--family", choices=("all", "window", "local"), default="all",
                        help="window attention, local attention, or both (default)")
    parser.add_argument("--no-check", action="store_true", help="skip the CPU float64 comparison")
    parser.add_argument("--list", action="store_true", help="list the problems and exit (no GPU needed)")
    parser.add_argument("--only", default=None, help="run only problems whose name contains this")
    parser.add_argument("--device", choices=("cuda", "cpu"), default="cuda",
                        help="cpu: run the workload through the CPU implementations (checks the script)")
    args = parser.parse_args(argv)

    have_cuda = torch.cuda.is_available()
    if args.device == "cuda" and not have_cuda and not args.list:
        print("sanitizer_selection: no CUDA device", file=sys.stderr)
        return 2
    # the window selection sizes one problem by the SM count (132: an H100, when listing without a GPU)
    num_sms = torch.cuda.get_device_properties(0).multi_processor_count if have_cuda else 132
    specs: List[Dict[str, object]] = []
    if args.family in ("all", "window"):
        specs += selection(args.profile, num_sms)
    if args.family in ("all", "local"):
        specs += local_selection(args.profile)
    if args.only:
        specs = [s for s in specs if args.only in s["name"]]
    if args.list:
        for s in specs:
            if s.get("family") == "local":
                print(s["name"], s["B"], s["H"], s["Hkv"], s["L"], s["d"], s["dtype"], s["band"], s["layout"],
                      s["dout"])
            else:
                print(s["name"], s["B_"], s["H"], s["N"], s["d"], s["dtype"], s["kw"])
        return 0

    failed = []
    t_start = time.time()
    for spec in specs:
        t0 = time.time()
        try:
            bad = _run_one(spec, args.device, args.no_check)
        except Exception as e:  # noqa: BLE001 (reported, and the run fails)
            bad = [f"{type(e).__name__}: {e}"]
        status = "ok" if bad is None else "FAIL"
        print(f"{status:4} {spec['name']:<40} {_describe(spec)} ({time.time() - t0:.1f} s)", flush=True)
        if bad is not None:
            failed.append(spec["name"])
            for line in bad:
                print("     " + line, flush=True)
    print(f"sanitizer_selection ({args.profile}): {len(specs) - len(failed)} / {len(specs)} problems ok "
          f"in {time.time() - t_start:.0f} s" + (f"; failed: {failed}" if failed else ""), flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
