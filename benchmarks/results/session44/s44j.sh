#!/usr/bin/env bash
# Session 44 run J: the benchmarks' new host-bound flag (host issue time per call; '^' cells), on
# main's build: sliding configs 0 and 1 (every peer), and the window benchmark at (256, 12, 64)
# (config 6) and (512, 4, 144) (config 3), ours / sdpa / flex.
export PYTHONPATH=$PWD
t0=$(date +%s)
source benchmarks/results/device_steps.sh
fwa_build s44j J
rm -f $OUT/s44j.so.xz
timeout 200 python benchmarks/bench_sliding_window.py --configs 0,1 --no-scaling --out $OUT/sliding-nvidia-h100-80gb-hbm3-session44j-configs01.json > $OUT/runJ-sliding.log 2>&1
echo "sliding rc $? $(( $(date +%s) - t0 )) s"
grep -v -i warn $OUT/runJ-sliding.log | grep -E "^(block|win)|PASS|FAIL|summary|\^"
left=$(( 580 - ($(date +%s) - t0) ))
timeout $left python benchmarks/bench_window_attention.py --configs 3,6 --impls ours,sdpa,flex --out $OUT/nvidia-h100-80gb-hbm3-session44j-configs36.json > $OUT/runJ-window.log 2>&1
echo "window rc $? $(( $(date +%s) - t0 )) s"
grep -v -i warn $OUT/runJ-window.log | tail -22
