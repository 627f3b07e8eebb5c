#!/usr/bin/env bash
# Session 54 run D: more stages where shared memory allows (run A: 3 -> 4 stages helped the d = 64
# forward and the key side): the d = 64 warp-specialised forward with 5 (4 in main), the key side
# with 5 at d = 64 (4; d = 128 stays 4), the query side with 4 at d = 64 (3) and 3 at d = 128 (2).
# Build; bitwise against main's build (.devbuild/s54a.so.xz); GPU time base / new at configs 0, 4,
# 2; per-kernel timelines at configs 0 and 2 (bf16).
export PYTHONPATH=$PWD
t0=$(date +%s)
exec > >(tee $OUT/runD.txt) 2>&1
source benchmarks/results/device_steps.sh
fwa_build s54d D
fwa_bitwise_vs s54a D tools/local_bitwise.py
echo "bitwise done $(( $(date +%s) - t0 )) s"
fwa_local_graph_ab 0 4 2
echo "graph done $(( $(date +%s) - t0 )) s"
fwa_local_timeline_ab 1 "median|_ws_" 0 bf16
fwa_local_timeline_ab 1 "median|_ws_" 2 bf16
echo "end $(( $(date +%s) - t0 )) s"
