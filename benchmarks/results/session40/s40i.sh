#!/usr/bin/env bash
# Session 40 run I: bench_window_attention config 3 (N = 144), every peer, fp16 and bf16, on s40g
# (this session's final window kernels), JSON / PNG / log under $OUT.
export PYTHONPATH=$PWD
python tools/device/unxz.py tools/device/s40g_so/_C.abi3.so.xz flash_window_attn/_C.abi3.so
t0=$(date +%s)
timeout 500 python benchmarks/bench_window_attention.py --configs 3 --out $OUT/window-session40-config3.json > $OUT/window-session40-config3.log 2>&1
echo "bench rc $? $(( $(date +%s) - t0 )) s"
tail -30 $OUT/window-session40-config3.log
