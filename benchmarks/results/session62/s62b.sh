#!/bin/bash
# Session 62 run B: the fused-dq prototype with the dq partials reduced by bulk copies from shared
# memory (mode 3, fp32), checked and timed against the default (0) and run A's red.add (1).
t0=$(date +%s)
source benchmarks/results/device_steps.sh
fwa_build s62b B
FUSED_MODES=0,1,3 timeout 200 python benchmarks/results/session62/fused_check.py 2>&1 | grep -v -i warn | tee "$OUT/runB-check.txt"
echo "check done $(( $(date +%s) - t0 )) s"
for r in 1 2; do for m in 0 3; do
  FWA_LOCAL_BWD_FUSED_DQ=$m timeout 150 python benchmarks/results/session45/local_graph_ab.py m$m 0 4 2>&1 | grep -v -i warn
done; done | tee "$OUT/runB-graph.txt"
echo "graph done $(( $(date +%s) - t0 )) s"
for m in 0 1 3; do
  echo "== mode $m"
  FWA_LOCAL_BWD_FUSED_DQ=$m timeout 100 python benchmarks/results/session46/graph_timeline.py 0 bf16 ours 2>&1 | grep -v -i warn
done | tee "$OUT/runB-timeline.txt"
echo "all done $(( $(date +%s) - t0 )) s"
