#!/usr/bin/env bash
# Session 44 run M (H100): the GPU timeline of one benchmarked bf16 forward at (256, 12, 64)
# (config 6) and (4096, 3, 64) (config 0) (session39/timeline.py), the final build; checklist item 4.
export PYTHONPATH=$PWD
t0=$(date +%s)
source benchmarks/results/device_steps.sh
fwa_build s44m M
rm -f $OUT/s44m.so.xz
nvidia-smi --query-gpu=name --format=csv,noheader | tee $OUT/runM-gpu.txt
timeout 120 python benchmarks/results/session39/timeline.py main 6 0 2>&1 | grep -v -i warn | tee $OUT/runM-timeline.txt
echo "end $(( $(date +%s) - t0 )) s"
