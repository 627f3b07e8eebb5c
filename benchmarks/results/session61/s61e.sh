#!/usr/bin/env bash
# Session 61 run E (H200), DIAGNOSTIC: how much would removing the residual-D backward's
# preprocess give (an upper bound for computing D elsewhere)? FWA_DIAG_NO_PREP=1 skips it (D left
# as is: wrong gradients, timing only). Timeline (bf16) and GPU time of configs 0 and 4.
# (The switches ran in a build of main plus tools/patches/local-bwd-residual-no-preprocess-DIAGNOSTIC-TIMING-ONLY.patch; not in main.)
export PYTHONPATH=$PWD
t0=$(date +%s)
exec > >(tee $OUT/runE.txt) 2>&1
source benchmarks/results/device_steps.sh
fwa_build s61e E
T=benchmarks/results/session46/graph_timeline.py
G=benchmarks/results/session45/local_graph_ab.py
for cfg in 0 4; do
    echo "== default"; timeout 60 python $T $cfg bf16 ours 2>&1 | grep -v -i warn
    echo "== no prep"; FWA_DIAG_NO_PREP=1 timeout 60 python $T $cfg bf16 ours 2>&1 | grep -v -i warn
done
for r in 1 2; do
    timeout 60 python $G default 0 4 2>&1 | grep -v -i warn
    FWA_DIAG_NO_PREP=1 timeout 60 python $G no_prep 0 4 2>&1 | grep -v -i warn
done
echo "end $(( $(date +%s) - t0 )) s"
