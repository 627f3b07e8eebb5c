#!/usr/bin/env bash
# Session 62 run F (H200): the key side's producer warp 1 issues each step's lse / D row loads
# before its wait for the stage (build s62f) against main (s61b, carried): bitwise, GPU time at
# configs 0, 4 and 2, key-side timelines at config 0.
t0=$(date +%s)
exec > >(tee $OUT/runF.txt) 2>&1
source benchmarks/results/device_steps.sh
fwa_build s62f F
fwa_bitwise_vs s61b F tools/local_bitwise.py
echo "bitwise done $(( $(date +%s) - t0 )) s"
fwa_local_graph_ab 0 4
echo "graph done $(( $(date +%s) - t0 )) s"
fwa_local_timeline_ab 2 "first start|kv_ws|q_ws|prep" 0 bf16
fwa_local_timeline_ab 1 "first start|kv_ws|q_ws|prep" 4 bf16
echo "end $(( $(date +%s) - t0 )) s"
