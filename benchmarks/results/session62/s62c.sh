#!/bin/bash
# Session 62 run C: the fused-dq prototype's cost without its sums (mode 4: dSᵀ stored, the dq
# product issued and waited for, nothing reduced; dq wrong, timing only) against the default (0)
# and the bulk reduction (3): per-kernel timelines at configs 0 and 4, bf16.
t0=$(date +%s)
source benchmarks/results/device_steps.sh
fwa_build s62c C
for cfg in 0 4; do for m in 0 4 3; do
  echo "== config $cfg mode $m"
  FWA_LOCAL_BWD_FUSED_DQ=$m timeout 100 python benchmarks/results/session46/graph_timeline.py $cfg bf16 ours 2>&1 | grep -v -i warn
done; done | tee "$OUT/runC-timeline.txt"
echo "all done $(( $(date +%s) - t0 )) s"
