"""Summarise the SASS source page of an ncu report (developer tool, no GPU needed): where a
kernel's warps were sampled, by stall reason and by run of instructions.

Input: the CSV that `ncu --import REPORT --page source --csv --print-source sass` writes for one
kernel (a report collected with `--section SourceCounters`), plain or xz-compressed. Prints the
sampled stall reasons over the whole kernel, the instructions with the most samples, and the
samples per run of consecutive instructions executed the same number of times (a loop body, a
branch of it: a kernel's per-step code shows up as one or a few such runs).

    python tools/ncu_source_summary.py benchmarks/results/session53/runD-source-fwd_ws.csv.xz [--top 25]
"""
import argparse
import csv
import io
import lzma


def load(path):
    raw = lzma.open(path, "rt") if path.endswith(".xz") else open(path, newline="")
    with raw as f:
        rows = list(csv.reader(io.StringIO(f.read())))
    # row 0 names the kernel, row 1 is the header, the rest one SASS instruction each
    return rows[0], rows[1], rows[2:]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("csv")
    ap.add_argument("--top", type=int, default=25, help="instructions listed by samples")
    ap.add_argument("--min-share", type=float, default=0.3, help="runs below this %% of samples are not listed")
    args = ap.parse_args()
    kernel, hdr, data = load(args.csv)
    ix = {h: i for i, h in enumerate(hdr)}
    stalls = [h for h in hdr if h.startswith("stall_") and "Not Issued" not in h]

    def num(r, col):
        v = r[ix[col]]
        return float(v) if v else 0.0

    samples = [num(r, "Warp Stall Sampling (All Samples)") for r in data]
    total = sum(samples) or 1.0
    print(" ".join(kernel)[:160])
    print(f"{len(data)} instructions, {total:.0f} samples")
    print("stall reasons (share of all samples):")
    by_reason = {s: sum(num(r, s) for r in data) for s in stalls}
    for s, v in sorted(by_reason.items(), key=lambda x: -x[1])[:12]:
        print(f"  {s[6:]:20s} {v:8.0f} {100 * v / total:5.1f} %")

    base = int(data[0][ix["Address"]], 16)
    print(f"top {args.top} instructions (offset, samples, executions, instruction, main reasons):")
    order = sorted(range(len(data)), key=lambda i: -samples[i])[: args.top]
    for i in order:
        r = data[i]
        reasons = sorted(((num(r, s), s[6:]) for s in stalls), reverse=True)[:3]
        why = " ".join(f"{n}:{v:.0f}" for v, n in reasons if v > 0)
        print(f"  {int(r[ix['Address']], 16) - base:06x} {samples[i]:6.0f} {int(num(r, 'Instructions Executed')):8d}  "
              f"{r[ix['Source']].strip()[:56]:56s} {why}")

    print("runs of instructions executed equally often (offsets, executions, instructions, samples):")
    start, count, acc, n = 0, None, 0.0, 0
    runs = []
    for i, r in enumerate(data):
        e = int(num(r, "Instructions Executed"))
        if e != count:
            if count is not None:
                runs.append((start, i, count, acc, n))
            start, count, acc, n = i, e, 0.0, 0
        acc += samples[i]
        n += 1
    runs.append((start, len(data), count, acc, n))
    for s, e, c, acc, n in runs:
        if 100 * acc / total >= args.min_share:
            a0 = int(data[s][ix["Address"]], 16) - base
            a1 = int(data[e - 1][ix["Address"]], 16) - base
            print(f"  {a0:06x}-{a1:06x} exec {c:8d} n {n:4d} samples {acc:7.0f} {100 * acc / total:5.1f} %")


if __name__ == "__main__":
    main()
