#!/usr/bin/env bash
# Session 29 runs M / N (s29g = main 1fa0cd5's kernels): bench_window_attention, every peer, fp16 and
# bf16, configs given as $1 (a comma list), JSON / PNG under $OUT as window-$2.*.
export PYTHONPATH=$PWD
python tools/device/unxz.py tools/device/s29g_so/_C.abi3.so.xz flash_window_attn/_C.abi3.so
timeout 580 python benchmarks/bench_window_attention.py --configs $1 --out $OUT/window-$2.json > $OUT/window-$2.log 2>&1
tail -32 $OUT/window-$2.log
