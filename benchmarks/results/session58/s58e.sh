#!/usr/bin/env bash
# Session 58 run E: run B's build (s58b): stress.py (repeatability with memory reuse between calls).
export PYTHONPATH=$PWD
t0=$(date +%s)
exec > >(tee $OUT/runE.txt) 2>&1
source benchmarks/results/device_steps.sh
fwa_unpack .devbuild/s58b.so.xz flash_window_attn/_C.abi3.so
timeout 90 python benchmarks/results/session58/stress.py 300 2>&1 | grep -v -i warn
echo "end $(( $(date +%s) - t0 )) s"
