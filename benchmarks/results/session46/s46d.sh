#!/usr/bin/env bash
# Session 46 run D (H200): run C's kernels (main); bench_sliding_window configs 0 and 1 (block256x16 and
# win(256, 256), every peer, fp16 and bf16, with the GPU times of CUDA-graph replay), no scaling
# sweep; builds first unless flash_window_attn/_C.abi3.so is already there (a warm machine keeps it).
export PYTHONPATH=$PWD
t0=$(date +%s)
source benchmarks/results/device_steps.sh
if [ ! -f flash_window_attn/_C.abi3.so ]; then fwa_build s46d D; rm -f $OUT/s46d.so.xz; fi
timeout 400 python benchmarks/bench_sliding_window.py --configs 0,1 --no-scaling --out $OUT/sliding-configs01.json > $OUT/sliding-configs01.log 2>&1
echo "bench rc $? $(( $(date +%s) - t0 )) s"
grep -v -i warn $OUT/sliding-configs01.log | tail -30
