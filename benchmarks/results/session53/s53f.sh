#!/usr/bin/env bash
# Session 53 run F: the warp-specialised forward at d = 64 with 3 stages of k / v (2 before), its
# consumers' stage index and fill parity counted instead of divided (gstep % 3 at d = 64 tipped
# ptxas into serialising the wgmmas, C7511, in run B's 3-stage build). Run D's sampling: the
# consumers spend ~5 % of their samples waiting for a stage's copies. Build; bitwise against main's
# build (.devbuild/s52e.so.xz); the scale-sign and wide-band tests; GPU time base / new at configs
# 0, 4, 2; the per-kernel timeline at config 0 bf16.
export PYTHONPATH=$PWD
t0=$(date +%s)
exec > >(tee $OUT/runF.txt) 2>&1
source benchmarks/results/device_steps.sh
fwa_build s53f F
fwa_bitwise_vs s52e F tools/local_bitwise.py
echo "bitwise done $(( $(date +%s) - t0 )) s"
timeout 100 python -m pytest -q -m cuda tests/test_local_attention.py -x -k "scale_sign or wide_block" 2>&1 | tail -1
echo "tests done $(( $(date +%s) - t0 )) s"
fwa_local_graph_ab 0 4 2
echo "graph done $(( $(date +%s) - t0 )) s"
fwa_local_timeline_ab 1 "median|_ws_" 0 bf16
echo "end $(( $(date +%s) - t0 )) s"
