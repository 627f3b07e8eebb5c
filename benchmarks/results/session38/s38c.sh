#!/usr/bin/env bash
# Session 38 runs C / D (main's kernels, this session's final build s38a, carried): bench_window_attention,
# every peer, fp16 and bf16, configs $1 (comma list), JSON / PNG / log under $OUT as window-$2.*.
export PYTHONPATH=$PWD
python tools/device/unxz.py tools/device/s38a_so/_C.abi3.so.xz flash_window_attn/_C.abi3.so
t0=$(date +%s)
timeout 560 python benchmarks/bench_window_attention.py --configs $1 --out $OUT/window-$2.json > $OUT/window-$2.log 2>&1
echo "bench rc $? $(( $(date +%s) - t0 )) s"
tail -28 $OUT/window-$2.log
