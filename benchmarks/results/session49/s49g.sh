#!/usr/bin/env bash
# Session 49 run G (H200): a third round of run E's A/B (FWA_CPB_BATCH=1 / 0, s49e's build), window16
# and base_window12_192, eager swapped / ceiling, GPU time and the table rows (peak memory).
export PYTHONPATH=$PWD
t0=$(date +%s)
source benchmarks/results/device_steps.sh
exec > >(tee $OUT/runG.txt) 2>&1
fwa_unpack .devbuild/s49e.so.xz flash_window_attn/_C.abi3.so
M="--models swinv2_tiny_window16_256,swinv2_base_window12_192 --variants swap,ceiling --no-compile"
for s in 1 0; do
  FWA_CPB_BATCH=$s timeout 110 python benchmarks/bench_models.py $M --out /tmp/m.json > /tmp/g.log 2>&1
  echo "round 3 batch=$s"; grep -h "GPU time\|^c swapped\|^e ceiling" /tmp/g.log
done
echo "done $(( $(date +%s) - t0 )) s"
