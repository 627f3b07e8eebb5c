#!/bin/bash
# Session 62 run D: the fused dq with one partial per step (mode 5: the consumers' dSᵀ tiles in
# shared memory, the step's owner (round robin) takes dq over all of the item's keys and adds it by
# one fp32 bulk reduction): check, GPU time and timelines at configs 0 and 4.
t0=$(date +%s)
source benchmarks/results/device_steps.sh
fwa_build s62d D
FUSED_MODES=0,3,5 timeout 200 python benchmarks/results/session62/fused_check.py 2>&1 | grep -v -i warn | tee "$OUT/runD-check.txt"
echo "check done $(( $(date +%s) - t0 )) s"
for r in 1 2; do for m in 0 5; do
  FWA_LOCAL_BWD_FUSED_DQ=$m timeout 150 python benchmarks/results/session45/local_graph_ab.py m$m 0 4 2>&1 | grep -v -i warn
done; done | tee "$OUT/runD-graph.txt"
for cfg in 0 4; do for m in 0 5; do
  echo "== config $cfg mode $m"
  FWA_LOCAL_BWD_FUSED_DQ=$m timeout 100 python benchmarks/results/session46/graph_timeline.py $cfg bf16 ours 2>&1 | grep -v -i warn
done; done | tee "$OUT/runD-timeline.txt"
echo "all done $(( $(date +%s) - t0 )) s"
