"""A compact GPU workload that launches every CUDA kernel of flash_window_attn, for compute-sanitizer.

    python tests/gpu/sanitizer_selection.py [--profile full|race] [--no-check] [--list]

Run by tests/gpu/run_sanitizers.sh under memcheck, initcheck and synccheck (profile ``full``) and
racecheck (profile ``race``: the fewest, smallest problems that still reach every kernel and every
shared-memory layout, because racecheck is slow). Each problem runs forward and backward (all of
q, k, v, bias and logit_scale requiring grad) and, unless ``--no-check``, is compared with the float64
reference computed on the CPU (so that no PyTorch GPU kernel but copies runs besides ours).

What the problems reach (see csrc/kernels):

- fp16 / bf16 tensor-core kernels for each head-dim bucket 32 / 64 / 128 (d = 16, 32 | 48, 64 |
  96, 128): the forward (bias+mask placements none / strip (N <= 256) / tile (N > 256)), the
  small-window backward (N <= 64) and the tiled backward (N > 64: preprocess, kv and q kernels,
  with and without the dbias strip), the bias+mask builder and the partial-sum reductions;
- the fp32 SIMT forward and backward (rows / cols kernels, dbias and dlogit reductions);
- V1 and V2, with and without bias and mask, -inf entries and rows entirely -inf, N = 1 and
  N = 1024, N = 64 / 65 (tile boundary), packed-qkv views, strided and misaligned inputs (the copy
  path), several windows per CTA (the window-chunk loop), and B_ = 0.

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


def build(spec: Dict[str, object]) -> Problem:
    kw = dict(spec["kw"])
    strides = kw.pop("strides", None)
    problem = make_problem(spec["B_"], spec["H"], spec["N"], spec["d"], dtype=FP[spec["dtype"]],
                           device="cuda", seed=zlib.crc32(spec["name"].encode()) % 100003, **kw)
    if strides is not None:
        # q, k, v as views into bigger buffers: larger row / head strides (still 16-byte multiples:
        # the kernels read them in place) or one element of storage offset (misaligned: copied)
        B_, H, N, d = problem.q.shape
        views = []
        for t in (problem.q, problem.k, problem.v):
            if strides == "sliced":
                base = torch.empty(B_, H + 1, N, d + 8, device="cuda", dtype=t.dtype)
                view = base[:, 1:, :, :d]
            else:
                base = torch.empty(B_ * H * N * d + 1, device="cuda", dtype=t.dtype)
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


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--profile", choices=("full", "race"), default="full")
    parser.add_argument("--no-check", action="store_true", help="skip the CPU float64 comparison")
    parser.add_argument("--list", action="store_true", help="list the problems and exit")
    parser.add_argument("--only", default=None, help="run only problems whose name contains this")
    args = parser.parse_args(argv)

    if not torch.cuda.is_available():
        print("sanitizer_selection: no CUDA device", file=sys.stderr)
        return 2
    num_sms = torch.cuda.get_device_properties(0).multi_processor_count
    specs = selection(args.profile, num_sms)
    if args.only:
        specs = [s for s in specs if args.only in s["name"]]
    if args.list:
        for s in specs:
            print(s["name"], s["B_"], s["H"], s["N"], s["d"], s["dtype"], s["kw"])
        return 0

    failed = []
    t_start = time.time()
    for spec in specs:
        t0 = time.time()
        try:
            problem = build(spec)
            ours = run_ours(problem, window_attention)
            torch.cuda.synchronize()
            bad = None if args.no_check else check(problem, ours)
        except Exception as e:  # noqa: BLE001 (reported, and the run fails)
            bad = [f"{type(e).__name__}: {e}"]
        status = "ok" if bad is None else "FAIL"
        print(f"{status:4} {spec['name']:<32} B_={spec['B_']} H={spec['H']} N={spec['N']} d={spec['d']} "
              f"({time.time() - t0:.1f} s)", flush=True)
        if bad is not None:
            failed.append(spec["name"])
            for line in bad:
                print("     " + line, flush=True)
    print(f"sanitizer_selection ({args.profile}): {len(specs) - len(failed)} / {len(specs)} problems ok "
          f"in {time.time() - t_start:.0f} s" + (f"; failed: {failed}" if failed else ""), flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
