#!/bin/bash
# Session 63 run A: upper bound of a V2 forward without its norm phase (timing-only diagnostic:
# FWA_DIAG_SKIP_NORMS, inverse norms of 1, wrong outputs). Base = main's kernels.
t0=$(date +%s)
source benchmarks/results/device_steps.sh
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader | tee $OUT/runA-gpu.txt
fwa_build s63base A
cp /tmp/new.so /tmp/base.so
sed -i '0,/#pragma once/s//#pragma once\n#define FWA_DIAG_SKIP_NORMS 1/' csrc/kernels/fwd_wgmma_kernel.cuh
fwa_build s63diag A2
for r in 1 2; do for b in base new; do
  cp /tmp/$b.so flash_window_attn/_C.abi3.so
  for dt in bf16 fp16; do
    echo "== round $r $b $dt"
    timeout 120 python tools/kernel_breakdown.py --configs 1,2,3 --dtype $dt 2>&1 | grep -v -i warn
  done
done; done | tee $OUT/runA-breakdown.txt
echo "total $(( $(date +%s) - t0 )) s"
