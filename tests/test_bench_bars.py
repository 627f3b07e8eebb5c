"""The benchmarks' bar verdicts (pure Python over result dicts: no GPU needed), in particular the
verdicts on GPU times (each call captured in a CUDA graph and replayed, ``*_graph_ms``), which the
benchmarks report beside the per-call times: the fastest peer is taken among the peers that could be
captured, and a peer that could not be is named."""
import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "benchmarks"))

import bench_models as bmod  # noqa: E402
import bench_sliding_window as bs  # noqa: E402
import bench_window_attention as bw  # noqa: E402


def _impl(fwd, fb, gfwd=None, gfb=None, peak=100.0, host=(0.001, 0.001)):
    r = {"status": "ok", "fwd_ms": fwd, "fwdbwd_ms": fb, "peak_mb": peak,
         "fwd_host_ms": host[0], "fwdbwd_host_ms": host[1]}
    if gfwd is not None:
        r["fwd_graph_ms"], r["fwdbwd_graph_ms"] = gfwd, gfb
    else:
        r["graph_status"] = "error: RuntimeError: capture failed"
    return r


def _window_row(impls, N=144, floor=0.02):
    return {"name": "v2 B512 H4 N144 d32", "dtype": "bf16", "N": N, "hbm_floor_ms": floor, "impls": impls}


def test_window_graph_bars_use_graph_times_of_every_captured_peer():
    # per call: ours host-bound (0.30 ms issued in 0.29); on GPU times ours 0.09 against sdpa 0.30
    row = _window_row({
        "ours": _impl(0.05, 0.30, 0.040, 0.090, peak=50, host=(0.01, 0.29)),
        "sdpa": _impl(0.20, 0.80, 0.150, 0.300, peak=300),
        "flex": _impl(0.15, 1.00, 0.140, 0.700, peak=200),
    })
    b = bw.evaluate_bars(row)
    assert b["fastest_peer_fwd"] == "flex" and b["fastest_peer_fwdbwd"] == "sdpa"
    assert b["speedup_fwdbwd"] == pytest.approx(0.80 / 0.30) and not b["fwdbwd_3x"]
    assert b["host_bound"] == ["fwdbwd"]
    g = b["graph"]
    assert g["peers_missing"] == []
    assert g["fastest_peer_fwd"] == "flex" and g["speedup_fwd"] == pytest.approx(0.140 / 0.040)
    assert g["fastest_peer_fwdbwd"] == "sdpa" and g["speedup_fwdbwd"] == pytest.approx(0.300 / 0.090)
    assert g["fwd_3x"] and g["fwdbwd_3x"]
    assert g["fwd_over_hbm_floor"] == pytest.approx(0.040 / 0.02) and g["fwd_within_1p5x_floor"] is False


def test_window_graph_bars_name_peers_not_captured():
    row = _window_row({
        "ours": _impl(0.05, 0.30, 0.040, 0.090),
        "sdpa": _impl(0.20, 0.80),                      # no graph times: capture failed
        "flex": _impl(0.15, 1.00, 0.140, 0.700),
    }, N=576)
    g = bw.evaluate_bars(row)["graph"]
    assert g["peers_missing"] == ["sdpa"]
    assert g["fastest_peer_fwdbwd"] == "flex"
    assert g["fwd_within_1p5x_floor"] is None   # no floor bar above N = 256


def test_window_graph_bars_without_our_graph_times_say_why():
    row = _window_row({"ours": _impl(0.05, 0.30), "sdpa": _impl(0.20, 0.80, 0.15, 0.3)})
    g = bw.evaluate_bars(row)["graph"]
    assert "speedup_fwd" not in g and "capture failed" in g["why"]


def test_sliding_gpu_time_checks_are_counted_apart():
    row = {"name": "win(256,256) B1 H4 L4096 d128", "dtype": "bf16", "banded": True, "impls": {
        "ours": _impl(0.026, 0.195, 0.025, 0.090, host=(0.02, 0.19)),
        "flex": _impl(0.029, 0.385, 0.028, 0.300),
        "sdpa_dense": _impl(0.160, 0.452, 0.158, 0.440),
    }}
    row["bars"] = bs.evaluate_bars(row)
    g = row["bars"]["graph"]
    assert g["speedup_vs_sdpa_dense_fwdbwd"] == pytest.approx(0.440 / 0.090) and g["ours_3x_sdpa_dense_fwdbwd"]
    assert row["bars"]["ours_3x_sdpa_dense_fwdbwd"] is False   # per call: 0.452 / 0.195 = 2.3x
    lines, counts = bs.bar_lines([row], {}, "cuda")
    assert (counts["PASS"], counts["FAIL"]) == (3, 1)
    assert (counts["gpu PASS"], counts["gpu FAIL"]) == (4, 0)
    assert any("GPU time" in ln and ln.startswith("pass") for ln in lines)
    assert any("host-bound" in ln and ln.startswith("FAIL") for ln in lines)


def test_sliding_gpu_time_checks_skip_what_was_not_captured():
    row = {"name": "causal B8 H16 L2048 d64", "dtype": "fp16", "banded": False, "impls": {
        "ours": _impl(0.221, 0.796, 0.220, 0.780),
        "flex": _impl(0.242, 0.968),   # capture failed
    }}
    row["bars"] = bs.evaluate_bars(row)
    assert row["bars"]["graph"] == {}
    _, counts = bs.bar_lines([row], {}, "cuda")
    assert counts["gpu PASS"] == counts["gpu FAIL"] == 0 and counts["PASS"] == 2


def _model_rec(infer, train, ginfer=None, gtrain=None, host=(0.1, 0.1), gstatus=None):
    r = {"letter": "x", "label": "x", "status": "ok", "infer_status": "ok", "train_status": "ok",
         "infer_ms": infer, "train_ms": train, "infer_host_ms": host[0], "train_host_ms": host[1]}
    for m, v in (("infer", ginfer), ("train", gtrain)):
        r[f"{m}_graph_ms"] = v
        r[f"{m}_graph_status"] = "ok" if v is not None else (gstatus or "capture failed: RuntimeError: x")
    return r


def test_model_gpu_time_checks_beside_the_per_call_ones():
    # per call the compiled steps are host-bound (issued in ~all of their time); on GPU time the
    # swapped compiled training step is within 1.15x of the compiled ceiling's
    entry = {"name": bmod.BAR_MODEL, "batch": bmod.BAR_BATCH, "variants": {
        "swap": _model_rec(12.0, 37.0, 11.0, 34.0),
        "swap_compile": _model_rec(6.6, 31.9, 5.6, 21.0, host=(5.6, 31.8)),
        "ceiling": _model_rec(11.1, 32.4, 10.5, 30.0),
        "ceiling_compile": _model_rec(5.0, 19.0, 4.9, 18.5, host=(3.3, 18.8)),
    }}
    bmod.derive(entry)
    checks = {c["check"]: c for c in entry["bar_checks"]}
    per_call = checks["swapped+compile train <= 1.15x ceiling compiled train"]
    gpu = checks["swapped+compile train <= 1.15x ceiling compiled train, GPU time"]
    assert per_call["pass"] is False and per_call["host_bound"] == ["swap_compile", "ceiling_compile"]
    assert gpu["pass"] is True and gpu["gpu_time"] and gpu["value"] == 21.0 and gpu["reference"] == 18.5
    assert checks["swapped+compile inference <= 1.15x ceiling compiled inference, GPU time"]["pass"] is True
    assert checks["swapped eager train <= 1.15x ceiling eager train, GPU time"]["pass"] is True   # 34 <= 34.5
    assert entry["variants"]["swap_compile"]["train_graph_over_ceiling"] == pytest.approx(21.0 / 18.5)
    assert not any(c.get("gpu_time") for c in entry["bar_checks"] if "memory" in c["check"])


def test_model_gpu_time_check_names_what_was_not_captured():
    entry = {"name": bmod.BAR_MODEL, "batch": bmod.BAR_BATCH, "variants": {
        "swap": _model_rec(12.0, 37.0, 11.0, None, gstatus="n/a: the adamw training step is not captured (SGD only)"),
        "ceiling": _model_rec(11.1, 32.4, 10.5, 30.0),
    }}
    bmod.derive(entry)
    gpu = [c for c in entry["bar_checks"] if c.get("gpu_time")]
    assert len(gpu) == 1 and gpu[0]["pass"] is None and "SGD only" in gpu[0]["detail"]
    # no graph figures at all (a CPU run, or --graph-iters 0): no GPU-time checks
    for rec in entry["variants"].values():
        for m in ("infer", "train"):
            rec.pop(f"{m}_graph_ms")
            rec.pop(f"{m}_graph_status")
    bmod.derive(entry)
    assert not any(c.get("gpu_time") for c in entry["bar_checks"])
