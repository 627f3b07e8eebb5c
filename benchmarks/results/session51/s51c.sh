#!/usr/bin/env bash
# Session 51 run C (H200): main's build (.devbuild/s50g.so.xz, carried: the same kernels since
# session 46), bench_sliding_window configs 2, 3 and 4 (the long windows and causal), every peer,
# fp16 and bf16, with the GPU times of CUDA-graph replay; no scaling sweep.
export PYTHONPATH=$PWD
t0=$(date +%s)
source benchmarks/results/device_steps.sh
fwa_unpack .devbuild/s50g.so.xz flash_window_attn/_C.abi3.so
timeout 560 python benchmarks/bench_sliding_window.py --configs 2,3,4 --no-scaling --out $OUT/sliding-configs234.json > $OUT/sliding-configs234.log 2>&1
echo "bench rc $? $(( $(date +%s) - t0 )) s"
grep -v -i warn $OUT/sliding-configs234.log | tail -40
