#!/usr/bin/env bash
# Session 51 run F (H200): run D's build (.devbuild/s51d.so.xz, carried; main's code):
# bench_sliding_window configs 0 and 1 (block256x16, win(256,256)), every peer, fp16 and bf16, per
# call and GPU time; no scaling sweep.
export PYTHONPATH=$PWD
t0=$(date +%s)
source benchmarks/results/device_steps.sh
fwa_unpack .devbuild/s51d.so.xz flash_window_attn/_C.abi3.so
timeout 420 python benchmarks/bench_sliding_window.py --configs 0,1 --no-scaling --out $OUT/sliding-configs01.json > $OUT/sliding-configs01.log 2>&1
echo "bench rc $? $(( $(date +%s) - t0 )) s"
grep -v -i warn $OUT/sliding-configs01.log | tail -16
