#!/usr/bin/env bash
# Session 59 run E: run C's build (s59c, carried): bench_sliding_window config 4 (causal) with
# every peer and the linear-scaling check.
export PYTHONPATH=$PWD
t0=$(date +%s)
exec > >(tee $OUT/runE.txt) 2>&1
source benchmarks/results/device_steps.sh
fwa_unpack .devbuild/s59c.so.xz flash_window_attn/_C.abi3.so
timeout 330 python benchmarks/bench_sliding_window.py --configs 4 --out $OUT/sliding-config4.json > $OUT/sliding-config4.log 2>&1
echo "bench rc $? $(( $(date +%s) - t0 )) s"
rm -f $OUT/*.png
grep -h -E "PASS|FAIL|pass|fail|summary|scaling|linear" $OUT/sliding-config4.log | head -40
echo "end $(( $(date +%s) - t0 )) s"
