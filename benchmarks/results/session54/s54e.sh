#!/usr/bin/env bash
# Session 54 run E: the query side with one more stage of k / v (run D's timelines: at d = 128, 2 ->
# 3 stages, 736 -> 719 us at win(1024,0); at d = 64, 3 -> 4, 78.3 -> 74.7 us at block256x16 but
# started later behind run D's slower 5-stage forward and key side, which are not kept). Build;
# bitwise against main's build (.devbuild/s54a.so.xz); the sliding CUDA suites; GPU time base /
# new at configs 0, 2, 3; the per-kernel timeline at config 0.
export PYTHONPATH=$PWD
t0=$(date +%s)
exec > >(tee $OUT/runE.txt) 2>&1
source benchmarks/results/device_steps.sh
fwa_build s54e E
fwa_bitwise_vs s54a E tools/local_bitwise.py
echo "bitwise done $(( $(date +%s) - t0 )) s"
timeout 260 python -m pytest -q -m cuda tests/test_local_attention.py tests/test_local_lifecycle.py \
  tests/test_local_extremes.py tests/test_local_random.py -x > $OUT/runE-tests.txt 2>&1
tail -2 $OUT/runE-tests.txt
echo "tests done $(( $(date +%s) - t0 )) s"
fwa_local_graph_ab 0 2 3
echo "graph done $(( $(date +%s) - t0 )) s"
fwa_local_timeline_ab 1 "median|_ws_" 0 bf16
echo "end $(( $(date +%s) - t0 )) s"
