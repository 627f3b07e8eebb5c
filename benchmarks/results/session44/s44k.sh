#!/usr/bin/env bash
# Session 44 run K: the GPU timeline of one benchmarked forward at (256, 12, 64) (config 6) and
# (4096, 3, 64) (config 0), and the block-sliding fwd+bwd (session39/timeline.py), main's build:
# how much of run J's host-bound times is kernel work.
export PYTHONPATH=$PWD
t0=$(date +%s)
source benchmarks/results/device_steps.sh
fwa_build s44k K
rm -f $OUT/s44k.so.xz
timeout 200 python benchmarks/results/session39/timeline.py main 6 0 block 2>&1 | grep -v -i warn | tee $OUT/runK-timeline.txt
echo "end $(( $(date +%s) - t0 )) s"
