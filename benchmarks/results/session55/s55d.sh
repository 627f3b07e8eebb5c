#!/usr/bin/env bash
# Session 55 run D: the warp-specialised key side's D-sum flush moved from the consumers (the first
# 64 threads of each, after a warpgroup barrier at every computed step) to producer warp 3, which
# polls the consumers' staged buffers (pdp_full / pdp_empty mbarriers, a head per buffer). Build;
# bitwise against main (.devbuild/s55b.so.xz: 48 of 48 expected, the same sums in the same order);
# GPU time base / new at configs 0, 4 (2 rounds); the timeline at config 0; the sliding CUDA suites.
export PYTHONPATH=$PWD
t0=$(date +%s)
exec > >(tee $OUT/runD.txt) 2>&1
source benchmarks/results/device_steps.sh
fwa_build s55d D
fwa_bitwise_vs s55b D tools/local_bitwise.py
echo "bitwise done $(( $(date +%s) - t0 )) s"
fwa_local_graph_ab 0 4
echo "graph done $(( $(date +%s) - t0 )) s"
fwa_local_timeline_ab 1 "median|_ws_" 0 bf16
echo "timeline done $(( $(date +%s) - t0 )) s"
timeout $(( 585 - ($(date +%s) - t0) )) python -m pytest -q -m cuda tests/test_local_attention.py tests/test_local_lifecycle.py \
  tests/test_local_extremes.py tests/test_local_random.py -x > $OUT/runD-tests.txt 2>&1
tail -3 $OUT/runD-tests.txt
echo "end $(( $(date +%s) - t0 )) s"
