#!/usr/bin/env bash
# Session 34 run G: build s34e (main e8256bf's kernels): the benchmark at configs 1-4 (N = 256,
# 256, 144, 576), every peer, fp16 and bf16.
export PYTHONPATH=$PWD
python tools/device/unxz.py tools/device/s34e_so/_C.abi3.so.xz flash_window_attn/_C.abi3.so
timeout 560 python benchmarks/bench_window_attention.py --configs 1,2,3,4 --out $OUT/runG-bench.json > $OUT/runG-bench.log 2>&1
echo "rc $?"
tail -22 $OUT/runG-bench.log
