#!/usr/bin/env bash
# Session 61 run F (H200): main's build (s61b, carried; later commits change no code): the sliding
# benchmark's configs 0 and 1 (block256x16, win(256,256)), for one more reading of block256x16 at
# the 3x SDPA-dense line.
export PYTHONPATH=$PWD
t0=$(date +%s)
exec > >(tee $OUT/runF.txt) 2>&1
source benchmarks/results/device_steps.sh
fwa_unpack .devbuild/s61b.so.xz flash_window_attn/_C.abi3.so
timeout 200 python benchmarks/bench_sliding_window.py --configs 0,1 --no-scaling --out $OUT/sliding-configs01.json > $OUT/sliding-configs01.log 2>&1
echo "bench rc $? $(( $(date +%s) - t0 )) s"
grep -h -E "PASS|FAIL|pass|fail|summary" $OUT/sliding-configs01.log | head -40
echo "end $(( $(date +%s) - t0 )) s"
