"""Re-draws the PNG of a bench_sliding_window.py JSON (for a device run whose PNG did not come
back):  python benchmarks/replot_sliding.py RESULT.json  ->  RESULT.png"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_sliding_window as bench  # noqa: E402


def main(path: str) -> int:
    with open(path) as f:
        data = json.load(f)
    impls = []
    for row in data["rows"]:
        for name in row["impls"]:
            if name not in impls:
                impls.append(name)
    png = bench.plot(data["rows"], data.get("scaling", {}), impls, os.path.splitext(path)[0] + ".png",
                     str(data.get("device", "")))
    print(png or "no plot written")
    return 0 if png else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
