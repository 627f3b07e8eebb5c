#!/usr/bin/env bash
# Session 45 run B (H200): main's kernels; bench_window_attention (every peer, fp16 and bf16, now with
# the GPU time of every implementation from CUDA-graph replay beside the per-call times), configs $1,
# JSON / PNG / log under $OUT as window-$2.*; builds first unless flash_window_attn/_C.abi3.so is
# already there (a warm machine keeps it).
export PYTHONPATH=$PWD
t0=$(date +%s)
source benchmarks/results/device_steps.sh
if [ ! -f flash_window_attn/_C.abi3.so ]; then fwa_build s45b B; rm -f $OUT/s45b.so.xz; fi
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv,noheader
timeout ${3:-480} python benchmarks/bench_window_attention.py --configs $1 --out $OUT/window-$2.json > $OUT/window-$2.log 2>&1
echo "bench rc $? $(( $(date +%s) - t0 )) s"
grep -v -i warn $OUT/window-$2.log | tail -42
