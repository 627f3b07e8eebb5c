#!/usr/bin/env bash
# Session 46 run F (H200): bench_models.py's new GPU-time figures (each step captured in a CUDA graph
# and replayed), checked on swinv2_tiny_window16_256 bs 64, swapped and ceiling eager (no compile:
# the device time left this session).
export PYTHONPATH=$PWD
t0=$(date +%s)
source benchmarks/results/device_steps.sh
fwa_build s46f F
rm -f $OUT/s46f.so.xz
timeout 150 python benchmarks/bench_models.py --models swinv2_tiny_window16_256 --variants swap,ceiling --no-compile \
  --out $OUT/models-window16-eager.json > $OUT/runF-models.log 2>&1
echo "bench rc $? $(( $(date +%s) - t0 )) s"
grep -v -i warn $OUT/runF-models.log | tail -22
