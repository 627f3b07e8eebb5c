#!/usr/bin/env bash
# Session 61 run C (H200): build s61c, the backward preprocess's rows per CTA as an experiment switch
# (FWA_LOCAL_PREP_ROWS=16|32, 64 the default; 65: 64 rows under __launch_bounds__ min blocks 6 at
# d = 64 / 4 at d = 128, so that configs 0 and 1's grids (768 / 512 CTAs) are resident in one wave).
# Timeline (session46/graph_timeline.py, bf16) of configs 0 and 1 and GPU time (local_graph_ab)
# for each setting.
# (The switches ran in a build of main plus tools/patches/local-bwd-prep-rows-per-cta-NO-GAIN.patch; not in main.)
export PYTHONPATH=$PWD
t0=$(date +%s)
exec > >(tee $OUT/runC.txt) 2>&1
source benchmarks/results/device_steps.sh
fwa_build s61c C
T=benchmarks/results/session46/graph_timeline.py
G=benchmarks/results/session45/local_graph_ab.py
for cfg in 0 1; do for r in 64 65 32 16; do
    echo "== rows $r"
    FWA_LOCAL_PREP_ROWS=$r timeout 60 python $T $cfg bf16 ours 2>&1 | grep -v -i warn | grep -E "first start|prep|kv|_q_"
done; done
echo "timeline done $(( $(date +%s) - t0 )) s"
for rd in 1 2; do for r in 64 65 32 16; do
    FWA_LOCAL_PREP_ROWS=$r timeout 60 python $G rows$r 0 1 2>&1 | grep -v -i warn
done; done
echo "end $(( $(date +%s) - t0 )) s"
