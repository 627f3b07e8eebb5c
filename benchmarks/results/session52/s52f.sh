#!/usr/bin/env bash
# Session 52 run F: bench_sliding_window configs 2, 3 (the d = 128 long windows) with ours and
# FlexAttention only (the dense SDPA peers take minutes at these lengths and did not change; session
# 51 measured them), on run E's build (.devbuild/s52e.so.xz = main's kernels after session 52).
export PYTHONPATH=$PWD
t0=$(date +%s)
source benchmarks/results/device_steps.sh
fwa_unpack .devbuild/s52e.so.xz flash_window_attn/_C.abi3.so
timeout 220 python benchmarks/bench_sliding_window.py --configs 2,3 --no-scaling --impls ours,flex \
  --out $OUT/sliding-configs23.json > $OUT/sliding-configs23.log 2>&1
echo "bench rc $? $(( $(date +%s) - t0 )) s"
grep -v -i warn $OUT/sliding-configs23.log | grep -E "^\[|ours |flex |PASS|FAIL|pass |fail " | head -30
