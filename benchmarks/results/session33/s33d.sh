#!/usr/bin/env bash
# Session 33 run D: ncu of the key-side kernel at bench config 3 (N = 144) and 1 (N = 256), bf16,
# builds s32m (main) and s33c (row statistics in the key-side kernel): why s33c's kernel is slower.
set -u
export PYTHONPATH=$PWD
R=benchmarks/results/session33
which ncu || ls /opt/nvidia/nsight-compute/*/ncu
NCU=$(which ncu || ls /opt/nvidia/nsight-compute/*/ncu | head -1)
for b in s32m s33c; do
  python tools/device/unxz.py tools/device/${b}_so/_C.abi3.so.xz flash_window_attn/_C.abi3.so
  for c in 3 1; do
    timeout 200 $NCU --clock-control none --kernel-name regex:bwd_kv_kernel --launch-skip 2 --launch-count 1 \
      --section SpeedOfLight --section Occupancy --section WarpStateStats --section InstructionStats --section LaunchStats --section SchedulerStats \
      python $R/one_step.py $c > $OUT/runD-ncu-$b-c$c.txt 2>&1
    echo "$b c$c rc $?"
    grep -E "Duration|Executed Instructions |Achieved Occupancy|Theoretical Occupancy|Block Limit|Warp Cycles Per Issued|Issued Warp|Registers Per|Dynamic Shared|No Eligible" $OUT/runD-ncu-$b-c$c.txt | head -20
  done
done
