#!/usr/bin/env bash
# Session 51 run B (H200): a temporary switch FWA_EXP_KV_CONS2=1 runs the sliding backward's
# warp-specialised key side at d = 64 with 2 consumer warpgroups (232 registers each) instead of 3
# (160): build; bitwise default / switch (tools/local_bitwise.py); GPU time (graph) at sliding
# configs 0 (block256x16) and 4 (causal), 2 rounds.
export PYTHONPATH=$PWD
t0=$(date +%s)
exec > >(tee $OUT/runB.txt) 2>&1
source benchmarks/results/device_steps.sh
fwa_build s51b B
rm -f $OUT/s51b.so.xz
timeout 120 python tools/local_bitwise.py save /tmp/lref.pt > /dev/null 2>&1
FWA_EXP_KV_CONS2=1 timeout 120 python tools/local_bitwise.py cmp /tmp/lref.pt 2>&1 | grep -v -i warn | tail -2
echo "bitwise done $(( $(date +%s) - t0 )) s"
for r in 1 2; do
  timeout 150 python benchmarks/results/session45/local_graph_ab.py cons3 0 4 2>&1 | grep -v -i warn
  FWA_EXP_KV_CONS2=1 timeout 150 python benchmarks/results/session45/local_graph_ab.py cons2 0 4 2>&1 | grep -v -i warn
done
echo "end $(( $(date +%s) - t0 )) s"
