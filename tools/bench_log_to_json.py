"""Rebuild the results JSON, tables and PNG of benchmarks/bench_window_attention.py from its logs.

For runs split over several commands (the GPU machine stops a command after 10 minutes), or a run
stopped before it wrote its JSON: every measured row is in the log. Uses the benchmark's own bar
evaluation, tables and plot.

    python tools/bench_log_to_json.py OUT.json LOG [LOG ...] [--command "..."] [--device "..."]
"""
import argparse
import datetime
import json
import os
import re
import sys
from dataclasses import asdict

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "benchmarks"))
import bench_window_attention as bw  # noqa: E402

HEADER = re.compile(r"\[(\S+ B\d+ H\d+ N\d+ d\d+) (fp16|bf16)\] nW=(\d+), HBM floor ([\d.]+) ms")
IMPL = re.compile(r"  (\w+)\s+fwd ([\d.]+) ms  fwd\+bwd ([\d.]+) ms  peak (\d+) MiB\s*(.*)$")
CHECK = re.compile(r"  ours vs float64 \(output and every gradient\): (ok|WRONG)")
RATE = re.compile(r"device-to-device copy rate: (\d+) GB/s")
DEVICE = re.compile(r"flash_window_attn benchmark  device (.+?)  torch (\S+)  CUDA (\S+)")


def parse(paths):
    rows, meta, cur = [], {}, None
    by_name = {c.name: c for c in bw.CONFIGS}
    for path in paths:
        for line in open(path):
            line = line.rstrip("\n")
            if (m := DEVICE.match(line)):
                meta.update(device=m[1], torch=m[2], cuda=m[3])
            elif (m := RATE.match(line)):
                meta["copy_rate_bytes_per_s"] = float(m[1]) * 1e9
            elif (m := HEADER.match(line)):
                cfg = by_name[m[1]]
                cur = {"name": cfg.name, "dtype": m[2], **asdict(cfg), "impls": {},
                       "hbm_floor_ms": float(m[4])}
                elem = 2
                cur["hbm_bytes"] = 4 * cfg.B * cfg.H * cfg.N * cfg.d * elem
                rows.append(cur)
            elif cur is not None and (m := CHECK.match(line)):
                cur["correctness"] = {"ok": m[1] == "ok"}
                if m[1] != "ok":
                    cur["aborted"] = "ours differs from the float64 reference"
            elif cur is not None and (m := IMPL.match(line)):
                status = m[5].strip() or "ok"
                cur["impls"][m[1]] = {"status": status, "fwd_ms": float(m[2]), "fwdbwd_ms": float(m[3]),
                                      "peak_mb": float(m[4])}
    # A row measured again in a later log (a rerun of a row the first command did not finish)
    # replaces the earlier one, in the first one's place.
    latest = {}
    for row in rows:
        latest[(row["name"], row["dtype"])] = row
    rows = [latest[k] for k in dict.fromkeys((r["name"], r["dtype"]) for r in rows)]
    for row in rows:
        row["bars"] = bw.evaluate_bars(row)
    return rows, meta


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out")
    ap.add_argument("logs", nargs="+")
    ap.add_argument("--command", default="python benchmarks/bench_window_attention.py")
    args = ap.parse_args()
    rows, meta = parse(args.logs)
    impl_names = [n for n in bw.IMPLS if any(n in r["impls"] for r in rows)]
    bw.print_tables(rows, impl_names)
    result = {
        **meta,
        "timestamp": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "command": args.command,
        "reconstructed_from_logs": [os.path.basename(p) for p in args.logs],
        "timing": "median of CUDA-event times, L2 flushed before each run (triton.testing.do_bench)",
        "rows": rows,
    }
    with open(args.out, "w") as f:
        json.dump(result, f, indent=1)
    print(f"\nwrote {args.out}")
    png = bw.plot(rows, os.path.splitext(args.out)[0] + ".png", meta.get("device", "GPU"))
    if png:
        print(f"wrote {png}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
