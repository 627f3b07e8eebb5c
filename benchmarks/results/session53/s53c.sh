#!/usr/bin/env bash
# Session 53 run C: run A's consumer turns (WsTurns) in the warp-specialised key side only (run A's
# timeline: key side 124.9 -> 122.9 us, forward and query side slower). Build; bitwise against
# main's build (.devbuild/s52e.so.xz); GPU time base / new at configs 0, 4, 2 (the forward is
# unchanged: the fwd+bwd difference is the backward's); the per-kernel timeline at config 0 bf16,
# twice each; the sliding CUDA suites (op, lifecycle, extremes, random problems).
export PYTHONPATH=$PWD
t0=$(date +%s)
exec > >(tee $OUT/runC.txt) 2>&1
source benchmarks/results/device_steps.sh
fwa_build s53c C
fwa_bitwise_vs s52e C tools/local_bitwise.py
echo "bitwise done $(( $(date +%s) - t0 )) s"
fwa_local_graph_ab 0 4 2
echo "graph done $(( $(date +%s) - t0 )) s"
fwa_local_timeline_ab 2 "median|kv_ws|q_ws" 0 bf16
echo "timeline done $(( $(date +%s) - t0 )) s"
timeout 320 python -m pytest -q -m cuda tests/test_local_attention.py tests/test_local_lifecycle.py \
  tests/test_local_extremes.py tests/test_local_random.py -x > $OUT/runC-tests.txt 2>&1
tail -3 $OUT/runC-tests.txt
echo "end $(( $(date +%s) - t0 )) s"
