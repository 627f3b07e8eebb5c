#!/bin/bash
# Session 62 run A: build the fused-dq prototype (FWA_LOCAL_BWD_FUSED_DQ), check it against the
# default backward and float64, then GPU time (configs 0 and 4) and block256x16's timeline per mode.
t0=$(date +%s)
source benchmarks/results/device_steps.sh
fwa_build s62a A
timeout 200 python benchmarks/results/session62/fused_check.py 2>&1 | grep -v -i warn | tee "$OUT/runA-check.txt"
echo "check done $(( $(date +%s) - t0 )) s"
for r in 1 2; do for m in 0 1 2; do
  FWA_LOCAL_BWD_FUSED_DQ=$m timeout 150 python benchmarks/results/session45/local_graph_ab.py m$m 0 4 2>&1 | grep -v -i warn
done; done | tee "$OUT/runA-graph.txt"
echo "graph done $(( $(date +%s) - t0 )) s"
for m in 0 1 2; do
  echo "== mode $m"
  FWA_LOCAL_BWD_FUSED_DQ=$m timeout 100 python benchmarks/results/session46/graph_timeline.py 0 bf16 ours 2>&1 | grep -v -i warn
done | tee "$OUT/runA-timeline.txt"
echo "all done $(( $(date +%s) - t0 )) s"
