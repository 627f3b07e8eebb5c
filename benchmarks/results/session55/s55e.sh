#!/usr/bin/env bash
# Session 55 run E (diagnostic, not kept): run D's producer-warp D-sum flush with the flushing warp
# spinning instead of sleeping 64 ns when no buffer is ready. Build; bitwise against main
# (.devbuild/s55b.so.xz); GPU time base / new at config 0 (1 round); the timeline at config 0.
export PYTHONPATH=$PWD
t0=$(date +%s)
exec > >(tee $OUT/runE.txt) 2>&1
source benchmarks/results/device_steps.sh
fwa_build s55e E
fwa_bitwise_vs s55b E tools/local_bitwise.py
for b in base new; do cp /tmp/$b.so flash_window_attn/_C.abi3.so
  timeout 60 python benchmarks/results/session45/local_graph_ab.py $b 0 2>&1 | grep -v -i warn; done
fwa_local_timeline_ab 1 "median|_ws_" 0 bf16
echo "end $(( $(date +%s) - t0 )) s"
